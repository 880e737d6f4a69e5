import torch
import torch.nn as nn


class Model(nn.Module):
    """The batch mean of a scaled linear layer: y[j] = 0.1 * mean_i (x[i] . w[j] + b[j]).
    With PyTorch's initialisation every output stays below about 0.006, under KernelBench's
    atol of 1e-2."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return 0.1 * self.linear(x).mean(dim=0)


batch_size = 4096
in_features = 1024
out_features = 64


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
