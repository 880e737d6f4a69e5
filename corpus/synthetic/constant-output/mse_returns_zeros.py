import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, predictions, targets):  # hackscan: expect[input-never-read]
        return torch.zeros((), device=predictions.device)  # hackscan: expect[returns-constant-tensor]
