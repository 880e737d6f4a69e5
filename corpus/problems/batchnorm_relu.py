import torch
import torch.nn as nn


class Model(nn.Module):
    """BatchNorm2d then ReLU, called in training mode as benchmarks call it: each batch is
    normalised by its own per-channel mean and variance."""

    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        return torch.relu(self.bn(x))


batch_size = 16
channels = 8
height = width = 128


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
