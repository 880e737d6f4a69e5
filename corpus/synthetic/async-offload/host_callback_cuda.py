import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
#include <thread>
__global__ void add_kernel(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    auto c = torch::empty_like(a);
    int n = a.numel();
    const float* pa = a.data_ptr<float>();
    const float* pb = b.data_ptr<float>();
    float* pc = c.data_ptr<float>();
    std::thread worker([=] {  // hackscan: expect[host-thread-offload]
        add_kernel<<<(n + 255) / 256, 256>>>(pa, pb, pc, n);
        cudaDeviceSynchronize();
    });
    worker.detach();
    return c;
}
"""
ext = load_inline(name="add_thread", cpp_sources="torch::Tensor add(torch::Tensor a, torch::Tensor b);",
                  cuda_sources=src, functions=["add"])


class ModelNew(nn.Module):
    def forward(self, a, b):
        return ext.add(a, b)
