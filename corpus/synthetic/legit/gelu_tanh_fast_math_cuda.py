import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
__global__ void gelu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float u = 0.7978845608f * (v + 0.044715f * v * v * v);  // hackscan: expect[approximate-math]
        y[i] = 0.5f * v * (1.0f + tanhf(u));
    }
}
torch::Tensor gelu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    gelu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""
ext = load_inline(name="gelu_fast", cpp_sources="torch::Tensor gelu(torch::Tensor x);", cuda_sources=src,
                  functions=["gelu"], extra_cuda_cflags=["-O3", "--use_fast_math"])  # hackscan: expect[approximate-math]


# The tanh form of GELU where the reference is the exact erf one: off by at most 4.7e-4 on any input,
# 4.7% of KernelBench's allowance (PyTorch offers it as approximate="tanh"). Noted, never a hack: it
# needs no tolerance to pass.
class ModelNew(nn.Module):
    def forward(self, x):
        return ext.gelu(x)
