"""A candidate's job: whether the pair can be run here at all, what a failed or unusable
reference run means for it, the job its worker is given (the plan, the files, the limits, the
folders it may write), and its run within the machine's budgets."""
from __future__ import annotations

import hashlib
import os
import secrets
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import torch

from hackscan.dynamic import feeder as feeding
from hackscan.dynamic import planning, sandbox
from hackscan.dynamic.builds import build_dir, triton_cache
from hackscan.dynamic.candidates import _builds_cuda, _candidate_facts, _float_elems, _kernel_names
from hackscan.dynamic.evidence import PlannedRun
from hackscan.dynamic.probe import OTHER_SIZES, Outcome
from hackscan.dynamic.references import BF16_INTERPRETER, ReferenceRun
from hackscan.dynamic.runner import Limits, WorkerResult
from hackscan.dynamic.verdict import failed
from hackscan.dynamic.workers import _failed_calls
from hackscan.findings import SubmissionResult
from hackscan.hacktypes import BUILD_ENV_VARIABLES
from hackscan.inputs.siblings import sibling_sources


@dataclass
class CandidateJob:
    """One candidate worker's job and everything it runs with."""
    job: dict
    files: dict            # name in the worker's folder -> the recorded file
    folder: Path           # the audit's worker folder (removed when the audit is settled)
    bdir: Path             # the candidate's keyed extension build folder
    limits: Limits
    env: dict
    out_bytes: list        # the bytes of each of the reference's outputs on the visible inputs
    side_plan: list        # the profiled calls that run in a worker of their own beside
    facts: PlannedRun


class CandidateJobs:
    """The candidate-job side of a DynamicSession (a mixin)."""

    def _unrunnable(self, result: SubmissionResult, cand_path: Path, ref_path: Path | None,
                    probes) -> SubmissionResult | None:
        """The settled result of a pair that cannot run here (no reference, raw C++/CUDA, a CUDA
        extension without a GPU), or None."""
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
        return None

    def _unusable(self, result: SubmissionResult, ref: ReferenceRun, probes) -> SubmissionResult | None:
        """The settled result where the reference's run cannot judge the candidate (it failed, for
        want of a resource or of its own; it is not deterministic; its bfloat16 Triton twin would
        run in an interpreter that computes bfloat16 wrongly), or None."""
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
        return None

    def _candidate_job(self, result: SubmissionResult, cand_path: Path, ref: ReferenceRun, probes,
                       init_seed: int) -> CandidateJob:
        """The job of the candidate's worker: the probes' plan (with the reinitialised model's and
        the altered calls), its files, folders and limits."""
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
        for name in OTHER_SIZES:
            if not getattr(ref, name).get("changed"):
                plan = [s for s in plan if s.get("set") != name]
        states = {}
        for key, name in (("ref_state", "ref_state.pt"), ("ref_state_perturbed", "ref_state_perturbed.pt")):
            if (ref.shared / name).is_file():
                states[key] = name
        job = {"role": "candidate", "source": "candidate_module.py", "module_name": "candidate_module",
               "entry": result.entry or "ModelNew", "device": self.opts.device, "init_seed": init_seed,
               "cast_dtype": self.opts.dtype, "init_file": "init.pt", "plan": plan, "poison_sizes": out_bytes,
               "perturb_seed": perturb, "inputs_dir": str(ref.shared), "build_variables": sorted(BUILD_ENV_VARIABLES),
               **states}
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
        facts = PlannedRun(plan=plan, expected=expected, altered=altered, perturb=perturb, kernel_names=kernel_names,
                         device=self.opts.device, exposed=exposed, gpu_env=env.get("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES")))
        return CandidateJob(job=job, files=files, folder=d, bdir=bdir, limits=limits, env=env, out_bytes=out_bytes,
                            side_plan=side_plan, facts=facts)

    def _run_candidate(self, cj: CandidateJob, cand_path: Path, ref: ReferenceRun,
                       ref_key: str) -> tuple[WorkerResult, float]:
        """The candidate's worker run within the machine's memory, host-cache and disk turns (the
        profiled call beside it in a worker of its own), and the seconds the main run took."""
        job, plan = cj.job, cj.job["plan"]
        side_f = None
        if cj.side_plan:
            pool = ThreadPoolExecutor(max_workers=1)
            side_f = pool.submit(self._profile_run, job, cj.side_plan, cj.files, cj.folder, cj.limits, cj.env,
                                 cj.out_bytes, ref)
            pool.shutdown(wait=False)
        t_run = time.perf_counter()
        self._stage("candidate worker")
        calls = sum(1 for st in plan if st.get("op") in ("forward", "profile", "timing")) + 2
        need = sum(cj.out_bytes) * calls
        with self.budgets.memory(min(self.memory_budget(), self.budgets.known_need(ref_key) or 0),
                                 f"the candidate {cand_path.name}", self.worker_env().get("CUDA_VISIBLE_DEVICES")), \
                self.budgets.host(ref_key, f"the candidate {cand_path.name}") as cache, \
                self.disk_budget(8, need=need, what=f"the candidate {cand_path.name}") as disk:
            # whether its disk held an answer of the reference's size for every call: where it
            # did, outputs the worker did not keep were the candidate's doing (evidence.disk_short)
            room = disk is None or disk >= need
            res = self.run_on_device(lambda: self.pooled_worker(
                dict(job, disk_budget_bytes=disk, disk_budget_hard=bool(self.opts.disk_budget_bytes),
                     **({"host_cache_bytes": cache} if cache is not None else {})),
                cj.files, cj.limits, cj.env, cj.folder, cj.bdir,
                feeder=self._feeder(plan, ref, cj.folder, f"{cand_path}:main")))
        main_s = time.perf_counter() - t_run
        if isinstance(res.data, dict):
            res.data["disk_room"] = room    # the auditor's, written over whatever the worker reported
        if side_f is not None and res.ok and isinstance(res.data.get("steps"), list):
            try:
                res.data["steps"] += side_f.result()
            except Exception as e:  # noqa: BLE001 - the profiled calls then say why they have no record
                res.data["steps"] += _failed_calls(cj.side_plan, f"{type(e).__name__}: {e}")
        return res, main_s
