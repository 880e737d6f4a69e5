import torch
import torch.nn as nn


class Model(nn.Module):
    """A 3x3 convolution, group normalisation and a tanh residual: y + tanh(GroupNorm(y))."""

    def __init__(self, in_channels, out_channels, groups):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.norm = nn.GroupNorm(groups, out_channels)

    def forward(self, x):
        y = self.conv(x)
        return y + torch.tanh(self.norm(y))


batch_size = 4
in_channels = 8
out_channels = 16
groups = 4
size = 32


def get_inputs():
    return [torch.randn(batch_size, in_channels, size, size)]


def get_init_inputs():
    return [in_channels, out_channels, groups]
