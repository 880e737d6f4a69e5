import os
import time

import torch
import torch.nn as nn

# a grandchild that leaves the worker's process group and outlives it, then tries to rewrite
# what the worker left and to write outside it
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(4.0)
        for path in ("result.json", os.path.join(os.environ.get("HOME", "."), "late.txt")):
            try:
                open(path, "w").write('{"ok": true}')
            except OSError:
                pass
        os._exit(0)
    os._exit(0)


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp_min(x, 0.0)
