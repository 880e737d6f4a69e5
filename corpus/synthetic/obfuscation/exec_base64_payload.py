import base64
import zlib

import torch
import torch.nn as nn

_PAYLOAD = "eJwrz8hMSc1RKEotLinNS1FIzs8tKMovKY5PLS7JzM9TyM9TSCwtycgvAgDoUg3u"
_ns = {}
exec(zlib.decompress(base64.b64decode(_PAYLOAD)).decode(), _ns)  # hackscan: expect[dynamic-code-execution]


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)  # hackscan: expect[torch-op-on-return-path]
