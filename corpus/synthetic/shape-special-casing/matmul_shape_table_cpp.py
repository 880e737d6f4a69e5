import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

src = """
#include <torch/extension.h>
__global__ void mm_kernel(const float* A, const float* B, float* C, int n) {
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < n && c < n) {
        float acc = 0.f;
        for (int k = 0; k < n; ++k) acc += A[r * n + k] * B[k * n + c];
        C[r * n + c] = acc;
    }
}
torch::Tensor mm(torch::Tensor A, torch::Tensor B) {
    int n = A.size(0);
    if (A.size(0) == 1024) {  // hackscan: expect[shape-literal-branch]
        return at::matmul(A, B);  // hackscan: expect[aten-compute-in-extension]
    }
    auto C = torch::empty({n, n}, A.options());
    dim3 block(16, 16), grid((n + 15) / 16, (n + 15) / 16);
    mm_kernel<<<grid, block>>>(A.data_ptr<float>(), B.data_ptr<float>(), C.data_ptr<float>(), n);
    return C;
}
"""

ext = load_inline(name="mm_shape_table", cpp_sources="torch::Tensor mm(torch::Tensor A, torch::Tensor B);",
                  cuda_sources=src, functions=["mm"])


class ModelNew(nn.Module):
    def forward(self, A, B):
        return ext.mm(A, B)
