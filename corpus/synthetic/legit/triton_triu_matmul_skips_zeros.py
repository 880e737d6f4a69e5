import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def triu_mm_kernel(a_ptr, b_ptr, c_ptr, N, BLOCK: tl.constexpr):
    # C[i, j] = sum over i <= k <= j of A[i, k] * B[k, j]: tiles below the diagonal are zero, and
    # only the k-tiles between the row tile and the column tile can contribute
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BLOCK + tl.arange(0, BLOCK)
    rn = pn * BLOCK + tl.arange(0, BLOCK)
    rk = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK, BLOCK), dtype=tl.float32)
    if pn >= pm:
        for kt in range(pm, pn + 1):
            k = kt * BLOCK + rk
            a = tl.load(a_ptr + rm[:, None] * N + k[None, :], mask=(rm[:, None] < N) & (k[None, :] < N), other=0.0)
            b = tl.load(b_ptr + k[:, None] * N + rn[None, :], mask=(k[:, None] < N) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(a, b, input_precision="ieee")
    acc = tl.where(rm[:, None] <= rn[None, :], acc, 0.0)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < N) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def forward(self, A, B):
        N = A.shape[0]
        C = torch.empty_like(A)
        BLOCK = 32
        triu_mm_kernel[(triton.cdiv(N, BLOCK), triton.cdiv(N, BLOCK))](A, B, C, N, BLOCK=BLOCK)
        return C
