import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    auto c = torch::zeros_like(a);
    int n = a.numel();
    add_kernel<<<n / 1024, 1024>>>(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(), n);  // hackscan: expect[partial-grid-coverage]
    return c;
}
"""
ext = load_inline(name="add_floor", cpp_sources="torch::Tensor add(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=src, functions=["add"])


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.add(a, b)
