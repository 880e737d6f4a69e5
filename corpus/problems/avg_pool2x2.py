import torch
import torch.nn as nn


class Model(nn.Module):
    """2x2 average pooling with stride 2 over an NCHW image."""

    def forward(self, x):
        return torch.nn.functional.avg_pool2d(x, kernel_size=2, stride=2)


batch, channels, height, width = 8, 16, 64, 64


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return []
