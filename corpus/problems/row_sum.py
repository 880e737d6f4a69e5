import torch
import torch.nn as nn


class Model(nn.Module):
    """Sum over the last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sum(x, dim=-1)


batch_size = 64
dim = 8192


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
