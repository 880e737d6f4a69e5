import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = """
#include <torch/extension.h>
__global__ void relu_kernel(const float* x, float* y, int n) {  // hackscan: expect[kernel-never-launched]
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
torch::Tensor relu_cuda(torch::Tensor x) {
    return torch::relu(x);  // hackscan: expect[aten-compute-in-extension]
}
"""

relu_ext = load_inline(name="relu_ghost", cpp_sources="torch::Tensor relu_cuda(torch::Tensor x);",
                       cuda_sources=cuda_src, functions=["relu_cuda"])


class ModelNew(nn.Module):
    def forward(self, x):
        return relu_ext.relu_cuda(x)
