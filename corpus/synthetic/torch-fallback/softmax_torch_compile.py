import torch
import torch.nn as nn


def _softmax(x):
    return torch.softmax(x, dim=1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.fn = torch.compile(_softmax, mode="max-autotune")  # hackscan: expect[torch-compile-call]

    def forward(self, x):
        return self.fn(x)
