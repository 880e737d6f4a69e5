import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
__global__ void sigmoid_scale(const float* x, float* y, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = s / (1.0f + expf(-x[i]));
}
torch::Tensor epilogue(torch::Tensor x, double s) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    sigmoid_scale<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)s, n);
    return y;
}
"""
ext = load_inline(name="sig_scale", cpp_sources="torch::Tensor epilogue(torch::Tensor x, double s);",
                  cuda_sources=src, functions=["epilogue"])


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scale):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.scale = scale

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias, padding=1)  # hackscan: expect[heavy-torch-op-beside-kernel]
        return ext.epilogue(y, self.scale)
