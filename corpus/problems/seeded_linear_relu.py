import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer followed by ReLU, its weights drawn from a fixed seed (some agent-written
    problems build their parameters so, to make every run comparable)."""

    def __init__(self, in_features, out_features):
        super().__init__()
        torch.manual_seed(in_features * 7 + out_features)
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x))


batch_size = 64
in_features = 256
out_features = 128


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
