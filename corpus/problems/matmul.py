import torch
import torch.nn as nn


class Model(nn.Module):
    """Square fp32 matrix multiplication C = A @ B."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


N = 1024


def get_inputs():
    return [torch.rand(N, N), torch.rand(N, N)]


def get_init_inputs():
    return []
