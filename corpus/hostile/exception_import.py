import torch.nn as nn

raise RuntimeError("refusing to be imported")


class ModelNew(nn.Module):
    def forward(self, x):
        return x
