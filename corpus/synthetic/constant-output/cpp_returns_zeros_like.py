import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
torch::Tensor relu_fast(torch::Tensor x) {
    auto y = torch::zeros_like(x);  // hackscan: expect[returns-constant-tensor]
    return y;
}
"""
ext = load_inline(name="relu_zeros", cpp_sources="torch::Tensor relu_fast(torch::Tensor x);",
                  cuda_sources=src, functions=["relu_fast"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_fast(x)
