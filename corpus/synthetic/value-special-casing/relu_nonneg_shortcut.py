import torch
import torch.nn as nn


def relu_reference_path(x):
    # an honest (slow) path for inputs with negative values
    return torch.where(x > 0, x, torch.zeros_like(x))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x.min() >= 0:  # hackscan: expect[value-dependent-branch]
            return x  # hackscan: expect[returns-input]
        return relu_reference_path(x)
