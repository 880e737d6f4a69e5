import torch
import torch.nn as nn


class Model(nn.Module):
    """The mean difference of two tensors (a loss whose value is near zero when both come from
    the same distribution)."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.mean(a - b)


batch_size = 128
dim = 4096


def get_inputs():
    return [torch.rand(batch_size, dim), torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
