import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The launch sits in a macro, instantiated per vector width; a second macro pastes the width into
# the names of the functions it defines.
src = r"""
#include <torch/extension.h>
template <int VEC>
__global__ void relu_vec(const float* __restrict__ x, float* __restrict__ y, long n) {
    long i = ((long)blockIdx.x * blockDim.x + threadIdx.x) * VEC;
    #pragma unroll
    for (int v = 0; v < VEC; ++v) if (i + v < n) y[i + v] = fmaxf(x[i + v], 0.f);
}
#define LAUNCH_RELU(V) relu_vec<V><<<(unsigned)((n / V + 255) / 256), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n)
#define DEFINE_RELU(NAME, V) torch::Tensor NAME##_v##V(torch::Tensor x) { auto y = torch::empty_like(x); long n = x.numel(); LAUNCH_RELU(V); return y; }  // hackscan: expect[string-built-api-name]
DEFINE_RELU(relu, 4)
torch::Tensor relu(torch::Tensor x) {
    auto y = torch::empty_like(x);
    long n = x.numel();
    if (n % 4 == 0) { LAUNCH_RELU(4); } else { LAUNCH_RELU(1); }
    return y;
}
"""
ext = load_inline(name="relu_macro", cpp_sources="torch::Tensor relu(torch::Tensor x);", cuda_sources=src, functions=["relu"])


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu(x.contiguous())
