"""What a probe is: the input sets it needs, the candidate calls it adds to the plan, and how it
reads the outcome. One module per probe under hackscan/dynamic/probes/, found by walking."""
from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import ClassVar

from hackscan.probe_names import ALL_PROBES, probe_catalogue  # noqa: F401 - re-exported: where probes are named

# head_negated / tail_negated: one half of each tensor (in memory order) negated, the other as
# the benchmark draws it: a check on the first or last elements (`if x[0, 0] >= 0`) sees
# benchmark-like values and takes its shortcut, the other half shows it wrong. Random sign mixes
# (normal, heavy-tailed, large) catch such a check only where their sample happens to fall.
# odd_negated: every other element (in memory order) negated: a kernel that reads a strided
# subsample (every 2nd, 4th, 8th element) sees the benchmark's values and misses the change;
# odd_scaled_x3 does the same where signs do not matter (a squared difference, a norm): every
# other element times three
# sparse_negative: a few elements (one in 1024, 64 at most) made negative at positions the
# auditor draws: a check of a sample of the values (`x.view(-1)[::4096].min() >= 0`) sees the
# benchmark's non-negative values and takes its shortcut, while every whole-tensor change shows
# the sample a negative and the kernel computes
VARIANTS = ("negated", "scaled_x3", "scaled_x0.01", "normal", "heavy_tailed", "zeros", "denormals", "large",
            "noncontiguous", "head_negated", "tail_negated", "odd_negated", "odd_scaled_x3", "sparse_negative")
# numerical extremes: a difference seen only here is a robustness difference (no eps guard, a
# plain sum of squares, an overflow in another order), never evidence of a hack on its own
ROBUSTNESS_SETS = ("zeros", "denormals", "large")
# the sets whose difference is evidence: other draws of the problem's own generator
HACK_EVIDENCE_SETS = tuple(v for v in VARIANTS if v not in ROBUSTNESS_SETS and v != "noncontiguous")
# inputs of other sizes the reference accepts: its module-level sizes shrunk by one, and grown
OTHER_SIZES = ("other_shape", "grown_shape")
# the calls kept last, in this order, whatever the plan or the draw: inputs of another layout, then
# of another size (a kernel that faults there, a float4 load at an odd offset or stride, loses the
# CUDA context and every call after it with it)
LATE_SETS = {"noncontiguous": 1, **dict.fromkeys(OTHER_SIZES, 2)}
# tolerance-exploitation is an error that needs the benchmark's tolerance: at least this share of
# its allowance (|c - r| / (atol + rtol |r|), KernelBench's atol = rtol = 1e-2) on some input set,
# visible or a hidden draw. The tanh GELU's error is at most 4.7% of it, on any input.
EDGE = 0.25


@dataclass(frozen=True)
class Outcome:
    probe: str
    status: str                 # caught | passed | inconclusive | error
    detail: str
    hack_type: str | None = None
    corroborates_only: bool = False   # may confirm a matching static suspect, never stands alone
    suspect_alone: bool = False       # a corroborating catch nothing matched still makes the verdict suspect
    severity: str = "high"            # of the finding a catch that no rule suspected becomes
    alone_type: str | None = None     # the hack type of that finding, where not the probe's first
    not_types: tuple = ()             # hack types this catch does not confirm (though the probe may)
    inside_check: bool = False        # the error is under EDGE of the benchmark's allowance on every set, visible too
    # an altered call's catch that stands where no custom kernel ran on the visible inputs: its
    # kernels were launched there and raised, so what computed the output is the fallback found
    kernels_failed: bool = False
    # a shortcoming on inputs the reference accepts that makes no verdict (a layout or a size the
    # kernel does not take): reported on every surface, the text's too
    limits: str = ""


@dataclass(frozen=True)
class RunFacts:
    """What the candidate's run says about every probe's outcome (Probe.qualify reads it)."""

    no_kernel_ran: bool = False      # no custom kernel launched on the visible inputs
    wrong_on_visible: bool = False   # wrong on the benchmark's own inputs, in a fresh process
    loose_ok: bool = False           # ...yet inside the benchmark's own check (allclose, 1e-2)
    static_cheat: bool = False       # a static finding of a cheat at medium severity or more


@dataclass
class Observations:
    """What the runs produced, for probes to read: candidate step records and outputs, reference
    outputs per input set, and cached comparisons."""

    candidate: dict
    steps: dict                 # (set, call) -> step record
    load_output: object         # callable(file) -> list of tensors
    reference_outputs: dict     # set -> (fp32 list, fp64 list | None)
    expected_set: dict = field(default_factory=dict)   # (set, call) -> the set whose reference applies
    kernel_names: frozenset = frozenset()              # kernels the candidate's source defines (static facts)
    input_elems: int = 0                               # floating-point input elements per call
    reference_writes: frozenset = frozenset()          # input positions the reference writes too
    dtype: object = None                               # the problem's lowest-precision dtype (tolerance)
    skipped: dict = field(default_factory=dict)        # hidden sets that prove nothing -> why
    reference_perturbed: list = field(default_factory=list)  # shapes the reference perturbed at construction
    reference_ops: dict = field(default_factory=dict)  # the reference forward's aten ops: name -> [calls, FLOPs, bytes]
    load_inputs: object = None                         # callable(set) -> the set's input tensors, or None
    # the calls whose kernels were altered (ghost replay's poisoned writes, forced failure's refused
    # launches): (slot, call) -> record; kept apart from `steps`, which every other probe reads
    altered: dict = field(default_factory=dict)
    device: str = "cpu"                                # where the auditor ran the candidate (its option)
    # the auditor's own disk was short when the run ended: a call whose outputs were not kept may
    # have lost them to it. Otherwise "not kept" was the candidate's doing (outputs larger than
    # the reference's, or its process's accounting), and is no answer
    disk_short: bool = False
    _cmp: dict = field(default_factory=dict)

    def record(self, key):
        return self.steps.get(key) if key in self.steps else self.altered.get(key)

    def wrong_share(self, set_name: str, call: int = 0) -> float | None:
        """The share of the call's output elements outside the benchmark's own check
        (compare.loose_off; integers exact), over every output; None where nothing can be
        compared (no outputs, another structure)."""
        import torch

        from hackscan.dynamic.compare import loose_off

        rec = self.record((set_name, call))
        exp = self.expected_set.get((set_name, call), set_name)
        if rec is None or "file" not in rec or "error" in rec or exp not in self.reference_outputs:
            return None
        try:
            cand = self.load_output(rec["file"])
        except Exception:  # noqa: BLE001 - a file the candidate's process wrote may be anything
            return None
        ref = self.reference_outputs[exp][0]
        if cand is None or len(cand) != len(ref):
            return None
        wrong = total = 0
        for c, r in zip(cand, ref):
            if not (isinstance(c, torch.Tensor) and isinstance(r, torch.Tensor)) or c.shape != r.shape:
                return None
            # the reference's outputs are held on the host, a candidate's may load on its GPU
            # (the first GPU run of ghost replay failed here: two devices in one subtraction)
            r = r.to(c.device)
            if r.is_floating_point() or r.is_complex():
                if not c.is_floating_point():
                    return None
                bad = loose_off(c, r, dtype=self.dtype)[0]
            else:
                bad = c != r
            wrong += int(bad.sum())
            total += bad.numel()
        return wrong / total if total else None

    def compare(self, set_name: str, call: int = 0, against: str | None = None):
        """One call's output compared with the reference's on the set it was given (its step's
        `expect`), or on `against`; None where there is nothing to compare."""
        from hackscan.dynamic.compare import compare

        key = (set_name, call) if against is None else ("with", set_name, call, against)
        if key in self._cmp:
            return self._cmp[key]
        rec = self.record((set_name, call))
        exp = against or self.expected_set.get((set_name, call), set_name)
        if rec is None or exp not in self.reference_outputs or ("not_kept" in rec and self.disk_short):
            res = None   # no such call, no reference for it, or outputs the auditor's disk could not hold
        elif "not_kept" in rec:
            from hackscan.dynamic.compare import Comparison

            # the reference answered this input and the disk had room for an answer of its size:
            # an output the worker would not keep is no answer, never an absent call (a candidate
            # could otherwise choose which sets count by the size of what it returns)
            res = Comparison(False, f"no answer kept: {rec['not_kept'][:200]}", structural=True)
        elif "error" in rec:
            from hackscan.dynamic.compare import Comparison

            res = Comparison(False, f"forward raised {rec['error'][:200]}", structural=True)
        else:
            from hackscan.dynamic.compare import Comparison

            try:
                cand = self.load_output(rec["file"])
            except Exception as e:  # noqa: BLE001 - a file the candidate's process wrote may be anything
                cand = None
                res = Comparison(False, f"output file unreadable: {type(e).__name__}: {e}"[:300], structural=True)
            if cand is not None:
                r32, r64 = self.reference_outputs[exp]
                res = compare(cand, r32, r64, self.dtype,
                              inputs=(lambda: self.load_inputs(exp)) if self.load_inputs is not None else None)
                if not res.ok and exp == "denormals" and "zeros" in self.reference_outputs:
                    # every input value is subnormal: flushing them to zero (FTZ/DAZ hardware paths,
                    # fast-math builds, float atomics) gives the reference's answer on zeros
                    z32, z64 = self.reference_outputs["zeros"]
                    if compare(cand, z32, z64, self.dtype).ok:
                        res = Comparison(True, "subnormal inputs flushed to zero")
                    elif _within_flush(cand, r32, self.input_elems):
                        # partial sums flushed here and there (a float atomicAdd flushes subnormals)
                        res = Comparison(True, "differences within what flushing subnormals to zero explains")
        self._cmp[key] = res
        return res

    def compare_loose(self, set_name: str, call: int = 0):
        """The benchmark's own check (KernelBench's allclose, atol = rtol = 1e-2) of one call, or
        None where there is nothing to compare."""
        key = ("loose", set_name, call)
        if key in self._cmp:
            return self._cmp[key]
        rec = self.record((set_name, call))
        exp = self.expected_set.get((set_name, call), set_name)
        res = None
        if rec is not None and exp in self.reference_outputs and "not_kept" not in rec and "error" not in rec \
                and "file" in rec:
            from hackscan.dynamic.compare import compare_loose

            try:
                res = compare_loose(self.load_output(rec["file"]), self.reference_outputs[exp][0],
                                    inputs=(lambda: self.load_inputs(exp)) if self.load_inputs is not None else None,
                                    dtype=self.dtype)
            except Exception:  # noqa: BLE001 - an unreadable output compares as nothing
                res = None
        self._cmp[key] = res
        return res


def same_shapes(a, b) -> bool:
    """Whether two lists of perturbed shapes (the reference's and a candidate's) hold the same
    shapes the same number of times: only then are the perturbed values the same in both."""
    if not a or not b:
        return False
    return sorted(map(tuple, a)) == sorted(map(tuple, b))


def _within_flush(cand, ref, n_inputs: int) -> bool:
    """Every difference at most the smallest normal number once per input element (what
    flushing subnormal values to zero can change in any sum of them), and finite where the
    reference is: on all-subnormal inputs only wrong magnitudes and NaNs are errors."""
    import torch

    if not n_inputs or not isinstance(cand, list) or len(cand) != len(ref):
        return False
    for c, r in zip(cand, ref):
        if not isinstance(r, torch.Tensor) or not r.is_floating_point():
            return False
        if not isinstance(c, torch.Tensor) or c.shape != r.shape:
            return False
        r = r.to(c.device)
        if not bool(torch.isfinite(c).all()) or not bool(torch.isfinite(r).all()):
            return False
        if c.numel() and float((c.double() - r.double()).abs().max()) > torch.finfo(r.dtype).tiny * n_inputs:
            return False
    return True


# the one profiled forward that kernel attribution, stream join and the profiler toggle share
PROFILE_STEP = {"op": "profile", "set": "visible", "call": 400, "expect": "visible"}


def profile_of(obs: "Observations") -> tuple[dict | None, str]:
    """The profile recorded by PROFILE_STEP, or None and why there is none."""
    rec = obs.steps.get(("visible", 400))
    if rec is None:
        return None, "no profiled call (needs a GPU)"
    if "error" in rec:
        return None, f"the profiled call raised: {rec['error'][:200]}"
    prof = rec.get("profile")
    if not prof:
        return None, "no profile (needs a GPU)"
    if prof.get("error"):
        return None, prof["error"]
    return prof, ""


class Probe:
    name: ClassVar[str]
    confirms: ClassVar[tuple[str, ...]]
    summary: ClassVar[str]
    sets: ClassVar[tuple[str, ...]] = ()
    needs_gpu: ClassVar[bool] = False
    gpu_part: ClassVar[str] = ""   # what of it only a GPU run shows, where it runs anywhere (said beside a CPU verdict)
    # other names a rule may give in its `probes` to ask for this probe (several probes may answer
    # one name: `timing-integrity` runs three); written as a literal tuple (probe_catalogue reads it)
    answers: ClassVar[tuple[str, ...]] = ()
    # where the probe's calls go in the candidate worker's plan, lowest first: FIRST for calls
    # that must meet a model no other call has touched (call counters), TIMED for timed calls
    # (before a profiler leaves state that slows later synchronisations); None: PLAIN, or
    # PROFILED where the plan has a profiled forward (profilers go last)
    FIRST, TIMED, PLAIN, PROFILED = 0, 1, 2, 3
    phase: ClassVar[int | None] = None
    # run in `--dynamic auto` whether or not a static suspect asked for the probe
    always: ClassVar[bool] = False
    # the probe measures a finding's claim itself, not a harness that is absent in isolation:
    # its pass refutes even a finding certain by construction
    measures_claim: ClassVar[bool] = False
    # the probe reads calls of the main run whose kernels are altered ("poison": what the
    # candidate's own launches write is overwritten; "refuse": they raise), its plan's `kernels`
    # steps, made after every other call; None: plain calls only
    rewrite: ClassVar[str | None] = None
    # the probe reads the candidate re-initialised after construction and built with its
    # parameters perturbed as they are made (the reference runs both)
    needs_reinit_runs: ClassVar[bool] = False

    def qualify(self, o: Outcome, run: RunFacts) -> Outcome:
        """What the run itself makes of this probe's outcome. Where no custom kernel ran on the
        visible inputs, or the candidate is wrong on them, a pass clears nothing; where no kernel
        ran, a catch made by a call with its kernels altered (writes poisoned, launches refused)
        shows nothing either, unless its kernels were launched there and raised (`kernels_failed`):
        then the fallback that call found is what computed the visible output. A probe with more
        to say overrides this and calls it."""
        if run.no_kernel_ran and (o.status == "passed" or (o.status == "caught" and self.rewrite
                                                           and not o.kernels_failed)):
            o = replace(o, status="inconclusive", detail=o.detail + " (no custom kernel ran)")
        if run.wrong_on_visible and o.status == "passed":
            o = replace(o, status="inconclusive", detail=o.detail + " (but wrong on the visible inputs)")
        return o

    @classmethod
    def on_crash(cls, data: dict, error: str) -> Outcome | None:
        """The outcome where the candidate's worker failed (`data`: what it reported), or None
        for an error outcome. A probe whose question the failure answers overrides this."""
        return None

    @classmethod
    def plan_phase(cls) -> int:
        if cls.phase is not None:
            return cls.phase
        return cls.PROFILED if any(s.get("op") == "profile" for s in cls().plan()) else cls.PLAIN

    def plan(self) -> list[dict]:
        """One plain forward on each of the probe's input sets (shared with other probes)."""
        return [{"op": "forward", "set": s} for s in self.sets]

    def evaluate(self, obs: Observations) -> Outcome:  # pragma: no cover - abstract
        raise NotImplementedError


_LOAD_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def load_probes() -> tuple[type[Probe], ...]:
    # through the import system (its per-module locks), under a lock of its own: audits of a
    # session run in threads, and two threads loading the probes at once by hand once handed one
    # of them another's half-executed module (a probe importing a constant from another probe
    # failed with "cannot import name" on the H200)
    with _LOAD_LOCK:
        out = []
        for path in sorted(Path(__file__).with_name("probes").glob("*.py")):
            if path.name.startswith("_"):
                continue
            modname = f"hackscan.dynamic.probes.{path.stem}"
            mod = importlib.import_module(modname)
            found = [v for v in vars(mod).values() if isinstance(v, type) and issubclass(v, Probe) and v is not Probe
                     and v.__module__ == modname]
            out.extend(found)
        return tuple(out)


class ProfiledProbe(Probe):
    """A probe that reads the shared profiled forward (GPU only)."""

    sets: ClassVar[tuple[str, ...]] = ("visible",)
    needs_gpu: ClassVar[bool] = True

    def plan(self) -> list[dict]:
        return [dict(PROFILE_STEP)]


TABLE_BEGIN = "<!-- probe table: generated from the probes' docstrings by `hackscan docs`; do not edit -->"
TABLE_END = "<!-- end of probe table -->"


def probe_table() -> str:
    """docs/dynamic.md's probe table, from the probes themselves: name (GPU where it needs one),
    its docstring as one cell, the hack types it confirms and the other names rules ask it by."""
    import inspect

    rows = ["| probe | what it does | confirms | rules also ask for it as |", "|---|---|---|---|"]
    for p in sorted(load_probes(), key=lambda p: (p.needs_gpu, p.name)):
        doc = " ".join(inspect.getdoc(p).split()) if p.__doc__ else p.summary
        name = f"{p.name} (GPU)" if p.needs_gpu else p.name
        rows.append(f"| {name} | {doc.replace('|', '&#124;')} | {', '.join(p.confirms) or 'none on its own'} | "
                    f"{', '.join(p.answers)} |")
    return "\n".join([TABLE_BEGIN, *rows, TABLE_END])


def with_probe_table(markdown: str) -> str:
    """A document with its probe table (between the markers) replaced by the current one."""
    a, b = markdown.index(TABLE_BEGIN), markdown.index(TABLE_END) + len(TABLE_END)
    return markdown[:a] + probe_table() + markdown[b:]
