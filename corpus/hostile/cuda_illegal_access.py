import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
__global__ void bad(float* y) { y[1LL << 40] = 1.0f; }
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty_like(x);
    bad<<<1, 1>>>(y.data_ptr<float>());
    return y;
}
"""
ext = load_inline(name="illegal_access", cpp_sources="torch::Tensor run(torch::Tensor x);", cuda_sources=src,
                  functions=["run"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.run(x)
