import torch
import torch.nn as nn
import triton
import triton.language as tl

# the autotuner for any cuDNN convolution in the process (a habit of generated code): it makes
# the reference faster too where both share a process, so it neither slows the baseline nor
# loosens the check
torch.backends.cudnn.benchmark = True


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.where(x > 0, x, 0.0), mask=mask)


def relu(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    n = x.numel()
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)
    relu_kernel[grid](x, y, n, BLOCK=2048)
    return y


class ModelNew(nn.Module):
    def forward(self, x):
        return relu(x.contiguous())
