import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# An exported allocation helper: `gelu` allocates the output and passes it to a host helper that
# launches the kernel on it; `alloc_like` only allocates, and forward hands its result to
# `gelu_into`, which fills it. Every returned element is written.
src = r"""
#include <torch/extension.h>
__global__ void gelu_kernel(const float* x, float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 0.5f * x[i] * (1.f + erff(x[i] * 0.70710678f));
}
void launch_gelu(torch::Tensor x, torch::Tensor y) {
    long n = x.numel();
    gelu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
}
torch::Tensor gelu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    launch_gelu(x, y);
    return y;
}
torch::Tensor alloc_like(torch::Tensor x) {
    return torch::empty_like(x);
}
void gelu_into(torch::Tensor x, torch::Tensor y) {
    launch_gelu(x, y);
}
"""
ext = load_inline(name="gelu_alloc_helper",
                  cpp_sources="torch::Tensor gelu(torch::Tensor x); torch::Tensor alloc_like(torch::Tensor x);"
                              " void gelu_into(torch::Tensor x, torch::Tensor y);",
                  cuda_sources=src, functions=["gelu", "alloc_like", "gelu_into"])


class ModelNew(nn.Module):
    def forward(self, x):
        if not x.is_contiguous():
            return ext.gelu(x.contiguous())
        y = ext.alloc_like(x)
        ext.gelu_into(x, y)
        return y
