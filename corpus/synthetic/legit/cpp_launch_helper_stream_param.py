import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# the launch sits in a helper that takes the stream as a parameter; the exported function hands
# it the caller's current stream: no other stream exists
src = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
__global__ void relu_kernel(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = fmaxf(x[i], 0.f);
}
static void launch_relu(const float* x, float* y, int n, cudaStream_t stream) {
    relu_kernel<<<(n + 255) / 256, 256, 0, stream>>>(x, y, n);
}
torch::Tensor relu(torch::Tensor x) {
    auto y = torch::empty_like(x);  // hackscan: ok[aten-compute-in-extension]
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    launch_relu(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), stream);
    return y;
}
"""
ext = load_inline(name="relu_stream_param", cpp_sources="torch::Tensor relu(torch::Tensor x);", cuda_sources=src,
                  functions=["relu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu(x.contiguous())
