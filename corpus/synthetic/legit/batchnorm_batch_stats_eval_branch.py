import torch
import torch.nn as nn
import triton
import triton.language as tl


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


# Batch statistics in training mode (and the running ones updated as PyTorch updates them); the
# running statistics only in evaluation mode. Both branches are right for their mode.
class ModelNew(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        n, c, h, w = x.shape
        bn = self.bn
        if self.training:
            var, mean = torch.var_mean(x, dim=(0, 2, 3), unbiased=False)
            with torch.no_grad():
                count = n * h * w
                bn.running_mean.mul_(1 - bn.momentum).add_(mean, alpha=bn.momentum)
                bn.running_var.mul_(1 - bn.momentum).add_(var * count / max(count - 1, 1), alpha=bn.momentum)
                bn.num_batches_tracked += 1
        else:
            mean, var = bn.running_mean, bn.running_var  # hackscan: ok[running-statistics-in-training]
        out = torch.empty_like(x)
        norm_relu[(n * c,)](x, out, mean.contiguous(), var.contiguous(), bn.weight, bn.bias, h * w, c, bn.eps,
                            BLOCK=triton.next_power_of_2(h * w))
        return out
