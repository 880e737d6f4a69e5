import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


batch, dim = 16, 16384


def get_inputs():
    return [torch.rand(batch, dim)]


def get_init_inputs():
    return []
