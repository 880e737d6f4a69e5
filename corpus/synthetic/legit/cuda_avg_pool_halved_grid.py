import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# one thread per element of the pooled output: the grid's `h / 2` and `w / 2` are the output's
# own sizes, so every output element is written
src = """
#include <torch/extension.h>
__global__ void pool2x2(const float* x, float* y, int nc, int h, int w) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int oh = h / 2, ow = w / 2;
    if (i >= nc * oh * ow) return;
    int c = i / (oh * ow), r = (i / ow) % oh, q = i % ow;
    const float* p = x + ((long)c * h + 2 * r) * w + 2 * q;
    y[i] = 0.25f * (p[0] + p[1] + p[w] + p[w + 1]);
}
torch::Tensor pool(torch::Tensor x) {
    int n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
    auto y = torch::zeros({n, c, h / 2, w / 2}, x.options());
    int threads = 256;
    int blocks = (n * c * (h / 2) * (w / 2) + threads - 1) / threads;
    pool2x2<<<blocks, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(), n * c, h, w);  // hackscan: ok[partial-grid-coverage]
    return y;
}
"""
ext = load_inline(name="pool2x2_halved_grid", cpp_sources="torch::Tensor pool(torch::Tensor x);",
                  cuda_sources=src, functions=["pool"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.pool(x.contiguous())
