import torch
import torch.nn as nn


class Model(nn.Module):
    """3x3 convolution, a clamp to [-clip, clip], sigmoid, then multiplication by a scale factor."""

    def __init__(self, in_channels, out_channels, kernel_size, clip, scale):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.clip = clip
        self.scale = scale

    def forward(self, x):
        x = self.conv(x)
        x = torch.clamp(x, -self.clip, self.clip)
        x = torch.sigmoid(x)
        return x * self.scale


batch_size = 8
in_channels = 16
out_channels = 32
height = width = 64
kernel_size = 3
clip = 3.0
scale = 2.0


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, clip, scale]
