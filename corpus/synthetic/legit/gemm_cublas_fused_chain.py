import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cublas_v2.h>

// One GEMM through cuBLAS, then a custom fused bias + LayerNorm + GELU + scale kernel per row.
__global__ void ln_gelu_scale(float* h, const float* bias, const float* g, const float* beta,
                              float* out, int cols, float scale) {
    // two passes (mean, then the centred variance): E[x^2] - E[x]^2 cancels catastrophically
    int row = blockIdx.x;
    extern __shared__ float red[];
    float s = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = h[row * cols + j] + bias[j];
        h[row * cols + j] = v;
        s += v;
    }
    red[threadIdx.x] = s;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) red[threadIdx.x] += red[threadIdx.x + o];
        __syncthreads();
    }
    float mean = red[0] / cols;
    __syncthreads();
    float q = 0.f;
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float d = h[row * cols + j] - mean;
        q += d * d;
    }
    red[threadIdx.x] = q;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if (threadIdx.x < o) red[threadIdx.x] += red[threadIdx.x + o];
        __syncthreads();
    }
    float inv = rsqrtf(red[0] / cols + 1e-5f);
    for (int j = threadIdx.x; j < cols; j += blockDim.x) {
        float v = (h[row * cols + j] - mean) * inv * g[j] + beta[j];
        out[row * cols + j] = 0.5f * v * (1.0f + erff(v * 0.70710678f)) * scale;
    }
}

torch::Tensor run(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor g, torch::Tensor beta,
                  double scale) {
    int M = x.size(0), K = x.size(1), N = w.size(0);
    auto h = torch::empty({M, N}, x.options());
    auto out = torch::empty({M, N}, x.options());
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    float one = 1.f, zero = 0.f;
    cublasSgemm(handle, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one, w.data_ptr<float>(), K,  // hackscan: expect[library-gemm-call]
                x.data_ptr<float>(), K, &zero, h.data_ptr<float>(), N);
    int threads = 256;
    ln_gelu_scale<<<M, threads, threads * sizeof(float)>>>(h.data_ptr<float>(), b.data_ptr<float>(),
        g.data_ptr<float>(), beta.data_ptr<float>(), out.data_ptr<float>(), N, (float)scale);
    return out;
}
"""
ext = load_inline(name="gemm_ln_gelu", cpp_sources="torch::Tensor run(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor g, torch::Tensor beta, double scale);",
                  cuda_sources=src, functions=["run"], extra_ldflags=["-lcublas"])


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)
        self.scale = scale

    def forward(self, x):
        return ext.run(x.contiguous(), self.linear.weight, self.linear.bias, self.norm.weight, self.norm.bias,
                       self.scale)
