"""Dynamic confirmation of one submission: plan the probes, run the reference (once per problem)
and the candidate in separate workers, compare in the auditor, and settle each finding."""
from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
import time
from dataclasses import replace
from pathlib import Path

import torch

from hackscan.dynamic.budgets import Budgets, comparison_need
from hackscan.dynamic.probe import (Outcome, Probe)
from hackscan.dynamic import sandbox
from hackscan.dynamic import planning
from hackscan.dynamic.options import DynamicOptions, gpu_entry, prepare_threads, visible_gpus
from hackscan.dynamic.resources import Resources
from hackscan.dynamic.workers import CandidateWorkers, _reusing
from hackscan.dynamic import evidence
from hackscan.dynamic.jobs import CandidateJobs
from hackscan.dynamic.candidates import (_builds_cuda, _built)
from hackscan.dynamic.references import ReferenceRun, ReferenceRuns, killed_from_outside
from hackscan.dynamic.settle import _tampering_outcome, settle
from hackscan.inputs.record import Changed, PairRecord
from hackscan.dynamic.builds import build_dir, builds_extension
from hackscan.dynamic.runner import run_worker
from hackscan.dynamic.verdict import failed, seal
from hackscan.dynamic.workdirs import WorkDir, remove_tree, sweep
from hackscan.findings import Dynamic, Finding, Location, SubmissionResult

# the names callers import from here (the session's modules are below it)
__all__ = ["DynamicOptions", "DynamicSession", "ReferenceRun", "visible_gpus", "gpu_entry", "prepare_threads",
           "killed_from_outside"]



# measurements of a batch in flight at once where workers are started ahead (audit_many)
MEASURE_IN_FLIGHT = 3

def _read_checked(result: SubmissionResult, cand_path: Path, ref_path: Path | None) -> PairRecord:
    """The pair's record, refused (Changed) where its bytes are not what the static pass read."""
    rec = PairRecord.read(cand_path, ref_path)
    rec.check(result.source_sha256, result.reference_sha256)
    return rec


def _run_in_place(result: SubmissionResult, cand_path: Path, ref_path: Path | None) -> bool:
    """A pair whose paths are kept, not the record's copies: a GPU MODE pair (adapting it copies
    its problem folder into the session's work folder, once) or a raw C++/CUDA file (not run)."""
    from hackscan.inputs import gpumode

    return cand_path.suffix != ".py" or gpumode.is_pair(cand_path, ref_path, result.entry or "ModelNew")


class DynamicSession(ReferenceRuns, Resources, CandidateWorkers, CandidateJobs):
    """One audit's dynamic state: the secret seed and the reference runs, reused across every
    candidate of the same problem."""

    def __init__(self, opts: DynamicOptions):
        self.opts = opts
        sandbox.harden_auditor()        # no worker of this user may read this process's memory
        torch.set_flush_denormal(True)  # comparisons of denormal inputs' outputs would crawl
        torch.set_num_threads(1)        # elementwise comparisons; threads only contend here
        self.seed = opts.seed if opts.seed is not None else secrets.randbelow(2**31 - 1)
        sweep()    # the folders of auditors killed before they could remove them (full disks follow)
        self._workdir = WorkDir()
        self.work = self._workdir.path
        self._refs: dict[str, ReferenceRun] = {}
        self._ref_locks: dict[str, threading.Lock] = {}
        self._ref_users: dict[str, int] = {}       # audits holding a reference now
        self._ref_last: dict[str, float] = {}      # when each was last taken
        self._lock = threading.Lock()
        self.timings: dict[str, float] = {}
        self._measurer = None   # hackscan.measure.run.Measurer, made on the first measurement
        # one GPU per concurrent audit where several are visible: each audit's workers see only its own
        self.gpus = visible_gpus() if opts.device == "cuda" and opts.gpu is None else []
        self.pinned = gpu_entry(opts.gpu) if opts.device == "cuda" and opts.gpu is not None else None
        self._slot = threading.local()
        self._slots = None
        self._adapted: dict = {}   # (candidate, reference) -> the pair as audited (GPU MODE adapted)
        self._build_waits: dict[str, list] = {}    # a build's turn (in its own thread), for its audit's record
        # disk and memory claimed on the machine-wide ledger (every hackscan process on it); a
        # claim waits at most as long as the longest worker (a reference's) can hold one
        self.budgets = Budgets(self.work, opts.device, memory_bytes=opts.memory_budget_bytes,
                               disk_bytes=opts.disk_budget_bytes, wait_s=3 * opts.timeout_s + 60)
        self.keep_worker_dirs = False   # tests that read what a candidate wrote keep them
        self._pools: dict = {}          # (kind, GPU) -> hackscan.dynamic.pool.Pool, made at its first job
        self._pool_lock = threading.Lock()
        self.reference_runs = 0         # how many times a reference was run (not reused)
        # what each audit in flight is doing and since when (candidate path -> (stage, start)):
        # a run that gives up on slow audits says where they were
        self.stages: dict[str, tuple[str, float]] = {}
        # the pairs audited and not yet measured (submitted candidate path -> its record)
        self._records: dict[str, PairRecord] = {}

    def close(self) -> None:
        for p in list(self._pools.values()):
            p.close()
        self._workdir.close()

    def _build_beside(self, cand_path: Path):
        """A future of the candidate's extension build (seconds, -1.0 where it failed), started
        now in a thread of its own, where its source builds one and its keyed folder holds none;
        else None. A build that fails is made again by the candidate's worker, which says why."""
        # only where the session's folder is hidden from the build's worker (bubblewrap): the
        # candidate's import runs while its own problem's reference run has its files on disk
        if sandbox.engine()[0] != "bwrap" or not builds_extension(cand_path):
            return None
        try:
            bdir = build_dir(cand_path, self.opts.device)
        except OSError:
            return None
        if _built({"source": "candidate_module.py"}, {"candidate_module.py": cand_path}, bdir):
            return None
        ex = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hackscan-build")
        try:
            return ex.submit(lambda: self.prebuild([cand_path], 1)[str(cand_path)])
        finally:
            ex.shutdown(wait=False)

    def prebuild(self, paths: list[Path], jobs: int = 1) -> dict[str, float]:
        """Import each candidate once in its own worker, `jobs` at a time, so that every
        extension is compiled (in parallel) into its keyed build folder before probing."""
        def one(p: Path):
            d = self.work / f"build-{hashlib.sha256(str(p).encode()).hexdigest()[:12]}"
            bdir = build_dir(p, self.opts.device)
            limits = self.worker_limits(0)
            limits.timeout_s = max(limits.timeout_s, 600)
            limits.writable = (str(bdir),)
            # two compilers per build (torch's inline extension: the binding and the kernels),
            # within the two cores it holds: every process's builds together stay within the cores
            env = dict(self.worker_env(), TORCH_EXTENSIONS_DIR=str(bdir), MAX_JOBS="2")
            self.budgets.reset_waits()
            with self.budgets.build_slot(f"the extension build of {p.name}"):
                self._build_waits[str(p)] = self.budgets.waits()
                res = run_worker({"role": "build", "source": "candidate_module.py", "module_name": "candidate_module",
                                  "entry": "ModelNew", "import_only": True, "init_seed": 0, "plan": []},
                                 {"candidate_module.py": p}, limits, self.opts.device, env, jobdir=d)
            return str(p), res.wall_s if res.ok else -1.0

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
            return dict(ex.map(one, paths))

    @contextlib.contextmanager
    def on_gpu(self, gpu: str | None):
        """Within the block, this thread's audits run their workers on `gpu` (an entry of
        CUDA_VISIBLE_DEVICES; None: the session's default placement)."""
        self._slot.gpu = gpu
        try:
            yield
        finally:
            self._slot.gpu = None

    def audit_many(self, pairs, jobs: int = 1):
        """Audit (result, candidate path, reference path) triples, `jobs` workers at a time,
        yielding results in input order. Extension builds happen inside the workers, each in its
        own build folder, so they run in parallel too."""
        if len(self.gpus) > 1 and self._slots is None:
            import queue

            self._slots = queue.Queue()
            for k in range(max(1, jobs)):
                self._slots.put(self.gpus[k % len(self.gpus)])

        def one(p):
            result, cand, ref = p
            if self.opts.mode == "off":  # measurement only
                return result
            gpu = self._slots.get() if self._slots is not None else None
            try:
                with self.on_gpu(gpu):
                    return self.audit(result, cand, ref)
            except Exception as e:  # noqa: BLE001 - one submission's failure never stops the audit
                return failed(result, f"dynamic audit failed: {type(e).__name__}: {e}")
            finally:
                if gpu is not None:
                    self._slots.put(gpu)

        if self.opts.measure != "off":
            # measurement needs the device to itself: every audit first, then one timing at a time
            pairs = list(pairs)
            with ThreadPoolExecutor(max_workers=max(1, jobs)) as ex:
                audited = list(ex.map(one, pairs))

            def timed(k):
                try:
                    return self.measure(audited[k], pairs[k][1], pairs[k][2])
                except Exception as e:  # noqa: BLE001 - one submission's failure never stops the rest
                    return replace(audited[k], measure={"status": "error", "reason": f"{type(e).__name__}: {e}"[:500]})

            # with started workers, a few measurements in flight: the timings still one at a time
            # (the measurer's device lock), what each does before its turn (a started worker's
            # hand-over, the reference's import, its CPU-drawn sets, torch.compile) beside another's
            # timing. Without them a worker starts inside the lock: one at a time loses nothing.
            flight = min(max(1, jobs), MEASURE_IN_FLIGHT) if self.opts.prestart > 0 else 1
            if flight <= 1:
                yield from map(timed, range(len(pairs)))
                return
            with ThreadPoolExecutor(max_workers=flight) as ex:
                yield from ex.map(timed, range(len(pairs)))
            return
        if jobs <= 1:
            for p in pairs:
                yield one(p)
            return
        with ThreadPoolExecutor(max_workers=jobs) as ex:
            yield from ex.map(one, pairs)

    def measure(self, result: SubmissionResult, cand_path: Path, ref_path: Path | None) -> SubmissionResult:
        """Fair measurement of an audited candidate (hackscan.measure): speedup against the strict
        fp32 and the TF32 reference, peak memory, the physical floor and the flags. It measures
        the pair its audit recorded (or, measured without an audit, read now and checked against
        the bytes the static pass read), written into a folder of its own: never the submitter's
        paths, which may hold other bytes by now."""
        rec = self._records.pop(str(cand_path), None)
        try:
            if rec is None:
                rec = _read_checked(result, cand_path, ref_path)
        except (OSError, Changed) as e:
            return replace(result, measure={"status": "error", "reason": f"{type(e).__name__}: {e}"[:500]})
        if _run_in_place(result, cand_path, ref_path):
            return self._measure(result, cand_path, ref_path)
        d = self.work / f"msrc-{secrets.token_hex(6)}"
        try:
            return self._measure(result, *rec.write(d))
        finally:
            if not self.keep_worker_dirs:
                remove_tree(d)

    def _measure(self, result: SubmissionResult, cand_path: Path, ref_path: Path | None) -> SubmissionResult:
        from hackscan.measure.run import MeasureOptions, Measurer

        which = self.opts.measure if self.opts.measure != "off" else "survivors"
        reason = None
        try:
            cand_path, ref_path = self.adapt(cand_path, ref_path)
        except (OSError, ValueError) as e:
            return replace(result, measure={"status": "not-run", "reason": str(e)[:500]})
        if ref_path is None:
            reason = "no reference to measure against"
        elif result.verdict == "error" or (result.dynamic or {}).get("status") == "error":
            reason = "the candidate did not run"
        elif cand_path.suffix != ".py":
            reason = "raw C++/CUDA source (no Python entry point)"
        elif which == "survivors" and result.verdict not in ("clean", "suspect"):
            reason = f"verdict {result.verdict}: not measured (--measure all measures it anyway)"
        elif result.backend == "cuda" and self.opts.device != "cuda" and _builds_cuda(cand_path):
            reason = "CUDA extension: needs a GPU"
        if reason:
            return replace(result, measure={"status": "not-run", "reason": reason})
        with self._lock:
            if self._measurer is None:
                reps = max(1, self.opts.measure_min_reps)
                self._measurer = Measurer(self, MeasureOptions(budget_s=self.opts.measure_budget_s,
                                                               compile_baseline=self.opts.measure_compile,
                                                               min_reps=reps, max_reps=max(1000, reps)))
        try:
            m = self._measurer.measure(result, cand_path, ref_path)
        except Exception as e:  # noqa: BLE001 - a measurement failure never loses the audit
            m = {"status": "error", "reason": f"{type(e).__name__}: {e}"[:500]}
        if m.get("tampering"):
            # seen reaching for the worker while it was timed: a hack, whatever the audit said
            o = _tampering_outcome(m["tampering"])
            f = Finding(rule_id="probe/harness-tampering", hack_type="harness-introspection", category="dynamic",
                        severity="high", confidence="high", message=f"harness-tampering (while timed): {o.detail}",
                        location=Location(result.path, 1), snippet="", probes=("harness-tampering",), certain=True,
                        dynamic=Dynamic("confirmed", "harness-tampering", o.detail))
            return replace(result, measure=m, verdict="hacked", findings=result.findings + (f,),
                           reasons=(f"probe/harness-tampering: {o.detail}",) + tuple(result.reasons),
                           hack_types=tuple(sorted(set(result.hack_types) | {"harness-introspection"})))
        if m.get("status") == "measured":
            m["device"] = self.opts.device
            m["counted"] = bool(m.get("counted")) and result.verdict == "clean"
            if (result.dynamic or {}).get("degenerate_problem"):
                # the reference ignores its inputs: a speedup there measures nothing
                m["counted"] = False
                m.setdefault("flags", []).append({"flag": "degenerate-problem",
                                                  "detail": "the reference ignores its inputs"})
            engine, _why = sandbox.engine()
            if engine != "bwrap":
                # without root no PID namespace: a process the candidate started can outlive its
                # worker and run beside the reference's timing (slowing it) or change its files; as
                # root it dies with the worker, but no user namespace maps it, and no timing of the
                # basic engine has been checked against one of bubblewrap's: not counted either way
                m["counted"] = False
                m["not_counted"] = ("the basic sandbox: its walls were never checked to keep the candidate's processes "
                                    "from the reference's timing" if os.geteuid() == 0 else
                                    "the basic sandbox: a process the candidate started may outlive its worker "
                                    "and run beside the reference's timing")
                m.setdefault("flags", []).append({"flag": "basic-sandbox", "detail": m["not_counted"]})
        return replace(result, measure=m)

    def derive(self, what: str) -> int:
        """A seed derived from the session's secret one for `what` (the inputs' draws, the
        model's construction, a perturbation); it never leaves the auditor's process."""
        return int.from_bytes(hashlib.sha256(f"{self.seed}:{what}".encode()).digest()[:4], "little") & 0x7FFFFFFF

    def adapt(self, cand_path: Path, ref_path: Path | None) -> tuple[Path, Path | None]:
        """A GPU MODE pair as the equivalent KernelBench pair (hackscan.inputs.gpumode); any other
        pair unchanged."""
        from hackscan.inputs import gpumode

        key = (cand_path, ref_path)
        if key not in self._adapted:   # audit and measurement of one pair share the adapted files
            self._adapted[key] = (gpumode.materialize(cand_path, ref_path, self.work, self.opts.device)
                                  if gpumode.is_pair(cand_path, ref_path) else key)
        return self._adapted[key]

    def audit(self, result: SubmissionResult, cand_path: Path, ref_path: Path | None) -> SubmissionResult:
        """The dynamic verdict of one candidate. Its worker folders (inputs, outputs of every call)
        are removed once it is settled: a session auditing thousands of candidates must not keep
        their outputs on disk. Whatever raises on the way, cleanup included, gives `error` (or
        keeps a `hacked`/`violation` that stood), never the static `clean`; a `clean` no run
        verified comes out `unverified` (hackscan.dynamic.verdict)."""
        self._slot.dirs = []
        self._slot.refs = []
        self._slot.key = str(cand_path)
        self.budgets.reset_waits()
        t0 = time.perf_counter()
        submitted = cand_path   # the stage record is kept under the submitter's path
        # the name of its GPU facts' record (evidence.record_facts), where one is asked for
        self._slot.facts_name = f"{Path(cand_path).parent.name}__{Path(cand_path).stem}"
        try:
            out = self._audit(result, *self._recorded(result, cand_path, ref_path))
        except Changed as e:
            out = failed(result, str(e))
        except Exception as e:  # noqa: BLE001 - the audited code's files may be anything
            out = failed(result, f"dynamic audit failed: {type(e).__name__}: {e}")
        # the audit's own time (its waits included) and the machine's turns it took (disk,
        # memory, the GPU), each with how long it waited: audits side by side say what held them up
        if isinstance(out.dynamic, dict):
            waits = list(self.budgets.waits())
            out = replace(out, dynamic={**out.dynamic, "audit_s": round(time.perf_counter() - t0, 3),
                                        **({"waits": waits, "waited_s": round(sum(w.get("waited_s", 0.0) for w in waits), 3)}
                                           if waits else {})})
        try:
            self._cleanup(submitted)
        except Exception as e:  # noqa: BLE001 - a folder the candidate left may be anything
            out = failed(out, f"dynamic audit failed in its cleanup: {type(e).__name__}: {e}")
        return seal(out)

    def _recorded(self, result: SubmissionResult, cand_path: Path, ref_path: Path | None) -> tuple[Path, Path | None]:
        """The pair read once into a record (hackscan.inputs.record), checked against the bytes the
        static pass read, and written into a folder of this audit's: the paths every later stage
        reads. A GPU MODE pair keeps its paths (adapting it copies its problem folder into the
        session's work folder, once); a raw C++/CUDA file is not run."""
        rec = _read_checked(result, cand_path, ref_path)
        if self.opts.measure != "off":
            self._records[str(cand_path)] = rec   # the measurement, after every audit, measures these bytes
        if _run_in_place(result, cand_path, ref_path):
            return cand_path, ref_path
        d = self.work / f"src-{secrets.token_hex(6)}"
        self._slot.dirs.append(d)
        return rec.write(d)

    def _cleanup(self, cand_path: Path) -> None:
        """The end of one audit: its stage record, its worker folders and its holds on reference
        runs go, each whatever happens to the others."""
        self.stages.pop(str(cand_path), None)
        dirs, refs = getattr(self._slot, "dirs", None) or [], getattr(self._slot, "refs", None) or []
        self._slot.dirs, self._slot.refs = [], []
        for key in refs:
            self.release_reference(key)
        if self.keep_worker_dirs:
            return
        left = []
        for d in dirs:
            try:
                siblings = list(d.parent.glob(d.name + "-*"))
            except OSError:
                siblings = []
            left += [str(f) for f in [d, *siblings] if not remove_tree(f)]
        if left:
            raise OSError(f"could not remove {len(left)} worker folder(s), first {left[0]}")

    def _stage(self, name: str) -> None:
        key = getattr(self._slot, "key", None)
        if key is not None:
            self.stages[key] = (name, time.monotonic())

    def stage_of(self, cand_path) -> str | None:
        """What the audit of `cand_path` in flight is doing, and for how long, or None."""
        got = self.stages.get(str(cand_path))
        return f"{got[0]} for {time.monotonic() - got[1]:.0f} s" if got else None

    # ---- the probes asked for, and settling (hackscan.dynamic.planning, .settle) ----------------
    def select_probes(self, result: SubmissionResult) -> list[type[Probe]]:
        """The probes this audit runs on `result` (its mode's, those this device can run)."""
        return planning.select_probes(result, self.opts.mode, self.opts.device)

    def not_here(self, result: SubmissionResult) -> list[str]:
        """The probes this audit asks for and cannot run on this device."""
        return planning.not_here(result, self.opts.mode, self.opts.device)

    def _settle(self, result: SubmissionResult, outcomes: list[Outcome], info: dict,
                error: str | None = None) -> SubmissionResult:
        return settle(result, outcomes, info, self.opts.device, self.opts.policy, error)

    def _audit(self, result: SubmissionResult, cand_path: Path, ref_path: Path | None) -> SubmissionResult:
        """One pair's stages: the reference's run (or another audit's, reused) with the candidate's
        extension built beside it, the candidate's worker, the probes on what it reported, the
        verdict settled (hackscan.dynamic.jobs, .evidence, .settle)."""
        t0 = time.perf_counter()
        if result.verdict == "error":
            return result
        try:
            cand_path, ref_path = self.adapt(cand_path, ref_path)
        except (OSError, ValueError) as e:
            return replace(result, verdict="error", error=str(e)[:500], reasons=(str(e)[:500],),
                           dynamic={"status": "error", "reason": str(e)[:500]})
        probes = self.select_probes(result)
        early = self._unrunnable(result, cand_path, ref_path, probes)
        if early is not None:
            return early
        init_seed = self.derive("init")
        reused = self.has_reference(ref_path)
        # an extension not built yet is built beside the reference's run, which needs nothing of
        # the candidate's (a cold build took a minute on the H200, the reference's run 9 s)
        build_f = self._build_beside(cand_path)
        self._stage("reference run (or the wait for another audit's)")
        ref = self.reference(ref_path, init_seed)
        build_s = self._built_beside(build_f, cand_path)
        early = self._unusable(result, ref, probes)
        if early is not None:
            return early
        cj = self._candidate_job(result, cand_path, ref, probes, init_seed)
        res, main_s = self._run_candidate(cj, cand_path, ref, ref.key or self.ref_key(ref_path))
        info = evidence.run_info(res, ref, cj.facts)
        evidence.check_report(res, cj.facts)
        tamper = evidence.tampering(res, info)
        if not res.ok:
            outcomes = evidence.crashed(probes, res, tamper, cand_path, self.opts.device, info)
            return self._settle(result, outcomes, info, error=res.error)
        outdir = res.outdir or cj.folder
        load = _reusing(lambda f: self._load_in(outdir, f))
        obs = evidence.observations(res, ref, cj.facts, load)
        evidence.record_facts(res, ref, cj.facts, getattr(self._slot, "facts_name", cand_path.stem))
        self._stage("probes' comparisons")
        # the outputs read back and compared in this process: claimed as a worker's memory is
        # (an output and the reference's, and the comparison's temporaries, one set at a time)
        with self.budgets.comparing(comparison_need(cj.out_bytes, ref.dtype), f"the comparisons of {cand_path.name}"):
            t_cmp = time.perf_counter()
            outcomes = evidence.evaluate(probes, obs)
            info["timings"] = evidence.timings(res, ref, reused, build_s, main_s, time.perf_counter() - t_cmp)
            outcomes = evidence.conclude(result, outcomes, obs, res, ref, cj.facts, info, tamper, load)
        missing = self.not_here(result)
        if missing:
            # what this run could not check, said beside its verdict: a clean here is verified on
            # this device, and whose work the output is (the candidate's kernels or PyTorch's) is
            # known only where the kernels ran on a GPU
            info["not_checked"] = {"probes": missing, "why": f"they need a GPU; this audit ran on {self.opts.device}"}
        info["total_s"] = round(time.perf_counter() - t0, 3)
        return self._settle(result, outcomes, info)

    def _built_beside(self, build_f, cand_path: Path) -> float | None:
        """The seconds of the extension build started beside the reference's run (-1.0: it
        failed; the candidate's own worker builds again and says why), None where none was."""
        if build_f is None:
            return None
        self._stage("the candidate's extension build")
        try:
            build_s = round(build_f.result(), 3)
            for w in self._build_waits.pop(str(cand_path), []):   # its thread's turn, this audit's wait
                self.budgets.note(w)
            return build_s
        except Exception:  # noqa: BLE001 - the candidate's own worker builds again and says why
            return -1.0
