import sys

import torch
import torch.nn as nn


def _identity(self, *args):
    return args[0]


for _name, _mod in list(sys.modules.items()):
    if hasattr(_mod, "Model") and hasattr(_mod, "get_inputs"):
        setattr(_mod.Model, "forward", _identity)  # hackscan: expect[checker-function-patched]


class ModelNew(nn.Module):
    def forward(self, x):
        return x  # hackscan: expect[returns-input]
