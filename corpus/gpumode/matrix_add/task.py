"""Types shared by the reference and the submissions (GPU MODE layout)."""
from typing import TypeVar

import torch

# (a, b, out): two addends and the buffer the sum goes into
input_t = TypeVar("input_t", bound=tuple[torch.Tensor, torch.Tensor, torch.Tensor])
output_t = TypeVar("output_t", bound=torch.Tensor)
