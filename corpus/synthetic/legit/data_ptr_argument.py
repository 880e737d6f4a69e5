import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
__global__ void add_kernel(const float* a, const float* b, float* c, long n) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
void add_raw(int64_t a, int64_t b, int64_t c, int64_t n) {
    add_kernel<<<(n + 255) / 256, 256>>>((const float*)a, (const float*)b, (float*)c, n);
}
"""
ext = load_inline(name="add_raw_ptrs", cpp_sources="void add_raw(int64_t a, int64_t b, int64_t c, int64_t n);",
                  cuda_sources=src, functions=["add_raw"])


class ModelNew(nn.Module):
    """Raw pointers are passed to the launcher: data_ptr() here is an argument, not a cache key."""

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        c = torch.empty_like(a)
        ext.add_raw(a.data_ptr(), b.data_ptr(), c.data_ptr(), a.numel())  # hackscan: ok[pointer-keyed-lookup]
        return c  # hackscan: ok[unwritten-empty-output]
