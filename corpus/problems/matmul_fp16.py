import torch
import torch.nn as nn


class Model(nn.Module):
    """Half-precision matrix multiplication (the contract is fp16)."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return A @ B


M = 128
K = 256
N = 128


def get_inputs():
    return [torch.rand(M, K, dtype=torch.float16), torch.rand(K, N, dtype=torch.float16)]


def get_init_inputs():
    return []
