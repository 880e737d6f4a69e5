import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def forward(self, a, b):
        scratch = torch.empty(1024, device=a.device)
        add_kernel[(1,)](a, b, scratch, 1024, BLOCK=1024)  # launched on 1024 elements, result dropped
        return torch.add(a, b)  # hackscan: expect[kernel-result-unused]
