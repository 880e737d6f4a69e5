import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        # the freed output of the reference usually sits at this address
        return out  # hackscan: expect[unwritten-empty-output]
