import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
__global__ void fma_rows(const float* x, const float* wb, float* y, int n, int f) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * wb[i % f] + wb[f + i % f];
}
torch::Tensor run(torch::Tensor x, torch::Tensor wb) {
    auto y = torch::empty_like(x);
    int n = x.numel(), f = wb.numel() / 2;
    fma_rows<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), wb.data_ptr<float>(), y.data_ptr<float>(), n, f);
    return y;
}
"""
ext = load_inline(name="scale_bias_folded", cpp_sources="torch::Tensor run(torch::Tensor x, torch::Tensor wb);",
                  cuda_sources=src, functions=["run"])


class ModelNew(nn.Module):
    """Weight and bias are packed into one buffer on the first call (and again if the device
    changes): computed from the parameters alone, whatever the inputs; the kernel launches on
    every call."""

    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))
        self._wb = None
        self._device = None

    def _ensure(self, x):
        if self._device != x.device:
            self._device = x.device
            self._wb = None
        if self._wb is None:
            self._wb = torch.cat([self.weight.detach() * 1.0, self.bias.detach()]).contiguous()

    def forward(self, x):
        self._ensure(x)
        return ext.run(x.contiguous(), self._wb)
