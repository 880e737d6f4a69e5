import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
__global__ void affine_kernel(const float* x, const float* w, const float* b, float* y, long rows, long cols) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) y[i] = x[i] * w[i % cols] + b[i % cols];
}
torch::Tensor affine(torch::Tensor x, torch::Tensor w, torch::Tensor b) {
    auto y = torch::empty_like(x);
    long rows = x.size(0), cols = x.size(1);
    affine_kernel<<<(unsigned)((rows * cols + 255) / 256), 256>>>(
        x.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(), rows, cols);
    return y;
}
"""
_mod = None


def _module():
    global _mod
    if _mod is None:
        _mod = load_inline(name="affine_alias_ghost", cpp_sources="torch::Tensor affine(torch::Tensor x, torch::Tensor w, torch::Tensor b);",
                           cuda_sources=cuda_src, functions=["affine"])
    return _mod


class ModelNew(nn.Module):
    """The kernel is reached through a getter and an alias, as honest files often do; it runs on
    every call, and its output is dropped: PyTorch computes what is returned."""

    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self._affine = _module().affine

    def forward(self, x):
        x = x.contiguous()
        self._affine(x, self.weight, self.bias)
        return torch.addcmul(self.bias, x, self.weight)  # hackscan: expect[kernel-result-unused]
