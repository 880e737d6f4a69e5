import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
#define NS(a, b) a##b  // hackscan: expect[string-built-api-name]
#define MM NS(at::m, m)
__global__ void noop_kernel(float* y) { }
torch::Tensor mm(torch::Tensor a, torch::Tensor b) {
    auto y = MM(a, b);
    noop_kernel<<<1, 1>>>(y.data_ptr<float>());
    return y;
}
"""
ext = load_inline(name="mm_pasted", cpp_sources="torch::Tensor mm(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=src, functions=["mm"])


class ModelNew(nn.Module):
    def forward(self, A, B):
        return ext.mm(A, B)
