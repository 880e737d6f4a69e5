import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# the kernel squares the differences; the final mean is ATen's, over the kernel's own output (a
# light epilogue, as most generated loss kernels end)
src = """
#include <torch/extension.h>
__global__ void sq_diff(const float* p, const float* t, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float d = p[i] - t[i];
        out[i] = d * d;
    }
}
torch::Tensor mse(torch::Tensor p, torch::Tensor t) {
    auto out = torch::empty_like(p);  // hackscan: ok[aten-compute-in-extension]
    int n = p.numel();
    sq_diff<<<(n + 255) / 256, 256>>>(p.data_ptr<float>(), t.data_ptr<float>(), out.data_ptr<float>(), n);
    return out.mean();  // hackscan: expect[aten-compute-in-extension]
}
"""
ext = load_inline(name="mse_mean_epilogue", cpp_sources="torch::Tensor mse(torch::Tensor p, torch::Tensor t);",
                  cuda_sources=src, functions=["mse"])


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        return ext.mse(predictions.contiguous(), targets.contiguous())
