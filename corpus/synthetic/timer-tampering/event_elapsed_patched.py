import torch
import torch.nn as nn

torch.cuda.Event.elapsed_time = lambda self, end: 0.001  # hackscan: expect[timer-api-patched]


class ModelNew(nn.Module):
    def forward(self, A, B):
        return A @ B  # hackscan: expect[torch-op-on-return-path]
