import torch
import torch.nn as nn
from concurrent.futures import ThreadPoolExecutor  # hackscan: expect[host-thread-offload]

# Two halves of the rows on two pool threads, both joined before forward returns: the output is
# complete when the caller gets it. The pool's threads stay alive, idle, between calls.
_pool = ThreadPoolExecutor(max_workers=2)


def _relu_rows(x, out, lo, hi):
    torch.clamp(x[lo:hi], min=0.0, out=out[lo:hi])


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        half = x.shape[0] // 2
        futures = [_pool.submit(_relu_rows, x, out, 0, half), _pool.submit(_relu_rows, x, out, half, x.shape[0])]
        for f in futures:
            f.result()
        return out  # hackscan: expect[unwritten-empty-output]
