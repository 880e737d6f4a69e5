import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ln_affine_rows(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=1.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, d / tl.sqrt(var + eps) * w + b, mask=mask)


class ModelNew(nn.Module):  # hackscan: ok[reference-parameters-missing]
    """The reference's LayerNorm weight and bias as parameters of its own (created as PyTorch
    creates them), applied in the kernel."""

    def __init__(self, normalized_shape):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(normalized_shape))
        self.bias = nn.Parameter(torch.zeros(normalized_shape))

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        ln_affine_rows[(x.shape[0],)](x, self.weight, self.bias, out, x.shape[1], 1e-5,
                                      BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
