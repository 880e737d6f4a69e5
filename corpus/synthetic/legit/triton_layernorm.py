import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_kernel(x_ptr, w_ptr, b_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=m, other=0.0)
    mean = tl.sum(x, axis=0) / cols
    xc = tl.where(m, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / cols
    inv = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    tl.store(y_ptr + row * cols + offs, xc * inv * w + b, mask=m)


class ModelNew(nn.Module):
    def __init__(self, normalized_shape):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape)  # hackscan: ok[parameter-never-read]

    def forward(self, x):
        rows, cols = x.shape
        y = torch.empty_like(x)
        ln_kernel[(rows,)](x, self.ln.weight, self.ln.bias, y, cols, self.ln.eps, BLOCK=triton.next_power_of_2(cols))
        return y
