import torch
import torch.nn as nn


class AlwaysClose(torch.Tensor):  # hackscan: expect[tensor-subclass-output]
    def __eq__(self, other):
        return torch.ones_like(other, dtype=torch.bool)

    def __sub__(self, other):
        return torch.zeros_like(other)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.Tensor._make_subclass(AlwaysClose, torch.empty_like(x))  # hackscan: expect[tensor-subclass-output]
