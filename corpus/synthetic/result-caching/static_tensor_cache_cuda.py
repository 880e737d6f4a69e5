import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.f);
}
torch::Tensor relu(torch::Tensor x) {
    static torch::Tensor cached;  // hackscan: expect[static-cache-in-extension]
    static const void* last_ptr = nullptr;  // hackscan: expect[static-cache-in-extension]
    if (x.data_ptr() == last_ptr && cached.defined()) {  // hackscan: expect[pointer-keyed-lookup]
        return cached;
    }
    auto y = torch::empty_like(x);
    int n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    cached = y;
    last_ptr = x.data_ptr();
    return y;
}
"""
ext = load_inline(name="relu_static_cache", cpp_sources="torch::Tensor relu(torch::Tensor x);",
                  cuda_sources=src, functions=["relu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu(x)
