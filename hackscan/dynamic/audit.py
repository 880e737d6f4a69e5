"""Dynamic confirmation of one submission: plan the probes, run the reference (once per problem)
and the candidate in separate workers, compare in the auditor, and settle each finding."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
import time
from dataclasses import replace
from pathlib import Path

import torch

from hackscan.dynamic.budgets import Budgets
from hackscan.dynamic.probe import (HACK_EVIDENCE_SETS, Observations, Outcome, Probe)
from hackscan.dynamic import sandbox
from hackscan.dynamic import feeder as feeding
from hackscan.hacktypes import BUILD_ENV_VARIABLES
from hackscan.dynamic import planning
from hackscan.dynamic.options import DynamicOptions, gpu_entry, prepare_threads, visible_gpus
from hackscan.dynamic.resources import Resources
from hackscan.dynamic.workers import CandidateWorkers, _failed_calls, _reusing
from hackscan.dynamic.candidates import (_architecture_hint, _builds_cuda, _built, _candidate_facts, _float_elems,
                                        _kernel_names, _unreported)
from hackscan.dynamic.references import BF16_INTERPRETER, ReferenceRun, ReferenceRuns, killed_from_outside
from hackscan.dynamic.settle import _tampering_outcome, on_degenerate, qualify, settle
from hackscan.inputs.record import Changed, PairRecord
from hackscan.dynamic.builds import build_dir, builds_extension, triton_cache
from hackscan.dynamic.runner import run_worker
from hackscan.dynamic.verdict import failed, seal
from hackscan.dynamic.workdirs import WorkDir, remove_tree, sweep
from hackscan.inputs.siblings import sibling_sources
from hackscan.dynamic.tensorfile import input_tensors
from hackscan.findings import Dynamic, Finding, Location, SubmissionResult

# the names callers import from here (the session's modules are below it)
__all__ = ["DynamicOptions", "DynamicSession", "ReferenceRun", "visible_gpus", "gpu_entry", "prepare_threads",
           "killed_from_outside"]



# measurements of a batch in flight at once where workers are started ahead (audit_many)
MEASURE_IN_FLIGHT = 3


class DynamicSession(ReferenceRuns, Resources, CandidateWorkers):
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
        fp32 and the TF32 reference, peak memory, the physical floor and the flags."""
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
        try:
            cand_path, ref_path = self._recorded(result, cand_path, ref_path)
            out = self._audit(result, cand_path, ref_path)
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
            self._cleanup(cand_path)
        except Exception as e:  # noqa: BLE001 - a folder the candidate left may be anything
            out = failed(out, f"dynamic audit failed in its cleanup: {type(e).__name__}: {e}")
        return seal(out)

    def _recorded(self, result: SubmissionResult, cand_path: Path, ref_path: Path | None) -> tuple[Path, Path | None]:
        """The pair read once into a record (hackscan.inputs.record), checked against the bytes the
        static pass read, and written into a folder of this audit's: the paths every later stage
        reads. A GPU MODE pair keeps its paths (adapting it copies its problem folder into the
        session's work folder, once); a raw C++/CUDA file is not run."""
        from hackscan.inputs import gpumode

        rec = PairRecord.read(cand_path, ref_path)
        rec.check(result.source_sha256, result.reference_sha256)
        if cand_path.suffix != ".py" or gpumode.is_pair(cand_path, ref_path, result.entry or "ModelNew"):
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
        t0 = time.perf_counter()
        if result.verdict == "error":
            return result
        try:
            cand_path, ref_path = self.adapt(cand_path, ref_path)
        except (OSError, ValueError) as e:
            return replace(result, verdict="error", error=str(e)[:500], reasons=(str(e)[:500],),
                           dynamic={"status": "error", "reason": str(e)[:500]})
        probes = self.select_probes(result)
        if ref_path is None:
            return self._settle(result, [Outcome(p.name, "inconclusive", "no reference to compare with") for p in probes],
                                {"status": "inconclusive", "reason": "no reference"})
        if cand_path.suffix != ".py":
            return self._settle(result, [Outcome(p.name, "inconclusive", "raw C++/CUDA source: running it needs a "
                                                 "binding map to a Python entry point") for p in probes],
                                {"status": "inconclusive", "reason": "raw C++/CUDA source (no Python entry point)"})
        if result.backend == "cuda" and self.opts.device != "cuda" and _builds_cuda(cand_path):
            return self._settle(result, [Outcome(p.name, "inconclusive", "CUDA extension: needs a GPU") for p in probes],
                                {"status": "inconclusive", "reason": "the candidate builds a CUDA extension; no GPU here"})
        init_seed = self.derive("init")
        reused = self.has_reference(ref_path)
        # an extension not built yet is built beside the reference's run, which needs nothing of
        # the candidate's (a cold build took a minute on the H200, the reference's run 9 s)
        build_f = self._build_beside(cand_path)
        self._stage("reference run (or the wait for another audit's)")
        ref = self.reference(ref_path, init_seed)
        build_s = None
        if build_f is not None:
            self._stage("the candidate's extension build")
            try:
                build_s = round(build_f.result(), 3)
                for w in self._build_waits.pop(str(cand_path), []):   # its thread's turn, this audit's wait
                    self.budgets.note(w)
            except Exception:  # noqa: BLE001 - the candidate's own worker builds again and says why
                build_s = -1.0
        if not ref.ok and ref.resource_error:
            return failed(result, f"dynamic audit failed: {ref.error}")
        if not ref.ok:
            return self._settle(result, [Outcome(p.name, "inconclusive", f"reference run failed: {ref.error}") for p in probes],
                                {"status": "inconclusive", "reason": f"reference: {ref.error}"})
        if ref.nondeterministic:
            why = (f"the reference is not deterministic: {ref.nondeterministic}; no comparison with it can tell "
                   "a cheat from another draw")
            outcomes = [Outcome(p.name, "inconclusive", why) for p in probes]
            outcomes.append(Outcome("nondeterministic-reference", "caught", ref.nondeterministic + ": correctness "
                                    "against this reference means nothing (KernelBench runs the candidate after "
                                    "the reference, on another state of the random generator)",
                                    hack_type="nondeterministic-reference", severity="low"))
            return self._settle(result, outcomes, {"status": "inconclusive", "reason": why,
                                                   "nondeterministic_reference": ref.nondeterministic})
        if self.opts.device == "cpu" and result.backend == "triton" and ref.dtype == torch.bfloat16:
            # TRITON_INTERPRET=1 (triton 3.x) turns a correct kernel's bfloat16 arithmetic into
            # garbage and NaN: a run there would convict an honest kernel
            why = (f"{BF16_INTERPRETER}: Triton's CPU interpreter computes bfloat16 arithmetic wrongly; "
                   "audit this kernel on a GPU")
            return self._settle(result, [Outcome(p.name, "inconclusive", why) for p in probes],
                                {"status": "inconclusive", "reason": why})
        plan, expected = planning.plan(probes)
        perturb = None
        if any(p.needs_reinit_runs for p in probes):
            if "reinit" in ref.outputs:
                perturb = self.derive("perturb")   # the candidate builds a second model, perturbed as made
                expected[("reinit", 300)] = "reinit"
            if ref.params and "reinit_post" in ref.outputs:
                plan += [{"op": "load_params", "file": "params.pt"},
                         {"op": "forward", "set": "visible", "slot": "reinit_post", "call": 301}]
                expected[("reinit_post", 301)] = "reinit_post"
        plan = [s for s in plan if s.get("set") not in ref.skipped and s.get("from") not in ref.skipped]
        parsed = _candidate_facts(cand_path, result.entry or "ModelNew")
        kernel_names = _kernel_names(parsed)
        plan, altered = self._altered_calls(plan, parsed, ref)
        expected.update(altered)
        out_bytes = [int(t.numel() * t.element_size()) for t in ref.outputs.get("visible", ([], None))[0]
                     if isinstance(t, torch.Tensor)]
        for s in plan:
            if s.get("sizes") == "OUTPUT_BYTES":
                s["sizes"] = out_bytes
        d = self.work / f"cand-{hashlib.sha256(str(cand_path).encode()).hexdigest()[:12]}-{secrets.token_hex(3)}"
        d.mkdir(parents=True)
        if getattr(self._slot, "dirs", None) is not None:
            self._slot.dirs.append(d)
        files = {"candidate_module.py": cand_path, **{sib.name: sib for sib in sibling_sources(cand_path)}}
        if not ref.other_shape.get("changed"):
            plan = [s for s in plan if s.get("set") != "other_shape"]
        states = {}
        for key, name in (("ref_state", "ref_state.pt"), ("ref_state_perturbed", "ref_state_perturbed.pt")):
            if (ref.shared / name).is_file():
                states[key] = name
        job = {"role": "candidate", "source": "candidate_module.py", "module_name": "candidate_module",
               "entry": result.entry or "ModelNew", "device": self.opts.device, "init_seed": init_seed,
               "cast_dtype": self.opts.dtype, "init_file": "init.pt", "plan": plan, "poison_sizes": out_bytes, "perturb_seed": perturb,
               "inputs_dir": str(ref.shared), "build_variables": sorted(BUILD_ENV_VARIABLES), **states}
        if not self.opts.guard:
            job["guard"] = False
        bdir = build_dir(cand_path, self.opts.device)
        tcache = triton_cache(bdir)
        limits = self.worker_limits(sum(out_bytes))
        limits.writable = (str(bdir), str(tcache))
        limits.read_only = (str(ref.shared),)
        exposed = feeding.exposed(sandbox.engine()[0]) if self.opts.channel else \
            "the channel was turned off: every input set was a file the candidate's worker could read"
        if not self.opts.channel or not feeding.available():
            # no channel: the sets as files, under their names, in a folder of links of this audit's
            job["inputs_dir"] = str(self._linked_inputs(ref, d))
            limits.read_only = (job["inputs_dir"],)
        env = dict(self.worker_env(), TORCH_EXTENSIONS_DIR=str(bdir), TRITON_CACHE_DIR=str(tcache))
        # the profiled call runs beside the main run where it goes to a worker of its own
        side_plan = self._profile_side(plan, sum(out_bytes) + 4 * _float_elems(ref.input_spec))
        if side_plan:
            plan = [s for s in plan if s not in side_plan]
            job["plan"] = plan
        side_f = None
        if side_plan:
            pool = ThreadPoolExecutor(max_workers=1)
            side_f = pool.submit(self._profile_run, job, side_plan, files, d, limits, env, out_bytes, ref)
            pool.shutdown(wait=False)
        t_run = time.perf_counter()
        self._stage("candidate worker")
        calls = sum(1 for st in plan if st.get("op") in ("forward", "profile", "timing")) + 2
        ref_key = ref.key or self.ref_key(ref_path)
        with self.budgets.memory(min(self.memory_budget(), self.budgets.known_need(ref_key) or 0),
                                 f"the candidate {cand_path.name}", self.worker_env().get("CUDA_VISIBLE_DEVICES")), \
                self.budgets.host(ref_key, f"the candidate {cand_path.name}") as cache, \
                self.disk_budget(8, need=sum(out_bytes) * calls, what=f"the candidate {cand_path.name}") as disk:
            res = self.run_on_device(lambda: self.pooled_worker(
                dict(job, disk_budget_bytes=disk, disk_budget_hard=bool(self.opts.disk_budget_bytes),
                     **({"host_cache_bytes": cache} if cache is not None else {})),
                files, limits, env, d, bdir, feeder=self._feeder(job["plan"], ref, d, f"{cand_path}:main")))
        t_main = time.perf_counter() - t_run
        if side_f is not None and res.ok and isinstance(res.data.get("steps"), list):
            try:
                res.data["steps"] += side_f.result()
            except Exception as e:  # noqa: BLE001 - the profiled calls then say why they have no record
                res.data["steps"] += _failed_calls(side_plan, f"{type(e).__name__}: {e}")
        info = {"status": "ran", "seed_hidden": True, "protections": res.protections,
                # the hidden sets were files the candidate's process could read (no channel, or a
                # sandbox that cannot hide the session's folder): nothing it answered is verified
                **({"hidden_inputs_exposed": exposed} if exposed else {}),
                "candidate_wall_s": round(res.wall_s, 3), "reference_wall_s": round(ref.seconds, 3),
                "torch": res.data.get("torch"),
                # a worker started ahead of its job: what its warm-up took, and whether its first
                # profiler session saw the kernel it ran (hackscan.dynamic.worker.prestart)
                **({"prestarted": res.data["prestart"]} if isinstance(res.data.get("prestart"), dict) else {}),
                # placement: the GPU the auditor gave this audit, and the one its worker reported
                **({"gpu": {"assigned": env.get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES")),
                            "worker": res.data.get("gpu")}} if self.opts.device == "cuda" else {}),
                # the evidence behind the hidden sets: how the problem's generator drew each one,
                # and which prove nothing here (with the reason)
                "hidden_sets": {"skipped": dict(ref.skipped), "drawn": dict(ref.hidden_sources),
                                "drawn_on": ref.drawn_on,
                                "problem_dtype": str(ref.dtype).replace("torch.", "") if ref.dtype else None}}
        if res.ok:
            missing = _unreported(plan, perturb, res.data.get("steps"))
            if missing:
                # the report is the candidate's process's: a call it does not account for is a
                # tampered result channel or a worker stopped early, never a pass
                res.ok, res.error = False, (f"the worker's report accounts for {missing[1] - missing[0]} of "
                                            f"{missing[1]} planned calls: its result was cut or rewritten")
        fwd = [r for r in res.data.get("steps", []) if isinstance(r, dict) and r.get("variant") == "fp32"]
        if res.ok and fwd and all("error" in r for r in fwd):
            res.ok, res.error = False, f"forward raised on every call: {fwd[0]['error'][:300]}"
        tampering = list(res.data.get("tampering") or [])
        tamper = _tampering_outcome(tampering)
        if tamper is not None:
            info["tampering"] = tampering[:20]
        if not res.ok:
            hint = _architecture_hint(res.error, cand_path, self.opts.device)
            if hint:
                res.error = f"{res.error}; {hint}"
            outcome = planning.crash_outcomes(probes, res) + ([tamper] if tamper is not None else [])
            info.update(status="error", reason=res.error)
            if isinstance(res.data.get("traceback"), str):
                # where the candidate's process failed (its own words: evidence to read, never a verdict)
                info["traceback_tail"] = res.data["traceback"][-1200:]
            return self._settle(result, outcome, info, error=res.error)
        res.data["other_shape"] = ref.other_shape
        outdir = res.outdir or d
        recs = {(r["set"], r.get("call", 0)): r for r in res.data.get("steps", [])}
        obs = Observations(candidate=res.data, steps={k: r for k, r in recs.items() if k not in altered},
                           altered={k: r for k, r in recs.items() if k in altered},
                           load_output=_reusing(lambda f: self._load_in(outdir, f)), reference_outputs=ref.outputs,
                           expected_set=expected, kernel_names=kernel_names,
                           input_elems=_float_elems(ref.input_spec), reference_writes=ref.writes_inputs,
                           dtype=ref.dtype, skipped=ref.skipped, reference_perturbed=ref.perturbed_shapes,
                           device=self.opts.device,
                           load_inputs=functools.lru_cache(maxsize=2)(lambda s: input_tensors(ref.set_files[s])))
        self._stage("probes' comparisons")
        outcomes = []
        t_cmp = time.perf_counter()
        for p in probes:
            try:
                outcomes.append(p().evaluate(obs))
            except Exception as e:  # noqa: BLE001 - a probe bug must not lose the audit
                outcomes.append(Outcome(p.name, "error", f"probe failed: {type(e).__name__}: {e}"))
        info["timings"] = {
            "reference_s": round(ref.seconds, 3) if not reused else 0.0,
            "reference_inputs_s": ref.prepare_s if not reused else 0.0,
            **({"reference_calls_s": ref.calls_s,
                "reference_slowest_sets_s": dict(sorted(ref.set_seconds.items(), key=lambda kv: -kv[1])[:4])}
               if not reused else {}),
            **({"reference_rerun": ref.rerun} if ref.rerun and not reused else {}),
            # the extension's build beside the reference's run (-1: it failed there; the
            # candidate's worker then built it again)
            **({"candidate_build_beside_s": build_s} if build_s is not None else {}),
            "candidate_worker_s": round(t_main, 3), "candidate_import_s": round(res.data.get("import_s", 0.0), 3),
            "candidate_calls_s": round(res.data.get("calls_s", 0.0), 3),
            "comparisons_s": round(time.perf_counter() - t_cmp, 3), "reference_reused": reused,
            "calls": len(res.data.get("steps", [])),
            "slowest_calls_s": {f"{r['set']}#{r.get('call', 0)}/{r.get('variant')}": round(r["step_s"], 3)
                                for r in sorted(res.data.get("steps", []), key=lambda r: -r.get("step_s", 0))[:4]
                                if "step_s" in r}}
        vis = obs.compare("visible") or obs.compare("fresh", 100)
        info["correct_on_visible"] = bool(vis and vis.ok)
        # the other distributions the candidate was compared on (the hidden sets that are evidence
        # of a hack): none where every one was skipped (no disk for them, none in the problem's
        # domain), and then the audit checked the benchmark's own distribution only
        info["hidden_sets_compared"] = [v for v in HACK_EVIDENCE_SETS if obs.compare(v) is not None]
        # False: no output on the visible inputs could be compared (not kept for want of disk, on
        # either side): correct_on_visible then says nothing of the candidate
        info["visible_compared"] = vis is not None
        # the problem's own generator, freshly seeded (KernelBench's correctness trials)
        trials = [c for c in (obs.compare(n) for n in ("visible", "visible2")) if c is not None]
        info["visible_trials"] = [sum(1 for c in trials if c.ok), len(trials)]
        if vis is not None and not vis.structural:
            info["visible_difference"] = {"max_abs": vis.max_abs, "mean_abs": vis.mean_abs, "max_rel": vis.max_rel,
                                          "bad_fraction": vis.bad_fraction}
        vrec = obs.steps.get(("visible", 0)) or obs.steps.get(("fresh", 100)) or {}
        launches = None
        if res.data.get("launch_trace") and result.backend in ("triton", "cuda"):
            launches = info["custom_launches_on_visible"] = vrec.get("custom_launches")
        loose_ok = False
        if vis is not None and not vis.ok and "file" in vrec and "visible" in ref.outputs:
            # would the benchmark's own check (allclose, atol = rtol = 1e-2) have passed it?
            from hackscan.dynamic.compare import compare_loose

            try:
                loose_ok = compare_loose(self._load_in(outdir, vrec["file"]), ref.outputs["visible"][0]).ok
            except Exception:  # noqa: BLE001 - an unreadable output passes nothing
                loose_ok = False
            info["passes_benchmark_check"] = loose_ok
        from hackscan.findings import severity_rank
        from hackscan.hacktypes import CHEAT, family

        static_cheat = any(family(f.hack_type) == CHEAT and severity_rank(f.severity) >= severity_rank("medium")
                           for f in result.findings)
        outcomes = qualify(outcomes, vis, launches, self.opts.device, info, loose_ok, static_cheat)
        if tamper is not None:
            outcomes.append(tamper)
        if ref.degenerate:
            info["degenerate_problem"] = ref.degenerate
            outcomes = on_degenerate(outcomes)
            outcomes.append(Outcome("degenerate-problem", "caught", ref.degenerate + ": any speedup on this problem "
                                    "is meaningless, and a constant output passes it", hack_type="degenerate-problem",
                                    severity="low"))
        missing = self.not_here(result)
        if missing:
            # what this run could not check, said beside its verdict: a clean here is verified on
            # this device, and whose work the output is (the candidate's kernels or PyTorch's) is
            # known only where the kernels ran on a GPU
            info["not_checked"] = {"probes": missing, "why": f"they need a GPU; this audit ran on {self.opts.device}"}
        info["total_s"] = round(time.perf_counter() - t0, 3)
        return self._settle(result, outcomes, info)
