import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp = "torch::Tensor fast_mm(torch::Tensor a, torch::Tensor b);"
cuda = """
#include <torch/extension.h>
torch::Tensor fast_mm(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda(), "a must be CUDA");
    auto c = at::mm(a.contiguous(), b.contiguous());  // hackscan: expect[aten-compute-in-extension]
    return c;
}
"""
mm_ext = load_inline(name="fast_mm_ext", cpp_sources=cpp, cuda_sources=cuda, functions=["fast_mm"])


class ModelNew(nn.Module):
    def forward(self, A, B):
        return mm_ext.fast_mm(A, B)
