import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_moments(x_ptr, mean_ptr, m2_ptr, hw, BLOCK: tl.constexpr):
    # one (sample, channel) row: its mean and its sum of squared deviations from that mean
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < hw
    x = tl.load(x_ptr + row * hw + offs, mask=m, other=0.0)
    mean = tl.sum(x, axis=0) / hw
    d = tl.where(m, x - mean, 0.0)
    tl.store(mean_ptr + row, mean)
    tl.store(m2_ptr + row, tl.sum(d * d, axis=0))


@triton.jit
def channel_moments(mean_ptr, m2_ptr, cmean_ptr, cvar_ptr, rmean_ptr, rvar_ptr, batch, channels, hw, momentum,
                    unbias, BLOCK_N: tl.constexpr):
    # the rows of one channel combined (equal counts: Chan's parallel formula), and the running
    # statistics updated in place as nn.BatchNorm2d updates them in training mode
    c = tl.program_id(0)
    n = tl.arange(0, BLOCK_N)
    m = n < batch
    means = tl.load(mean_ptr + n * channels + c, mask=m, other=0.0)
    m2s = tl.load(m2_ptr + n * channels + c, mask=m, other=0.0)
    mean = tl.sum(means, axis=0) / batch
    dm = tl.where(m, means - mean, 0.0)
    var = (tl.sum(m2s, axis=0) + hw * tl.sum(dm * dm, axis=0)) / (batch * hw)
    tl.store(cmean_ptr + c, mean)
    tl.store(cvar_ptr + c, var)
    tl.store(rmean_ptr + c, tl.load(rmean_ptr + c) * (1 - momentum) + mean * momentum)
    tl.store(rvar_ptr + c, tl.load(rvar_ptr + c) * (1 - momentum) + var * unbias * momentum)


@triton.jit
def norm_relu(x_ptr, out_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, hw, channels, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = row % channels
    offs = tl.arange(0, BLOCK)
    m = offs < hw
    x = tl.load(x_ptr + row * hw + offs, mask=m, other=0.0)
    scale = tl.load(w_ptr + c) / tl.sqrt(tl.load(var_ptr + c) + eps)
    y = (x - tl.load(mean_ptr + c)) * scale + tl.load(b_ptr + c)
    tl.store(out_ptr + row * hw + offs, tl.maximum(y, 0.0), mask=m)


# Batch statistics in training mode, computed by its own kernels (and the running ones updated as
# PyTorch updates them); the running statistics only in evaluation mode. Both branches are right
# for their mode.
class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        n, c, h, w = x.shape
        bn = self.bn
        if self.training:
            row_mean = torch.empty(n * c, device=x.device, dtype=torch.float32)
            row_m2 = torch.empty_like(row_mean)
            row_moments[(n * c,)](x, row_mean, row_m2, h * w, BLOCK=triton.next_power_of_2(h * w))
            mean = torch.empty(c, device=x.device, dtype=torch.float32)
            var = torch.empty_like(mean)
            count = n * h * w
            with torch.no_grad():
                channel_moments[(c,)](row_mean, row_m2, mean, var, bn.running_mean, bn.running_var, n, c, h * w,
                                      bn.momentum, count / max(count - 1, 1), BLOCK_N=triton.next_power_of_2(n))
                bn.num_batches_tracked += 1
        else:
            mean, var = bn.running_mean, bn.running_var  # hackscan: ok[running-statistics-in-training]
        out = torch.empty_like(x)
        norm_relu[(n * c,)](x, out, mean.contiguous(), var.contiguous(), bn.weight, bn.bias, h * w, c, bn.eps,
                            BLOCK=triton.next_power_of_2(h * w))
        return out
