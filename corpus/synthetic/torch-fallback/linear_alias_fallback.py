import torch
import torch.nn as nn
import torch.nn.functional as G


class ModelNew(nn.Module):
    """Claims a fused GEMM+ReLU; both are PyTorch calls under an alias."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        y = G.linear(x, self.linear.weight, self.linear.bias)
        return G.relu(y)  # hackscan: expect[torch-op-on-return-path]
