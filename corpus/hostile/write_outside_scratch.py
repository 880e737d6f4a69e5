import os

import torch
import torch.nn as nn

CANARY = os.path.join(os.environ.get("HACKSCAN_TEST_CANARY_DIR", "/tmp"), "hackscan-hostile-canary.txt")
for target in (CANARY, "../escaped-from-scratch.txt"):
    try:
        with open(target, "w") as fh:
            fh.write("escaped")
    except OSError:
        pass


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
