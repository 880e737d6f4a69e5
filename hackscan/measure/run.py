"""Fair measurement, auditor side: timings run in fresh workers (the reference in strict fp32
and then with TF32 in one, optionally the reference under torch.compile in another, and the
candidate alone in its own), one at a time on the device, on input sets the auditor derived from its secret seed.
The workers' records become the report through hackscan.measure.assess."""
from __future__ import annotations

import functools
import hashlib
import os
import secrets
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from hackscan.dynamic.tensorfile import input_tensors, load_outputs
from hackscan.dynamic.workdirs import remove_tree


@dataclass
class MeasureOptions:
    budget_s: float = 10.0       # per worker's timed loop
    rel: float = 0.01            # stop when the median is known to +-1% (95%)
    min_reps: int = 10
    max_reps: int = 1000
    min_time_s: float = 1.0      # of timed calls, at least (unless the budget is smaller)
    sets: int = 4                # input sets rotated
    sets_bytes_cap: int = 8 << 30   # ...fewer where they would take more (two at least)
    compile_baseline: bool = False
    check_every: int = 8


@dataclass
class Baseline:
    ok: bool
    error: str | None
    dir: Path | None
    records: dict = field(default_factory=dict)     # mode -> worker measure record
    check_outputs: dict = field(default_factory=dict)  # set index -> outputs (strict reference)
    # where the reference's measurement went: its worker's wall time, what of it ran inside the
    # worker (the rest: process start, or the wait for a started one) and the input sets' draw
    timings: dict = field(default_factory=dict)
    reported: bool = False     # its timings are in one candidate's record already
    windows: dict = field(default_factory=dict)   # its timed loops on the auditor's clock (feeder ticks)
    dtype: object = None       # the problem's lowest-precision floating dtype (its inputs'), for the checks
    # each input set's perturbation seed for checks, per problem (secret): the reference's checks
    # and every candidate's are perturbed alike, over the channel, at the check's tick
    check_seeds: dict = field(default_factory=dict)


class Measurer:
    """Belongs to a DynamicSession: its seed, limits, environment and build folders."""

    def __init__(self, session, opts: MeasureOptions | None = None):
        self.s = session
        self.opts = opts or MeasureOptions()
        self._baselines: dict[str, Baseline] = {}
        self._lock = threading.Lock()
        self._device_lock = threading.Lock()   # one timing on the device at a time
        self._limits_cache: dict | None = None
        self._users: dict[str, int] = {}       # baseline key -> measurements using its inputs now
        self._key_locks: dict[str, threading.Lock] = {}   # one baseline run per problem at a time
        # the reference's import and input sets before its turn on the device (pooled workers):
        # on a GPU only. On a CPU the device is the CPU: work beside a timing is work on it.
        # HACKSCAN_MEASURE_GATE=0 turns it off (the whole reference run inside the device lock)
        self.gate = session.opts.device == "cuda" and os.environ.get("HACKSCAN_MEASURE_GATE", "1") != "0"
        self._last: dict[str, float] = {}

    # a baseline keeps its input sets on disk for the next candidate of the same problem; a run
    # over many problems (full-size ones take several GB per set) keeps only the most recent few
    MAX_BASELINES = 6
    DISK_FLOOR = 8 << 30

    def _evict(self) -> None:
        """Called with self._lock held, before a new baseline runs: the least recently used
        baselines no measurement is using lose their folder (a problem seen again runs its
        reference timing again) while more than MAX_BASELINES are kept or less than 8 GiB of the
        disk under the session is free."""
        for k in sorted((k for k in self._baselines if not self._users.get(k)), key=lambda k: self._last.get(k, 0)):
            try:
                low = shutil.disk_usage(self.s.work).free < self.DISK_FLOOR
            except OSError:
                low = False
            if len(self._baselines) < self.MAX_BASELINES and not low:
                break
            b = self._baselines.pop(k)
            if b.dir is not None:
                remove_tree(b.dir)

    def _job(self, role, source, module, entry, mode, **extra):
        o = self.opts
        return {"role": role, "source": source, "module_name": module, "entry": entry, "device": self.s.opts.device,
                "cast_dtype": self.s.opts.dtype,
                "init_seed": self.s.derive("init"), "init_file": "init.pt", "plan": [],
                "measure": {"mode": mode, "budget_s": o.budget_s, "rel": o.rel, "min_reps": o.min_reps,
                            "max_reps": o.max_reps, "check_every": o.check_every,
                            # started workers (a CUDA context each) and the early start run beside timings
                            "device_shared": self.s.opts.prestart > 0,
                            "min_time_s": min(o.min_time_s, o.budget_s), **extra},
                **({} if getattr(self.s.opts, "guard", True) else {"guard": False})}

    def baseline(self, ref_path: Path, use: bool = False) -> Baseline:
        """The reference's timings and input sets; `use` marks them in use until release().
        One run per problem, however many candidates wait for it; runs of other problems, and
        candidates of problems whose baseline is kept, go on beside it (the device lock orders
        their timings)."""
        key = self.s.ref_key(ref_path)
        with self._lock:
            lock = self._key_locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                b = self._baselines.get(key)
                if b is not None:
                    return self._taken(key, b, use)
                self._evict()
            b = self._run_baseline(ref_path, key)
            with self._lock:
                self._baselines[key] = b
                return self._taken(key, b, use)

    def _taken(self, key: str, b: Baseline, use: bool) -> Baseline:
        """Called with self._lock held: `b` used now (marked in use where `use`: no eviction
        removes its folder until release())."""
        self._last[key] = time.monotonic()
        if use:
            self._users[key] = self._users.get(key, 0) + 1
        return b

    def release(self, ref_path: Path) -> None:
        key = self.s.ref_key(ref_path)
        with self._lock:
            self._users[key] = max(0, self._users.get(key, 0) - 1)

    def _run_baseline(self, ref_path: Path, key: str) -> Baseline:
        from hackscan.inputs.siblings import reference_files

        d = self.s.work / f"meas-ref-{key}"
        files = reference_files(ref_path)
        # the TF32 timing follows the strict one in the same worker (`then`); the compiled one,
        # which changes the model, runs in a worker of its own
        job = self._job("reference", "reference_module.py", "reference_module", "Model", "strict",
                        floor=True, calibrate=self._limits_cache is None, then=["tf32"])
        job.update(prepare=True, save_state=True, memory_budget_bytes=self.s.memory_budget(),
                   visible_seeds={f"pool{k}": self.s.derive(f"measure-pool{k}:{key}") for k in range(self.opts.sets)},
                   sets_bytes_cap=self.opts.sets_bytes_cap, sets_min=min(2, self.opts.sets))
        # a started worker where the session keeps them (its start outside the device lock)
        # ...which imports the reference and draws its sets before it asks for the device (gate)
        seeds = {k: self.s.derive(f"measure-check{k}:{key}") for k in range(self.opts.sets)}
        res = self.s.pooled_worker(job, files, self.s.worker_limits(), self.s.worker_env(), d, None, "measure",
                                   lock=self._device_lock, gate=self.gate, feeder=_clock(d, 1 << 40, seeds))
        (d / "job.json").unlink(missing_ok=True)   # the derived seeds
        if not res.ok or "measure" not in res.data:
            return Baseline(False, res.error or "the reference's measurement returned nothing", d)
        # what candidates read goes into one folder, bound read-only into their sandboxes (as the
        # audit's shared inputs are): a full-size problem's sets are on disk once, never copied
        shared = d / "shared"
        shared.mkdir(exist_ok=True)
        for f in [*d.glob("in_pool*.pt"), d / "init.pt", d / "ref_state.pt"]:
            if f.is_file():
                f.rename(shared / f.name)
        from hackscan.dynamic.compare import problem_dtype

        b = Baseline(True, None, d, {"strict": res.data["measure"]}, timings=_phases("reference", res),
                     dtype=problem_dtype(s.get("dtype", "") for s in res.data.get("input_spec", [])),
                     check_seeds=seeds)
        if res.data["measure"].get("device_limits"):
            self._limits_cache = res.data["measure"]["device_limits"]
        loaded: dict = {}   # two sets whose outputs are the same bytes name one file (the worker's _WRITTEN)
        for c in res.data["measure"].get("checks", []):
            if c.get("file"):
                if c["file"] not in loaded:
                    loaded[c["file"]] = load_outputs((res.outdir or d) / c["file"])
                b.check_outputs[c["set"]] = loaded[c["file"]]
        for name in loaded:
            ((res.outdir or d) / name).unlink(missing_ok=True)
        for mode, rec in (res.data.get("measure_then") or {}).items():
            for c in rec.get("checks", []):   # its outputs: the strict run's are the ones compared
                if c.get("file"):
                    ((res.outdir or d) / c["file"]).unlink(missing_ok=True)
            if "error" not in rec:
                b.records[mode] = rec
        # the reference's timed loops on the auditor's clock, the yardstick of the candidates'
        b.windows = res.data.get("auditor_windows_s") or {}
        if res.outdir is not None and res.outdir != d:
            remove_tree(res.outdir)   # its check outputs, read above
        modes = [("tf32", {})] + ([("compiled", {"compile": True})] if self.opts.compile_baseline else [])
        for mode, extra in modes:
            if mode in b.records:
                continue
            dm = self.s.work / f"meas-ref-{key}-{mode}"
            dm.mkdir(parents=True, exist_ok=True)
            job = self._job("reference", "reference_module.py", "reference_module", "Model",
                            "tf32" if mode == "compiled" else mode, **extra)
            job["inputs_dir"] = str(d / "shared")   # the same sets, read where they lie
            limits = self.s.worker_limits()
            limits.read_only = (str(d / "shared"),)
            # a started worker where the session keeps them, as the strict timing's: its process
            # start, torch's import and the device's context happen outside the device lock
            # the compiled one compiles before it asks for the device (`gate`): inductor's
            # compilation is CPU work of seconds to minutes that would otherwise hold the lock
            r = self.s.pooled_worker(job, files, limits, self.s.worker_env(), dm, None, "measure",
                                     lock=self._device_lock, gate=self.gate and mode == "compiled",
                                     feeder=_clock(dm, 1 << 40, b.check_seeds))
            b.timings.update(_phases(f"reference_{mode}", r))
            if r.ok and "measure" in r.data:
                b.records[mode] = r.data["measure"]
            else:
                b.records[mode] = {"error": r.error}
            remove_tree(dm)   # its outputs: not needed again
            remove_tree(Path(f"{dm}-outs"))
        return b

    def measure(self, result, cand_path: Path, ref_path: Path) -> dict:
        """The `measure` section of one candidate's result."""
        t0 = time.perf_counter()
        b = self.baseline(ref_path, use=True)
        try:
            if not b.ok:
                return {"status": "error", "reason": f"reference: {b.error}"}
            return self._measure(b, result, cand_path, t0)
        finally:
            self.release(ref_path)

    def _measure(self, b: Baseline, result, cand_path: Path, t0: float) -> dict:
        from hackscan.dynamic.builds import build_dir, triton_cache
        from hackscan.inputs.siblings import sibling_sources

        d = self.s.work / f"meas-cand-{hashlib.sha256(str(cand_path).encode()).hexdigest()[:12]}-{secrets.token_hex(3)}"
        d.mkdir(parents=True)
        shared = b.dir / "shared"
        files = {"candidate_module.py": cand_path, **{sib.name: sib for sib in sibling_sources(cand_path)}}
        job = self._job("candidate", "candidate_module.py", "candidate_module", result.entry or "ModelNew", "default")
        job["inputs_dir"] = str(shared)   # read-only in its sandbox: the sets are never copied
        if (shared / "ref_state.pt").is_file():
            job["ref_state"] = "ref_state.pt"
        bdir = build_dir(cand_path, self.s.opts.device)
        tcache = triton_cache(bdir)
        outs = next(iter(b.check_outputs.values()), [])
        limits = self.s.worker_limits(sum(int(t.numel() * t.element_size()) for t in outs if hasattr(t, "element_size")))
        limits.writable = (str(bdir), str(tcache))
        limits.read_only = (str(shared),)
        env = dict(self.s.worker_env(), TORCH_EXTENSIONS_DIR=str(bdir), TRITON_CACHE_DIR=str(tcache))
        try:
            cap = 4 * sum(int(t.numel() * t.element_size()) for o in b.check_outputs.values() for t in o
                          if hasattr(t, "element_size")) + (1 << 20)
            res = self.s.pooled_worker(job, files, limits, env, d, bdir, "measure", lock=self._device_lock,
                                       feeder=_clock(d, cap, b.check_seeds))
            return self._read(b, res, res.outdir or d, t0)
        finally:
            remove_tree(d)   # its outputs
            remove_tree(Path(f"{d}-outs"))

    def _read(self, b: Baseline, res, d: Path, t0: float) -> dict:
        from hackscan.dynamic.compare import compare_loose
        from hackscan.measure.assess import assess

        if res.data.get("tampering"):
            # its process reached for the worker while it was timed: nothing it reported counts
            return {"status": "error", "reason": "timings not counted: the candidate's process reached for the "
                    "auditor's worker: " + "; ".join(res.data["tampering"][:2])[:400],
                    "tampering": list(res.data["tampering"][:20]), "seconds": round(time.perf_counter() - t0, 3)}
        if not res.ok or "measure" not in res.data:
            return {"status": "error", "reason": f"candidate: {res.error or 'no measurement'}",
                    "seconds": round(time.perf_counter() - t0, 3)}
        rec = res.data["measure"]
        bad = []
        sets = sorted((f for f in (b.dir / "shared").glob("in_pool*.pt")), key=lambda f: int(f.stem[len("in_pool"):] or 0))

        @functools.lru_cache(maxsize=1)
        def pool_set(k: int) -> list:
            # the worker's pool, in the order it reads the sets (hackscan.dynamic.worker.measurement)
            return input_tensors(sets[k]) if 0 <= k < len(sets) else []

        for c in rec.get("checks", []):
            if not c.get("file") or c["set"] not in b.check_outputs:
                continue
            try:
                got = load_outputs(d / c["file"], "cuda" if self.s.opts.device == "cuda" else "cpu")
            except Exception as e:  # noqa: BLE001 - the candidate's process wrote it
                bad.append(f"set {c['set']}: output unreadable ({type(e).__name__})")
                continue
            # a check runs on set k perturbed with the problem's check seed for k, as the
            # reference's did; set k's own values read integer outputs as indices (top-k over
            # tied values picks either)
            cmp = compare_loose(got, b.check_outputs[c["set"]], inputs=functools.partial(pool_set, c["set"]),
                                dtype=b.dtype)
            if not cmp.ok:
                bad.append(f"set {c['set']} (iteration {c['iteration']}): {cmp.short()}")
        clock = auditor_clock(rec, b.records["strict"], res.data.get("auditor_windows_s"), b.windows)
        if clock.get("forged"):
            return {"status": "error", "reason": clock["forged"], "auditor_clock": clock,
                    "seconds": round(time.perf_counter() - t0, 3)}
        hw = (b.records["strict"].get("device_limits") or self._limits_cache or {}).get("gpu", "")
        out = assess(rec, b.records["strict"], _ok(b.records.get("tf32")), _ok(b.records.get("compiled")),
                     self._limits_cache, checks_ok=not bad if rec.get("checks") else None,
                     checks_detail="; ".join(bad)[:500], hardware=hw, device=self.s.opts.device)
        out["checks"] = {"calls": len(rec.get("checks", [])), "sets": sorted({c["set"] for c in rec.get("checks", [])}),
                         "wrong": bad[:10]}
        out["status"] = "measured" if "error" not in out else "error"
        out["auditor_clock"] = clock
        out["iterations"] = {"candidate": rec.get("iterations"), "reference_strict": b.records["strict"].get("iterations")}
        out["candidate_state"] = rec.get("state_after")
        out["seconds"] = round(time.perf_counter() - t0, 3)
        out["candidate_worker_s"] = round(res.wall_s, 3)
        # where this item's time went: the candidate's worker, and the reference's where this
        # item ran it (the first candidate of its problem); the rest is the wait for the device
        phases = _phases("candidate", res)
        with self._lock:
            if not b.reported:
                b.reported = True
                phases.update(b.timings)
        out["phases_s"] = phases
        return out


def _clock(d: Path, cap: int, check_seeds: dict | None = None):
    """A measurement worker's channel (dynamic.feeder): no plan, its timed loops ticked on the
    auditor's clock, its checks' perturbation seeds handed over at their ticks, its check outputs
    committed beside `d` within `cap` bytes."""
    from hackscan.dynamic import feeder as feeding

    if not feeding.available():
        return None
    return feeding.Feeder([], {}, Path(f"{d}-outs"), cap, check_seeds=check_seeds)


# a candidate's timing is not counted where the auditor's clock says its iterations took more than
# this many times what its process reported, beyond this much (the loop's own cost, estimated from
# the reference's loop, taken off first): a rebound timer or a report rewritten in the process
FORGED_RATIO = 3.0
FORGED_SLACK_S = 2e-4


def auditor_clock(cand: dict, ref: dict, cand_windows: dict | None, ref_windows: dict | None) -> dict:
    """The candidate's timed loop read against the auditor's own clock. Each iteration of a
    measurement worker's loop waits for the auditor's answer to its tick (dynamic.feeder), so the
    auditor's windows between ticks hold everything the iteration did. The reference's windows,
    less its reported times, give the loop's own cost per iteration (refill, flush, the tick); the
    candidate's windows less that cost bound what its calls took. A candidate whose process
    reported far less (`forged`) has its timings not counted; one without ticks is not counted
    either (nothing of the auditor's backs its numbers)."""
    from statistics import median

    out: dict = {}
    cw = ((cand_windows or {}).get("chk") or {}).get("fair") or []
    rw = ((ref_windows or {}).get("chk") or {}).get("fair") or []
    fair_c = cand.get("fair_ms") or []
    fair_r = ref.get("fair_ms") or []
    if not fair_c:
        return out
    if not cw:
        out["forged"] = ("timings not counted: the candidate's timed loop never reached the auditor's clock (its "
                         "process did not tick its iterations)")
        return out
    reported = median(fair_c) / 1e3
    window = median(cw)
    loop_cost = max(0.0, median(rw) - median(fair_r) / 1e3) if rw and fair_r else 0.0
    implied = max(0.0, window - loop_cost)
    out.update(reported_s=reported, window_s=window, loop_cost_s=loop_cost, implied_s=implied,
               windows=len(cw))
    if implied > FORGED_RATIO * reported + FORGED_SLACK_S:
        out["forged"] = (f"timings not counted: the auditor's clock gives each timed call at least {implied * 1e3:.3g} ms "
                         f"(its windows {window * 1e3:.3g} ms, less the loop's own {loop_cost * 1e3:.3g} ms); the "
                         f"candidate's process reported {reported * 1e3:.3g} ms")
    return out


def _phases(role: str, res) -> dict:
    """One measurement worker's time: its wall time, what of it its process reported (import,
    input sets, timed loops), and whether it was started ahead of its job."""
    data = res.data if isinstance(res.data, dict) else {}
    out = {f"{role}_worker_s": round(res.wall_s, 3)}
    if isinstance(data.get("total_s"), (int, float)):
        out[f"{role}_in_worker_s"] = round(data["total_s"], 3)
    for k in ("import_s", "prepare_s", "gate_wait_s"):
        if isinstance(data.get(k), (int, float)):
            out[f"{role}_{k}"] = round(data[k], 3)
    if isinstance(data.get("prestart"), dict):
        out[f"{role}_prestarted"] = True
    meas = data.get("measure") if isinstance(data.get("measure"), dict) else {}
    if isinstance(meas.get("compile_s"), (int, float)):   # torch.compile's first call (a compiled reference)
        out[f"{role}_compile_s"] = meas["compile_s"]
    return out


def _ok(rec):
    return rec if rec and "error" not in rec else None
