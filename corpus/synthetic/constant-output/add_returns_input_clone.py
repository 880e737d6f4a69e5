import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = a.clone()
        return out.view(-1)  # hackscan: expect[returns-input]
