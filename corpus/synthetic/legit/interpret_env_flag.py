import gc
import importlib
import os

import torch
import torch.nn as nn

tl = importlib.import_module("triton.language")  # hackscan: ok[dynamic-code-execution]
triton = importlib.import_module("triton")
INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"  # hackscan: ok[global-flag-write, profiler-or-mode-detection]
gc.collect()  # hackscan: ok[harness-introspection]


@triton.jit
def scale_bias_kernel(x_ptr, w_ptr, b_ptr, y_ptr, n, cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    c = offs % cols
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, x * tl.load(w_ptr + c, mask=m) + tl.load(b_ptr + c, mask=m), mask=m)


@torch.compiler.disable  # hackscan: ok[torch-compile-call]
def launch(x, w, b):
    y = torch.empty_like(x)
    n = x.numel()
    block = 4096 if INTERPRET else 1024
    scale_bias_kernel[(triton.cdiv(n, block),)](x, w, b, y, n, x.shape[1], BLOCK=block)
    return y


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))

    def forward(self, x):
        w = getattr(self, "weight")  # hackscan: ok[string-built-api-name]
        torch.cuda.synchronize() if x.is_cuda else None  # hackscan: ok[timer-api-patched]
        return launch(x.contiguous(), w, self.bias)  # hackscan: ok[torch-op-on-return-path]
