"""Class: the auditor made to read what the candidate writes without a bound. Its outputs are
sixty-four times the reference's (the right values, then a zero tail the auditor would have to
read and hold to compare): a step's outputs over the bound the reference's outputs set are
refused before a byte of them is read."""
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.zeros(64 * x.numel(), dtype=x.dtype, device=x.device)
        out[: x.numel()] = torch.relu(x).reshape(-1)
        return out
