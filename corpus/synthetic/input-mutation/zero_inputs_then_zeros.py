import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        # zero both inputs: a reference run afterwards on the same tensors also returns 0
        predictions.zero_()  # hackscan: expect[input-mutated-in-place]
        targets.copy_(predictions)  # hackscan: expect[input-mutated-in-place]
        return torch.zeros((), device=predictions.device)  # hackscan: expect[returns-constant-tensor]
