"""A candidate's workers: a fresh one or one started ahead of its job (the pool), the profiled
call in a worker of its own beside the main one, the channel that serves a worker its plan and
input sets, and the outputs a worker committed, read back as files its report names."""
from __future__ import annotations


import contextlib
import os
import random
from pathlib import Path

import torch

from hackscan.dynamic import feeder as feeding
from hackscan.dynamic.planning import PROFILE_BESIDE_BYTES, PROFILE_SIDE_CALLS, PROFILE_WARM_CALL
from hackscan.dynamic.references import ReferenceRun
from hackscan.dynamic.runner import Limits, WorkerResult, run_worker
from hackscan.dynamic.tensorfile import load_outputs
from hackscan.dynamic.candidates import _built


class CandidateWorkers:
    """The candidate-worker side of a DynamicSession (a mixin)."""

    def _pooled(self, env: dict[str, str], limits: Limits, kind: str = "audit"):
        """A started worker that fits this job, or None (no pool asked for, bubblewrap not in
        use, or none fits). Two pools, each made at its first job with this session's variables
        and limits: "audit" workers run a first profiler session while they wait (the audit's
        profiled call needs CUPTI set up); "measure" workers do not (a timed process that has
        never profiled, as the reference's, so that neither CUPTI's state nor its memory enters a
        timing or a footprint), and there are at most two of them (one timing at a time)."""
        if self.opts.prestart <= 0:
            return None
        from hackscan.dynamic import pool

        # one pool per kind and GPU: a worker sees only the GPU it was started on
        key = (kind, env.get("CUDA_VISIBLE_DEVICES"))
        with self._pool_lock:
            if key not in self._pools:
                if not pool.available():
                    return None
                base = {k: v for k, v in env.items() if k not in pool.JOB_VARIABLES}
                size = self.opts.prestart if kind == "audit" else min(2, self.opts.prestart)
                self._pools[key] = pool.Pool(size, self.work, self.worker_limits(None), self.opts.device, base,
                                             profile=kind == "audit")
        return self._pools[key].take(env, limits)

    @property
    def _pool(self):
        """The first audit pool (tests and benchmarks read its counts)."""
        return next((p for (kind, _gpu), p in self._pools.items() if kind == "audit"), None)

    def pooled_worker(self, job: dict, files: dict, limits: Limits, env: dict[str, str], d: Path,
                      bdir: Path | None, kind: str = "audit", lock=None, gate: bool = False,
                      feeder=None) -> WorkerResult:
        """A worker for `job`: one started ahead of it where a pool of `kind` has one that fits
        and the job's build (if its source builds an extension) is done; else a fresh one. The
        worker's start happens outside `lock` (a measurement's device lock), its run inside.
        With `gate` (a reference's timing job, never a candidate's) a started worker also
        imports the module and draws and writes its input sets outside the lock where they are
        drawn on the CPU (sets drawn on the GPU are drawn inside it), and asks for the lock
        before it builds the model (worker.common._await_device). With `feeder` (a candidate's
        audit job), the plan and its input sets go through the auditor's channel (dynamic.feeder).
        Either way the job's folder ends up as `d`."""
        pw = self._pooled(env, limits, kind) if self.opts.prestart > 0 and _built(job, files, bdir) else None
        staged = None
        gated = gate and lock is not None and job.get("role") == "reference"
        if pw is not None:
            try:
                staged = pw.stage(dict(job, device_gate=True) if gated else job, bdir)
            except OSError:
                pw.close()
                pw = None
        if pw is not None and gated:
            res = pw.run(staged[0], files, limits, env, staged[1], gate=lock, feeder=feeder)
        else:
            with (lock if lock is not None else contextlib.nullcontext()):
                if pw is None:
                    # a file already in the job's folder (a rewritten source) is not copied onto itself
                    own = {k: v for k, v in files.items() if Path(v).resolve() != (d / k).resolve()}
                    return run_worker(job, own, limits, self.opts.device, env, jobdir=d, feeder=feeder)
                res = pw.run(staged[0], files, limits, env, staged[1], feeder=feeder)
        d.mkdir(parents=True, exist_ok=True)
        for entry in os.listdir(pw.jobdir):
            try:
                os.replace(pw.jobdir / entry, d / entry)
            except OSError:
                # what the candidate left in its folder under a name already taken in `d` by
                # another kind of file (a folder where a source lies): not the worker's report
                res.data.setdefault("events", []).append(f"left in the started worker's folder: {entry[:80]!r}")
        pw.close()
        res.jobdir = d
        res.data.setdefault("events", []).append("ran in a worker started ahead of its job")
        return res

    def _profile_side(self, plan: list[dict], problem_bytes: int) -> list[dict]:
        """The plan's profiled call and the plain call beside it (the profiler toggle's pair),
        where they go to a worker of their own; [] where they stay in the main one."""
        how = self.opts.profile_beside
        if how == "never" or (how == "gpu" and (self.opts.device != "cuda" or problem_bytes > PROFILE_BESIDE_BYTES)):
            return []
        side = [s for s in plan if s.get("op") in ("forward", "profile") and "slot" not in s
                and (s.get("set"), s.get("call", 0)) in PROFILE_SIDE_CALLS]
        return side if any(s.get("op") == "profile" for s in side) else []

    def _profile_run(self, job: dict, side_plan: list[dict], files: dict, d: Path, limits, env,
                     out_bytes: list[int], ref: ReferenceRun | None = None) -> list[dict]:
        """The profiled call in a worker of its own, after a first call that takes the candidate's
        one-time set-up (JIT compiles, autotuning, library handles) out of the profile: its step
        records, their output files moved into the main worker's folder; where the worker failed,
        one error record per call, so that the probes reading them say so."""
        sub = d.parent / f"{d.name}-profile"
        sub.mkdir()
        warm = {"op": "forward", "set": "visible", "call": PROFILE_WARM_CALL}
        sjob = dict(job, plan=[warm] + side_plan, perturb_seed=None)
        keys = {(s["set"], s.get("call", 0)) for s in side_plan}
        with self.disk_budget(8, need=sum(out_bytes) * (len(side_plan) + 3)) as disk:
            r = self.run_on_device(lambda: run_worker(
                dict(sjob, disk_budget_bytes=disk, disk_budget_hard=bool(self.opts.disk_budget_bytes)),
                files, limits, self.opts.device, env, jobdir=sub,
                feeder=self._feeder(sjob["plan"], ref, sub, f"{d.name}:profile")))
        steps = r.data.get("steps") if r.ok else None
        recs = [x for x in steps if isinstance(x, dict) and (x.get("set"), x.get("call", 0)) in keys] \
            if isinstance(steps, list) else []
        if not r.ok or {(x.get("set"), x.get("call", 0)) for x in recs if x.get("variant") == "fp32"} != keys:
            return _failed_calls(side_plan, r.error or "its report lacks a planned call")
        moved: dict = {}   # two calls whose outputs were the same bytes name one file (the worker's _WRITTEN)
        src, dst = r.outdir or sub, self.outdir_of(d)
        for x in recs:
            if "file" in x:
                try:
                    name = f"profile-{_checked_name(x['file'])}"
                    if x["file"] not in moved:
                        (src / x["file"]).replace(dst / name)
                        moved[x["file"]] = name
                    x["file"] = moved[x["file"]]
                except (ValueError, OSError) as e:
                    # the report is the candidate's process's: a file it names that is not there
                    x.pop("file")
                    x["error"] = f"the profiling worker's output is missing: {e}"[:300]
        return recs

    def _altered_calls(self, plan: list[dict], parsed, ref: ReferenceRun) -> tuple[list[dict], dict]:
        """The plan with the calls whose kernels are altered (ghost replay's poisoned writes,
        forced failure's refused launches; the probes' `kernels` steps) after every plain call and
        before the reloaded parameters, each with a seed of its own, where the candidate has
        kernels or an extension of its own to alter (else without them); and the set whose
        reference applies to each."""
        facts = parsed[1] if parsed else None
        own = bool(facts is not None and facts.py is not None and (facts.py.triton_kernels or facts.py.extensions))
        plain = [s for s in plan if not s.get("kernels")]
        if not own:
            return plain, {}
        # a call whose fresh draw the reference could not keep (no disk for it) is not made:
        # on inputs an earlier call had, a reused output buffer already holds what the kernel
        # writes again, and poisoning cannot see such writes
        moved = [dict(s, kernels_seed=self.derive(f"kernels:{s['call']}")) for s in plan
                 if s.get("kernels") and s["set"] in ref.outputs and s["set"] not in ref.skipped]
        cut = next((i for i, s in enumerate(plain) if s.get("op") == "load_params"), len(plain))
        return plain[:cut] + moved + plain[cut:], {(s["slot"], s["call"]): s["set"] for s in moved}

    @staticmethod
    def _linked_inputs(ref: ReferenceRun, d: Path) -> Path:
        """Without a channel: the problem's shared files and every input set under its name
        (`in_<set>.pt`), hard-linked into a folder beside `d`, bound read-only for the worker."""
        folder = d.parent / f"{d.name}-in"
        folder.mkdir(exist_ok=True)
        for f in ref.shared.iterdir():
            os.link(f, folder / f.name)
        for name, f in ref.set_files.items():
            os.link(f, folder / f"in_{name}.pt")
        return folder

    def _feeder(self, plan: list[dict], ref: ReferenceRun, d: Path, key: str):
        """The channel that serves a candidate worker in folder `d` its plan and input sets, one
        step at a time, and keeps its committed outputs beside `d`, out of its view
        (dynamic.feeder); None where the platform has no such channel or it is turned off."""
        if not feeding.available() or not self.opts.channel:
            return None
        return feeding.Feeder(plan, ref.set_files, self.outdir_of(d), ref.out_cap(),
                              rng=random.Random(self.derive(f"order:{key}")))

    @staticmethod
    def outdir_of(d: Path) -> Path:
        """Where a candidate worker's committed outputs go: a folder beside its own, in the
        session's work folder (never shown to a candidate's sandbox)."""
        return d.parent / f"{d.name}-outs"

    def _load_in(self, folder: Path, name):
        """An output file named by the worker's report (which the audited code can write): a
        plain file name in the worker's own folder, nothing else."""
        return self._load(folder / _checked_name(name))

    def _load(self, path: Path):
        """A candidate's saved outputs, for comparison: on the GPU when auditing on one (fp64
        comparisons of Level-1-sized outputs take seconds each on a CPU thread). The name comes
        from the worker's report, which the audited code can write: a plain name in its folder."""

        if self.opts.device == "cuda" and torch.cuda.is_available():
            return load_outputs(path, "cuda")
        return load_outputs(path)


def _failed_calls(steps: list[dict], why: str) -> list[dict]:
    """One error record per planned call of a profiling worker that failed: the probes reading
    those calls say why they have nothing."""
    return [{"set": st["set"], "call": st.get("call", 0), "variant": "fp32",
             "error": f"the profiling worker failed: {why}"[:500]} for st in steps]


def _checked_name(name) -> str:
    """A file name from a worker's report: a plain name in its own folder, nothing else."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ValueError(f"output file {str(name)[:60]!r} is not a name in the worker's folder")
    return name


def _reusing(load):
    """load(name), the last file read kept: calls whose outputs were the same bytes name one file
    (the worker's _WRITTEN), and a full-size output was read again for each of them (fifteen reads
    of 256 MiB). Each caller gets its own copies, so no probe sees another's changes."""
    last: dict = {}

    def read(name):
        if name not in last:
            last.clear()
            last[name] = load(name)
        return [t.clone() if isinstance(t, torch.Tensor) else t for t in last[name]]

    return read
