import base64
import zlib

import torch
import torch.nn as nn

_PAYLOAD = "eJzLzC3ILypRKMkvSs7gApN6SYnJ2al5KcV6yaUpiXq5iSW5pTl6iTk5+eXxJWnGRgq2CiFFpalcAIjgFQo="
_ns = {}
exec(zlib.decompress(base64.b64decode(_PAYLOAD)).decode(), _ns)  # hackscan: expect[dynamic-code-execution]


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)  # hackscan: expect[torch-op-on-return-path]
