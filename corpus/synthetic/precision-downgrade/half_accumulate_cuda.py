import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
#include <cuda_fp16.h>
__global__ void row_sum_half(const float* x, float* out, int cols) {
    int row = blockIdx.x;
    __half acc = __float2half(0.f);  // hackscan: expect[reduced-precision-compute]
    for (int j = 0; j < cols; ++j) acc = __hadd(acc, __float2half(x[row * cols + j]));
    out[row] = __half2float(acc);
}
torch::Tensor rsum(torch::Tensor x) {
    auto out = torch::empty({x.size(0)}, x.options());
    row_sum_half<<<x.size(0), 1>>>(x.data_ptr<float>(), out.data_ptr<float>(), x.size(1));
    return out;
}
"""
ext = load_inline(name="rsum_half_acc", cpp_sources="torch::Tensor rsum(torch::Tensor x);",
                  cuda_sources=src, functions=["rsum"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.rsum(x)
