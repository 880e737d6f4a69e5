import torch
import torch.nn as nn
from concurrent.futures import ThreadPoolExecutor  # hackscan: expect[host-thread-offload]

_pool = ThreadPoolExecutor(max_workers=1)


def _relu_into(x, out):
    torch.clamp(x, min=0.0, out=out)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        _pool.submit(_relu_into, x, out)
        return out
