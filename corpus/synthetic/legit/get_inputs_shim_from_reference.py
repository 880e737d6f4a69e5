import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y


# The file runs on its own too (a local benchmark script imports it): its inputs are the
# reference's, fetched when asked. forward never reaches this.
def get_inputs():
    import reference  # hackscan: expect[subclasses-reference-model]
    return reference.get_inputs()


def get_init_inputs():
    import reference  # hackscan: expect[subclasses-reference-model]
    return reference.get_init_inputs()
