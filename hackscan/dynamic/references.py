"""A problem's reference run, once per problem and shared by every candidate of it: the run
itself (its input sets drawn, its outputs on each, under the machine-wide budgets, run again
with what it said it needs), the store of runs kept and their eviction, and the host memory
turn a reference killed for memory reruns in."""
from __future__ import annotations


import contextlib
import hashlib
import os
import secrets
import threading
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from hackscan.dynamic.budgets import NeverFits, WaitedTooLong, memory_need, refused_for_memory
from hackscan.dynamic.probe import OTHER_SIZES, VARIANTS
from hackscan.dynamic import sandbox
from hackscan.dynamic.feeder import hide_from_basic
from hackscan.dynamic.runner import Limits, WorkerResult, run_worker
from hackscan.dynamic.workdirs import remove_tree
from hackscan.inputs.siblings import reference_files
from hackscan.dynamic.tensorfile import load_outputs
from hackscan.dynamic.options import prepare_threads
from hackscan.dynamic.planning import LATE_DRAWS, TOUCHED
from hackscan.dynamic.settle import AGAIN, conditioning, degenerate, nondeterministic


@dataclass
class ReferenceRun:
    ok: bool
    error: str | None
    dir: Path | None
    outputs: dict = field(default_factory=dict)     # set -> (fp32, fp64|None)
    init_file: Path | None = None
    input_spec: list = field(default_factory=list)
    seconds: float = 0.0
    other_shape: dict = field(default_factory=dict)
    grown_shape: dict = field(default_factory=dict)   # the sizes grown (the other-shapes probe's second set)
    params: int = 0
    prepare_s: float = 0.0
    writes_inputs: frozenset = frozenset()   # input positions the reference itself writes (output buffers)
    skipped: dict = field(default_factory=dict)   # hidden set -> why it proves nothing (left out of every probe)
    perturbed_shapes: list = field(default_factory=list)   # shapes perturbed at construction, in order
    # the work of each top-level aten op of one forward on the visible inputs: name -> [calls,
    # FLOPs, bytes] (kernel attribution judges what a candidate left to PyTorch against it)
    ops: dict = field(default_factory=dict)
    hidden_sources: dict = field(default_factory=dict)     # hidden set -> how the generator drew it
    dtype: object = None      # the problem's lowest-precision floating dtype (inputs, parameters, outputs)
    degenerate: str | None = None   # the evidence that the reference's output ignores its inputs
    nondeterministic: str | None = None   # the evidence that two calls on the same inputs differ
    shared: Path | None = None      # input sets, init inputs, parameters, state: read-only for candidates
    rerun: str | None = None        # why the reference worker ran a second time (the first was killed)
    set_seconds: dict = field(default_factory=dict)   # input set -> seconds to draw, check and write it
    calls_s: float = 0.0            # the reference's calls on every set (native and high precision)
    drawn_on: str = "cpu"           # where the problem's generator drew the input sets (cpu, cuda:N)
    output_bytes: int = 0           # its outputs held in the auditor's memory (every set, both precisions)
    set_files: dict = field(default_factory=dict)   # input set -> its file (never shown to a candidate)
    key: str = ""                   # ref_key: its problem's key (the reference file is not read again)
    resource_error: bool = False    # the machine could not hold it (or gave no room in time)

    def out_cap(self) -> int:
        """The largest outputs file a candidate's call may commit: four times the reference's
        largest outputs on any set (a high-precision copy of a bfloat16 output is four times its
        size), and 1 MiB for containers and headers."""
        most = 0
        for pair in self.outputs.values():
            for outs in pair:
                if outs:
                    most = max(most, sum(int(t.numel() * t.element_size()) for t in outs
                                         if isinstance(t, torch.Tensor)))
        return 4 * most + (1 << 20)


BF16_INTERPRETER = "the problem runs in bfloat16"


class ReferenceRuns:
    """The reference side of a DynamicSession (a mixin: the session's options, budgets and work
    folder are its own)."""

    @staticmethod
    def ref_key(ref_path: Path) -> str:
        """The key of a problem's reference run: a hash of the reference's source."""
        return hashlib.sha256(ref_path.read_bytes()).hexdigest()[:16]

    def has_reference(self, ref_path: Path) -> bool:
        return self.ref_key(ref_path) in self._refs

    def reference(self, ref_path: Path, entry_init_seed: int) -> ReferenceRun:
        key = self.ref_key(ref_path)
        with self._lock:
            lock = self._ref_locks.setdefault(key, threading.Lock())
        with lock:  # one run per problem, however many candidates wait for it
            if key not in self._refs:
                self._evict_references()
                self._refs[key] = self._run_reference(ref_path, key, entry_init_seed)
                self.reference_runs += 1
            with self._lock:
                self._ref_users[key] = self._ref_users.get(key, 0) + 1
                self._ref_last[key] = time.monotonic()
            held = getattr(self._slot, "refs", None)
            if held is not None:   # released by key when the audit ends: the file may be gone by then
                held.append(key)
            return self._refs[key]

    def release_reference(self, key: str) -> None:
        """Give back a hold on the reference run of `key` (ref_key), taken by `reference`."""
        if not isinstance(key, str):   # a path here would release nothing, silently
            raise TypeError(f"release_reference takes a reference key (ref_key), not {type(key).__name__}")
        with self._lock:
            self._ref_users[key] = max(0, self._ref_users.get(key, 0) - 1)

    MAX_REFERENCES = 12
    REFERENCE_DISK_FLOOR = 8 << 30
    # the reference outputs idle references may keep in the auditor's memory, all together: a
    # quarter of the host's memory (a full-size problem keeps several GiB of outputs, one per
    # hidden set and precision, and a dataset run meets dozens of them)
    REFERENCE_MEMORY_SHARE = 4

    def _evict_references(self) -> None:
        """Before a new reference runs: the least recently used references no audit holds are
        dropped (their folder of input sets and their outputs in memory) while more than
        MAX_REFERENCES are kept or the disk under the session has less than 8 GiB free. A
        session over a dataset of thousands of problems would otherwise fill the disk and the
        GPU with every problem's inputs and outputs; a problem seen again runs its reference
        again."""
        with self._lock:
            idle = sorted((k for k in self._refs if self._ref_users.get(k, 0) == 0), key=lambda k: self._ref_last.get(k, 0))
        cap = _host_memory_bytes() // self.REFERENCE_MEMORY_SHARE
        for k in idle:
            try:
                low = shutil.disk_usage(self.work).free < self.REFERENCE_DISK_FLOOR
            except OSError:
                low = False
            with self._lock:
                held = sum(r.output_bytes for r in self._refs.values())
            if len(self._refs) < self.MAX_REFERENCES and not low and held <= cap:
                break
            with self._lock:
                if self._ref_users.get(k, 0):
                    continue
                run = self._refs.pop(k, None)
            if run is not None:
                remove_tree(run.dir)

    def _run_reference(self, ref_path: Path, key: str, entry_init_seed: int) -> ReferenceRun:
        d = self.work / f"ref-{key}"
        # visible3/visible4: two more draws of the problem's own generator, for ghost replay's
        # calls alone (inputs no earlier call had: an output buffer then holds nothing the kernel
        # writes again unchanged, which its poisoning could not see), drawn after the hidden sets
        sets = ["visible", "visible2", *VARIANTS, TOUCHED, *LATE_DRAWS, *OTHER_SIZES]
        job = {"role": "reference", "source": "reference_module.py", "module_name": "reference_module",
               "entry": "Model", "device": self.opts.device, "init_seed": entry_init_seed, "prepare": True,
               "cast_dtype": self.opts.dtype,
               # the secret draws' seeds are the problem's own (derived with its key): a worker of
               # another problem that could read this job (the basic engine hides no folder)
               # learns nothing of the sets its own problem is checked on
               "visible_seeds": {"visible": self.derive(f"visible:{key}"), "visible2": self.derive(f"visible2:{key}")},
               "late_seeds": {v: self.derive(f"{v}:{key}") for v in LATE_DRAWS},
               # the visible draw with a few elements changed at positions of the auditor's seed
               # (fresh-call consistency's call in the same storage: hackscan.dynamic.probes.fresh_calls)
               "touched": {TOUCHED: {"from": self.derive(f"visible:{key}"), "seed": self.derive(f"touched:{key}")}},
               "variants_from": "visible", "variants": list(VARIANTS), "variant_seed": self.derive(f"variants:{key}"),
               "memory_budget_bytes": self.memory_budget(), "fp64": True, "init_file": "init.pt",
               "prepare_threads": prepare_threads(),
               "save_state": True,
               "other_shapes": True, "reinit_seed": self.derive(f"reinit:{key}"), "perturb_seed": self.derive("perturb"),
               # the first call profiled: the work of each aten op the reference runs
               "plan": [{"op": "profile" if s == "visible" else "forward", "set": s} for s in sets]}
        # the visible inputs once more, right after the first call: a reference whose output
        # changes between two calls on the same inputs (dropout in training mode, a random
        # draw, state kept across calls) is no yardstick for any comparison
        job["plan"].insert(1, {"op": "forward", "set": "visible", "as": AGAIN, "fp64": False})
        t0 = time.perf_counter()
        # the reference runs once per problem and does the most work (every set, twice, and two
        # more models): three times a candidate's time
        limits = self.worker_limits()
        limits.timeout_s = limits.timeout_s * 3
        res, rerun = self._reference_worker(job, ref_path, key, d, limits)
        # what candidates read goes into one folder, bound read-only into their sandboxes: a
        # full-size problem's input sets are on disk once, however many candidates read them
        shared = d / "shared"
        shared.mkdir(exist_ok=True)
        for f in [d / "init.pt", d / "params.pt", *d.glob("ref_state*.pt")]:
            if f.is_file():
                f.rename(shared / f.name)
        # the input sets go where no candidate's sandbox shows them, under names that say nothing:
        # a candidate's worker is handed each set only with the step that uses it (dynamic.feeder)
        sets_dir = d / "sets"
        sets_dir.mkdir(exist_ok=True)
        set_files = {}
        for f in d.glob("in_*.pt"):
            if f.is_file():
                dest = sets_dir / f"{secrets.token_hex(8)}.pt"
                f.rename(dest)
                set_files[f.name[len("in_"):-len(".pt")]] = dest
        hide_from_basic(sets_dir)
        run = ReferenceRun(res.ok, res.error, d, init_file=shared / "init.pt", shared=shared,
                           input_spec=res.data.get("input_spec", []), seconds=time.perf_counter() - t0,
                           set_files=set_files)
        run.other_shape = res.data.get("other_shape", {})
        run.grown_shape = res.data.get("grown_shape", {})
        run.rerun = rerun
        run.key = key
        run.resource_error = bool(res.data.get("resource"))   # the audit failed, not the problem
        run.params = res.data.get("params_reinitialised", 0)
        run.prepare_s = round(res.data.get("prepare_s", 0.0), 3)
        run.perturbed_shapes = res.data.get("perturbed_shapes", [])
        from hackscan.dynamic.compare import problem_dtype

        run.dtype = problem_dtype([t.get("dtype", "") for t in run.input_spec] + res.data.get("param_dtypes", []))
        hidden = res.data.get("hidden_sets", {})
        run.hidden_sources = hidden.get("sources", {})
        run.set_seconds = dict(hidden.get("seconds", {}))
        run.drawn_on = res.data.get("sets_drawn_on", "cpu")
        run.calls_s = round(res.data.get("calls_s", 0.0), 3)
        run.skipped.update({k: f"left the problem's domain: {v}" for k, v in hidden.get("dropped", {}).items()})
        run.skipped.update({k: v for k, v in hidden.get("not_written", {}).items()})
        if res.ok:
            loaded: dict = {}
            mapped = sandbox.engine()[0] == "bwrap"
            for rec in res.data.get("steps", []):
                if "error" in rec:
                    if rec["set"] != "visible" and rec["set"] in run.skipped:
                        continue    # a set the disk could not hold is absent (the reason is kept), not a failure
                    if rec["set"] in OTHER_SIZES:
                        setattr(run, rec["set"], {"changed": {}, "error": rec["error"]})
                        continue
                    if rec["set"] not in ("visible", "visible2") and rec.get("variant") == "fp32":
                        # a hidden set the reference itself rejects proves nothing: skipped
                        run.skipped.setdefault(rec["set"], f"the reference rejects it: {rec['error'][:200]}")
                        continue
                    run.ok, run.error = False, f"reference forward failed on {rec['set']}: {rec['error']}"
                    break
                if rec["set"] == "visible" and rec.get("variant") == "fp32" and isinstance(rec.get("profile"), dict):
                    run.ops = rec["profile"].get("op_work") or {}
                changed = rec.get("input_changed") or []
                if any(changed):
                    run.writes_inputs = run.writes_inputs | {i for i, c in enumerate(changed) if c}
                if "not_kept" in rec and rec["set"] not in ("visible",):
                    run.skipped.setdefault(rec["set"], f"outputs too large to keep: {rec['not_kept'][:200]}")
                if "file" not in rec:
                    continue
                # a file two calls name (the same bytes, written once: the worker's _WRITTEN) is
                # read once and held once
                if rec["file"] not in loaded:
                    # mapped where no sandbox shows the session's folder (bubblewrap): the pages
                    # stay the file's, so a full-size problem's dozen sets in two precisions are
                    # not the auditor's own memory; read into memory under the basic engine,
                    # whose workers could write the file after this read
                    loaded[rec["file"]] = load_outputs(d / rec["file"], mapped=mapped)
                outs = loaded[rec["file"]]
                cur = run.outputs.get(rec["set"], (None, None))
                run.outputs[rec["set"]] = (outs, cur[1]) if rec["variant"] == "fp32" else (cur[0], outs)
        if run.ok:
            run.skipped.pop(AGAIN, None)
            again = run.outputs.pop(AGAIN, None)
            if again is not None and "visible" in run.outputs:
                run.nondeterministic = nondeterministic(run.outputs["visible"][0], again[0], run.dtype)
            for name, why in conditioning(run.outputs).items():
                run.skipped.setdefault(name, why)
            for name in run.skipped:
                run.outputs.pop(name, None)
            run.degenerate = degenerate(run.outputs)
            held = {id(t): t for pair in run.outputs.values() for outs in pair if outs for t in outs
                    if isinstance(t, torch.Tensor)}
            run.output_bytes = sum(int(t.numel() * t.element_size()) for t in held.values())
        # reference outputs live only in the auditor's memory from here on, and the derived seeds
        # in job.json go too: candidate workers run beside this folder and must find neither
        for f in [*d.glob("out_*"), d / "job.json"]:
            f.unlink(missing_ok=True)
        return run

    def _reference_worker(self, job: dict, ref_path: Path, key: str, d: Path, limits: Limits):
        """The reference's worker, holding its claims on the machine's ledger: its problem's
        working set in the device's memory (known from an earlier run, or a sixteenth of the
        machine's until known) and a third of the free disk. A reference whose working set is
        larger than its claim stops before drawing anything and says how large; it is run again
        once that much is free (its wait recorded), and fails only where the machine could never
        hold it (the error names the memory and both sizes). Returns the result and what was
        run again, if anything."""
        visible = self.worker_env().get("CUDA_VISIBLE_DEVICES")
        what = f"the reference run of problem {key}"
        need, rerun = self.budgets.first_claim(key), None

        def launch():
            return run_worker(job, reference_files(ref_path), limits, self.opts.device, self.worker_env(), jobdir=d)

        for attempt in range(2):
            try:
                with self.budgets.memory(need, what, visible), self.budgets.host(key, what) as cache, \
                        self.disk_budget(3, what=what) as disk:
                    job.update(memory_budget_bytes=need, disk_budget_bytes=disk,
                               disk_budget_hard=bool(self.opts.disk_budget_bytes))
                    if cache is not None:
                        job["host_cache_bytes"] = cache
                    res = self.run_on_device(launch, before_rerun=lambda: remove_tree(d))
                    if killed_from_outside(res):
                        # SIGKILL that no timeout of ours sent: the kernel's out-of-memory killer, most
                        # likely, with other audits beside it. Once more, one such rerun on the machine
                        # at a time, holding only the input set in use
                        with host_memory_turn() as waited:
                            self.budgets.note({"turn": "host-memory rerun", "waited_s": round(waited(), 3)})
                            remove_tree(d)
                            job["host_cache_bytes"] = 0
                            first = res.error
                            res = self.run_on_device(launch)
                            rerun = f"run again, one at a time, after the first run was {first.removeprefix('worker ')}"
            except (NeverFits, WaitedTooLong) as e:
                return WorkerResult(False, str(e)[:500], {"resource": True}, d, 0.0, None), rerun
            took = refused_for_memory(res.error)
            self.budgets.learn(key, took if took is not None else res.data.get("input_bytes"))
            if took is None or attempt or memory_need(took) <= need or self.opts.memory_budget_bytes:
                return res, rerun
            # larger than its first claim: once more, claiming what it said it needs
            rerun = (f"run again claiming {memory_need(took):,} bytes of memory, its inputs' {took:,} bytes "
                     f"x the working-set factor (its first claim, {need:,} bytes, was too small)")
            need = memory_need(took)
            remove_tree(d)
            d.mkdir(parents=True, exist_ok=True)
        return res, rerun


@contextlib.contextmanager
def host_memory_turn():
    """One turn at a time, machine-wide, for work rerun because the host ran out of memory: an
    exclusive lock on a file in the temporary folder that every hackscan process shares (held
    by the open file: a process that dies gives its turn back)."""
    import fcntl

    path = Path(tempfile.gettempdir()) / "hackscan-host-memory.lock"
    t0 = time.monotonic()
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        waited = time.monotonic() - t0
        try:
            yield lambda: waited
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _host_memory_bytes() -> int:
    """The host's physical memory, or 16 GiB where the system does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 16 << 30

def killed_from_outside(res: WorkerResult) -> bool:
    """A worker that SIGKILL ended while no timeout of the auditor's was due (the auditor's own
    kills come with a timeout's error): the host's out-of-memory killer, or a person."""
    return not res.ok and bool(res.error) and res.error.startswith("worker killed by SIGKILL")
