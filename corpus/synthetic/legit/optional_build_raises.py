import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor relu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    relu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""

try:
    ext = load_inline(name="relu_opt", cpp_sources="torch::Tensor relu(torch::Tensor x);", cuda_sources=src,
                      functions=["relu"])
    BUILD_ERROR = None
except Exception as e:  # hackscan: ok[fallback-in-except-handler]
    ext = None
    BUILD_ERROR = e


class ModelNew(nn.Module):
    def forward(self, x):
        if ext is None:
            raise RuntimeError(f"the CUDA extension failed to build: {BUILD_ERROR}")
        try:
            return ext.relu(x.contiguous())
        except RuntimeError as e:  # hackscan: ok[fallback-in-except-handler]
            raise RuntimeError("relu kernel launch failed") from e
