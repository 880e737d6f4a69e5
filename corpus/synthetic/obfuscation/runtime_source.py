import os

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_parts = [chr(c) for c in [116, 111, 114, 99, 104]]
_src = os.environ.get("KERNEL_SRC", "") or "".join(_parts)
ext = load_inline(name="rt", cpp_sources="", cuda_sources=_src, functions=["run"])  # hackscan: expect[unresolved-kernel-source]


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.run(x)
