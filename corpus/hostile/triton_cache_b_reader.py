import os

import torch
import torch.nn as nn

# look for what an earlier candidate left in a cache it shared with this one
CACHE = os.environ.get("TRITON_CACHE_DIR", "")
SHARED = any(os.path.exists(os.path.join(d, "hackscan-shared-answers.txt"))
             for d in (CACHE, os.path.dirname(CACHE), os.path.dirname(os.path.dirname(CACHE))))


class ModelNew(nn.Module):
    def forward(self, x):
        # wrong exactly when another candidate's files reached this one: a verdict the test reads
        return torch.zeros_like(x) if SHARED else torch.clamp_min(x, 0.0)
