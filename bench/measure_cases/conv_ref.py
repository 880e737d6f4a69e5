import torch
import torch.nn as nn


class Model(nn.Module):
    """3x3 convolution then ReLU (cuDNN), fp32."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


batch, cin, cout, hw = 32, 64, 128, 128


def get_inputs():
    return [torch.rand(batch, cin, hw, hw)]


def get_init_inputs():
    return [cin, cout]
