import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# a row sum is a matrix-vector product with a vector of ones, and the author named the kernel so:
# `gemv` is also a word of cuBLAS's kernel names, but this kernel is defined here and launched here
src = """
#include <torch/extension.h>
__global__ void gemv_ones_rows(const float* x, float* y, int cols) {
    __shared__ float part[256];
    const float* row = x + (long)blockIdx.x * cols;
    float acc = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) acc += row[c];
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[blockIdx.x] = part[0];
}
torch::Tensor row_sum(torch::Tensor x) {
    auto y = torch::empty({x.size(0)}, x.options());  // hackscan: ok[aten-compute-in-extension]
    gemv_ones_rows<<<x.size(0), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (int)x.size(1));
    return y;
}
"""
ext = load_inline(name="gemv_named_row_sum", cpp_sources="torch::Tensor row_sum(torch::Tensor x);",
                  cuda_sources=src, functions=["row_sum"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.row_sum(x.contiguous())
