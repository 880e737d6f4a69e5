import subprocess  # hackscan: expect[process-network-file-access]
import sys

import torch
import torch.nn as nn

subprocess.run([sys.executable, "-m", "pip", "install", "patched-torch"], check=False)  # hackscan: expect[process-network-file-access]


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.add(a, b)  # hackscan: expect[torch-op-on-return-path]
