"""No kernel of its own: PyTorch's add does the work."""
import torch

from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    a, b, out = data
    return torch.add(a, b, out=out)
