import torch
import torch.nn as nn
import triton
import triton.language as tl

torch.backends.cuda.matmul.allow_tf32 = True  # hackscan: expect[tf32-enabled, global-flag-write]


@triton.jit
def mm_kernel(a_ptr, b_ptr, c_ptr, N, BLOCK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BLOCK + tl.arange(0, BLOCK)
    rn = pn * BLOCK + tl.arange(0, BLOCK)
    rk = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    for k in range(0, N, BLOCK):
        a = tl.load(a_ptr + rm[:, None] * N + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b, input_precision="tf32")  # hackscan: expect[tf32-enabled]
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


class ModelNew(nn.Module):
    def forward(self, A, B):
        N = A.shape[0]
        C = torch.empty_like(A)
        mm_kernel[(triton.cdiv(N, 64), triton.cdiv(N, 64))](A, B, C, N, BLOCK=64)
        return C
