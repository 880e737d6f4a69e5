import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bias_relu_kernel(y_ptr, b_ptr, out_ptr, n_cols, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    y = tl.load(y_ptr + offs, mask=mask)
    b = tl.load(b_ptr + offs % n_cols, mask=mask)
    tl.store(out_ptr + offs, tl.maximum(y + b, 0.0), mask=mask)


class ModelNew(nn.Module):
    """'Fused' linear+ReLU: the GEMM is cuBLAS via torch, only bias+ReLU is custom."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = torch.matmul(x, self.linear.weight.t())  # hackscan: expect[heavy-torch-op-beside-kernel]
        out = torch.empty_like(y)
        n = y.numel()
        bias_relu_kernel[(triton.cdiv(n, 1024),)](y, self.linear.bias, out, y.shape[1], n, BLOCK=1024)
        return out
