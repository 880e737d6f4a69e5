import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Row-wise cosine similarity (PyTorch clamps the norms' product with eps)."""

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return F.cosine_similarity(a, b, dim=1)


rows = 32
cols = 512


def get_inputs():
    return [torch.randn(rows, cols), torch.randn(rows, cols)]


def get_init_inputs():
    return []
