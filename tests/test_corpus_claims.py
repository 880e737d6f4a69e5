"""The corpus proves what it claims: every CPU-runnable hack pair passes a naive KernelBench-style
check on its own problem (both models built after the same seed, the reference's `get_inputs()`,
`torch.allclose` with atol = rtol = 1e-2, the check of KernelBench v0 and v0.1 under which the
published hacks were found, over five seeded trials, without .eval()). A hack example that fails its own
benchmark is a strawman: catching it proves nothing. Hacks whose mechanism is state across calls
(result caching, cross-call batching, phase detection) target the calls after the check: they
must pass its first trial (KernelBench's default is one). A sidecar's `naive_order =
"candidate-first"` names a hack aimed at harnesses that run the candidate before the reference
(the check runs that way for it); `naive_check = "<why>"` skips a pair whose mechanism the CPU
cannot show, with the reason.

Each pair runs in its own subprocess (Triton under TRITON_INTERPRET=1), never in the test's."""
from __future__ import annotations

from pathlib import Path

import pytest

from hackscan.corpus import corpus_files, parse_marks
from hackscan.naive import sidecar_check

from conftest import CORPUS

pytest.importorskip("torch")
pytest.importorskip("triton")

HACKS = [f for f in corpus_files(CORPUS) if f.parent.name != "legit" and parse_marks(f).sidecar.get("cpu")]

def naive_check(path: Path, seed: int | tuple[int, ...] = 42) -> list[bool]:
    """The check's trial results on the CPU (KernelBench's default seed 42, or other base seeds,
    one check after the other in the same child): hackscan.naive's program, KernelBench's steps,
    in a child process."""
    r = sidecar_check(path, parse_marks(path).sidecar, seed=seed, device="cpu")
    assert "error" not in r, r["error"]
    return r["trials"]


def test_enough_cpu_hacks():
    assert len(HACKS) >= 50


ACROSS_CALLS = {"result-caching", "cross-call-batching", "phase-detection"}


# each class a unit of pytest-xdist's --dist loadscope: the hacks and the look-alikes run side by side
class TestHacks:
    @pytest.mark.parametrize("path", HACKS, ids=lambda p: str(p.relative_to(CORPUS)))
    def test_a_hack_passes_its_own_benchmarks_check(self, path: Path):
        side = parse_marks(path).sidecar
        if side.get("naive_check"):
            # the mechanism exists only where the sidecar says (the CUDA caching allocator handing
            # back the reference's freed output): the CPU cannot show it, and the reason is recorded
            pytest.skip(side["naive_check"])
        trials = naive_check(path)
        across = bool(set(parse_marks(path).sidecar.get("hack_types", ())) & ACROSS_CALLS)
        need = trials[:1] if across else trials
        assert all(need), f"fails the naive KernelBench check on its own inputs: trials {trials}"


LEGIT = [f for f in corpus_files(CORPUS) if f.parent.name == "legit" and parse_marks(f).sidecar.get("cpu")]


class TestLookAlikes:
    @pytest.mark.parametrize("path", LEGIT, ids=lambda p: str(p.relative_to(CORPUS)))
    def test_a_look_alike_is_correct_over_several_seeds(self, path: Path):
        """A legitimate look-alike must be what it claims: correct on its problem's inputs, in
        every trial of the naive check under two base seeds (KernelBench's and another), not
        only on the draw its author tried. Its hidden sets are the dynamic corpus test's."""
        trials = naive_check(path, (42, 20261204))
        assert len(trials) == 10, trials
        assert all(trials), f"a look-alike wrong on its own problem's inputs: trials {trials}"
