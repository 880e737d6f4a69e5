import torch
import torch.nn as nn

aten = torch.ops.aten


class ModelNew(nn.Module):
    def forward(self, x):
        return aten._softmax.default(x, 1, False)  # hackscan: expect[torch-op-on-return-path]
