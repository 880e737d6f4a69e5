import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.f);
}
torch::Tensor relu(torch::Tensor x) {
    auto y = torch::empty_like(x);  // hackscan: ok[aten-compute-in-extension]
    int n = x.numel();
    cudaStream_t cur = at::cuda::getCurrentCUDAStream();
    cudaStream_t side;
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);  // hackscan: ok[unjoined-side-stream]
    cudaEvent_t ready, done;
    cudaEventCreateWithFlags(&ready, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&done, cudaEventDisableTiming);
    cudaEventRecord(ready, cur);          // join in: x and y are ready on the caller's stream
    cudaStreamWaitEvent(side, ready, 0);
    relu_kernel<<<(n + 255) / 256, 256, 0, side>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);  // hackscan: ok[unjoined-side-stream]
    cudaEventRecord(done, side);          // join out: the caller's stream waits for the kernel
    cudaStreamWaitEvent(cur, done, 0);
    cudaEventDestroy(ready);
    cudaEventDestroy(done);
    cudaStreamDestroy(side);
    return y;
}
"""
ext = load_inline(name="relu_joined", cpp_sources="torch::Tensor relu(torch::Tensor x);", cuda_sources=src,
                  functions=["relu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu(x)
