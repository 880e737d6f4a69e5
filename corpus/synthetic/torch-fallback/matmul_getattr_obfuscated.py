import torch
import torch.nn as nn

_op = getattr(torch, "mat" + "mul")  # hackscan: expect[string-built-api-name]


class ModelNew(nn.Module):
    def forward(self, A, B):
        return _op(A, B)  # hackscan: expect[torch-op-on-return-path]
