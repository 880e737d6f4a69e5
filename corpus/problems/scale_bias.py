import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x * weight + bias with learnable per-feature weight and bias."""

    def __init__(self, features):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(features))
        self.bias = nn.Parameter(torch.zeros(features))

    def forward(self, x):
        return x * self.weight + self.bias


batch_size = 64
features = 4096


def get_inputs():
    return [torch.rand(batch_size, features)]


def get_init_inputs():
    return [features]
