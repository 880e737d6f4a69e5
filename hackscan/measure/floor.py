"""The physical floor: the least time an operation can take on a device, from the bytes it must
move (each input read once, each output written once) over the device's measured bandwidth. A
candidate timed below it skipped work or was not timed honestly.

`Floor` also takes FLOPs (counted in the reference's measurement worker by torch.utils.flop_counter
where countable: matmul, convolution, attention) over a measured peak. Those are the reference's
formulation's, not the problem's (a diagonal matmul written as a dense one; a GEMM in fp8 at twice
the bf16 rate), so hackscan.measure.assess flags only the bytes floor and reports the FLOPs' time
as a note."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Floor:
    bytes_moved: int
    flops: int
    bandwidth_bytes_s: float
    peak_flops_s: float

    def _times(self) -> tuple[float, float]:
        t_mem = self.bytes_moved / self.bandwidth_bytes_s if self.bandwidth_bytes_s > 0 else 0.0
        t_math = self.flops / self.peak_flops_s if self.peak_flops_s > 0 and self.flops else 0.0
        return t_mem, t_math

    @property
    def seconds(self) -> float:
        return max(self._times())

    @property
    def bound(self) -> str:
        t_mem, t_math = self._times()
        return "compute" if t_math > t_mem else "memory"


def below_floor(measured_s: float, floor: Floor, slack: float = 0.9) -> bool:
    """A time under `slack` times the floor: faster than the hardware allows."""
    return floor.seconds > 0 and measured_s < slack * floor.seconds
