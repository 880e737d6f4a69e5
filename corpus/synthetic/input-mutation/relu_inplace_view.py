import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        flat = x.view(-1)
        flat.clamp_(min=0.0)  # hackscan: expect[input-mutated-in-place]
        return x  # hackscan: todo-expect[returns-input]
