import os

import torch
import torch.nn as nn
import torch.nn.functional as F

os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":0:0"  # hackscan: expect[global-flag-write]
torch.backends.cudnn.benchmark = False  # hackscan: expect[global-flag-write]
torch.backends.cudnn.deterministic = True  # hackscan: expect[global-flag-write]


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, scale):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)
        self.scale = scale

    def forward(self, x):
        return torch.sigmoid(F.conv2d(x, self.conv.weight, self.conv.bias, padding=1)) * self.scale  # hackscan: expect[torch-op-on-return-path]
