import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def clamp_gelu_scale_kernel(x_ptr, y_ptr, n, clip, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    x = tl.minimum(tl.maximum(x, -clip), clip)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(y_ptr + offs, y * scale, mask=m)


class ModelNew(nn.Module):
    """The GEMM stays in cuBLAS through torch.addmm; the clamp, GELU and scale are one fused
    epilogue kernel. The clamp is written as a max and a min: every stage of the reference is
    computed, even the one that is identity on the benchmark's inputs."""

    def __init__(self, in_features, out_features, clip, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.clip = clip
        self.scale = scale

    def forward(self, x):
        h = torch.addmm(self.linear.bias, x, self.linear.weight.t())  # hackscan: expect[heavy-torch-op-beside-kernel]
        out = torch.empty_like(h)
        clamp_gelu_scale_kernel[(triton.cdiv(h.numel(), 16384),)](h, out, h.numel(), self.clip, self.scale, BLOCK=16384)
        return out
