import torch
import torch.nn as nn
from torch.nn import functional as fn


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scale):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.scale = scale

    def forward(self, x):
        y = self.conv(x)
        y = fn.sigmoid(y) * self.scale
        return y  # hackscan: expect[torch-op-on-return-path]
