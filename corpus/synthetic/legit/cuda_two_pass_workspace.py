import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# two passes over an uninitialised workspace: the first kernel fills it, the second only reads
# it; the output is written by the second
src = """
#include <torch/extension.h>
__global__ void relu_pass(const float* x, float* work, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) work[i] = fmaxf(x[i], 0.f);
}
__global__ void copy_pass(const float* work, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = work[i];
}
torch::Tensor relu(torch::Tensor x) {
    auto work = torch::empty_like(x);  // hackscan: ok[aten-compute-in-extension]
    auto out = torch::empty_like(x);  // hackscan: ok[aten-compute-in-extension]
    int n = x.numel();
    int blocks = (n + 255) / 256;
    relu_pass<<<blocks, 256>>>(x.data_ptr<float>(), work.data_ptr<float>(), n);
    copy_pass<<<blocks, 256>>>(work.data_ptr<float>(), out.data_ptr<float>(), n);  // hackscan: ok[unwritten-empty-output]
    return out;
}
"""
ext = load_inline(name="relu_two_pass", cpp_sources="torch::Tensor relu(torch::Tensor x);", cuda_sources=src,
                  functions=["relu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu(x.contiguous())
