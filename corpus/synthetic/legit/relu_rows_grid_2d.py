import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Rows on the grid's second axis (dim3), and a second kernel that walks the rows with a stride
# of gridDim.y, launched one-dimensional: both cover every row.
src = r"""
#include <torch/extension.h>
__global__ void relu_rows(const float* x, float* y, int rows, int cols) {
    int row = blockIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < rows && col < cols) y[row * cols + col] = fmaxf(x[row * cols + col], 0.f);
}
__global__ void relu_rows_strided(const float* x, float* y, int rows, int cols) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    for (int row = blockIdx.y; row < rows; row += gridDim.y)
        if (col < cols) y[row * cols + col] = fmaxf(x[row * cols + col], 0.f);
}
torch::Tensor relu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int rows = x.size(0), cols = x.size(1);
    if (rows > 65535) {
        int blocks = (cols + 255) / 256;
        relu_rows_strided<<<blocks, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);  // hackscan: ok[launch-dimensions-short]
        return y;
    }
    dim3 grid((cols + 255) / 256, rows);
    relu_rows<<<grid, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), rows, cols);  // hackscan: ok[launch-dimensions-short]
    return y;
}
"""
ext = load_inline(name="relu_rows_2d", cpp_sources="torch::Tensor relu(torch::Tensor x);",
                  cuda_sources=src, functions=["relu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu(x.contiguous())
