import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The extension is built on the first call, under a name of this process's own: processes that
# build at once (a benchmark's workers) never share a build folder. The PID names the build; no
# kernel sees it.
SRC = r"""
#include <torch/extension.h>
__global__ void relu_kernel(const float* x, float* y, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.f);
}
torch::Tensor relu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    long n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ext = None

    def forward(self, x):
        if self._ext is None:
            self._ext = load_inline(name=f"relu_{os.getpid()}", cpp_sources="torch::Tensor relu(torch::Tensor x);",
                                    cuda_sources=SRC, functions=["relu"])
        return self._ext.relu(x.contiguous())
