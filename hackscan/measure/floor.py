"""The physical floor: the least time an operation can take on a device, from the bytes it must
move (each input read once, each output written once) over the device's measured bandwidth and
the FLOPs it must do (counted by torch.utils.flop_counter where countable: matmul, convolution,
attention) over its measured peak. A candidate timed below the floor skipped work or was not
timed honestly."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Floor:
    bytes_moved: int
    flops: int
    bandwidth_bytes_s: float
    peak_flops_s: float

    @property
    def seconds(self) -> float:
        t_mem = self.bytes_moved / self.bandwidth_bytes_s if self.bandwidth_bytes_s > 0 else 0.0
        t_math = self.flops / self.peak_flops_s if self.peak_flops_s > 0 and self.flops else 0.0
        return max(t_mem, t_math)

    @property
    def bound(self) -> str:
        t_mem = self.bytes_moved / self.bandwidth_bytes_s if self.bandwidth_bytes_s > 0 else 0.0
        t_math = self.flops / self.peak_flops_s if self.peak_flops_s > 0 and self.flops else 0.0
        return "compute" if t_math > t_mem else "memory"


def bytes_moved(input_spec: list[dict], output_spec: list[dict]) -> int:
    """Bytes of every tensor input and output (entries with a `bytes` key, as the worker's
    meta-device input spec gives them)."""
    return sum(int(s.get("bytes", 0)) for s in input_spec) + sum(int(s.get("bytes", 0)) for s in output_spec)


def count_flops(model, inputs) -> int:
    """FLOPs of one forward, counted by PyTorch's own dispatcher-level counter; 0 where it
    knows no formula (elementwise work is memory-bound and covered by the bytes)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as fc:
        model(*inputs)
    return int(fc.get_total_flops())


def below_floor(measured_s: float, floor: Floor, slack: float = 0.9) -> bool:
    """A time under `slack` times the floor: faster than the hardware allows."""
    return floor.seconds > 0 and measured_s < slack * floor.seconds
