"""`hackscan.Session`: one auditing session kept across calls, for reward functions and evaluators
that see many candidates of the same problems.

A one-shot `hackscan.audit` starts a session, runs the problem's reference, audits, and throws
both away. A `Session` keeps them: the secret seed, each problem's reference run (outputs, hidden
sets; keyed by the reference's text, evicted least-recently-used past a dozen problems) and the
measurer. A reward call for a new candidate of a problem already seen costs only the candidate's
own workers. Several threads may call `audit` at once; at most `max_concurrent` audits run at a
time (the others wait), so a batch never oversubscribes the machine. Candidates never see the
seed or the reference's outputs: they run in their own workers, as in every audit. With
`prestart=N` (bubblewrap only) N candidate workers are kept started ahead of their jobs
(hackscan.dynamic.pool): a call does not wait for a process, torch, the device's context and
the profiler's set-up."""
from __future__ import annotations

import itertools
import tempfile
import threading
from pathlib import Path
from typing import Iterable, Iterator

from hackscan.dynamic.workdirs import remove_tree
from hackscan.engine import Options, error_result
from hackscan.findings import SubmissionResult
from hackscan.inputs.discover import Item


class Session:
    def __init__(self, *, dynamic: str = "auto", device: str = "cpu", policy: str = "kernelbench",
                 entry: str = "ModelNew", timeout_s: float = 180.0, seed: int | None = None,
                 cuda_ghost: str = "suspects", measure: bool | str = False, measure_budget_s: float = 10.0,
                 max_concurrent: int | None = None, dtype: str | None = None, gpu: int | None = None,
                 measure_min_reps: int = 10, prestart: int | None = None):
        from hackscan.scanning import check_options

        # the values the command line accepts (hackscan.config.CHOICES): ValueError naming them
        mode = check_options(dynamic=dynamic, device=device, policy=policy, cuda_ghost=cuda_ghost, measure=measure)
        self.dynamic, self.device, self.policy, self.entry = dynamic, device, policy, entry
        self.measure_mode = mode
        self._dyn_args = dict(mode=dynamic, device=device, timeout_s=timeout_s, seed=seed, policy=policy,
                              cuda_ghost=cuda_ghost, measure=mode, measure_budget_s=measure_budget_s, dtype=dtype,
                              gpu=gpu, measure_min_reps=measure_min_reps)
        if prestart is not None:   # else HACKSCAN_PRESTART, read when the dynamic session starts
            if prestart < 0:
                raise ValueError(f"prestart must be 0 or more, not {prestart!r}")
            self._dyn_args["prestart"] = prestart
        from hackscan.dynamic import check_dtype

        check_dtype(dtype)   # here, not when the first dynamic audit builds its options
        if max_concurrent is None:
            import os

            max_concurrent = 1 if device == "cuda" else max(1, (os.cpu_count() or 2) // 2)
        self.max_concurrent = max_concurrent
        self._slots = threading.BoundedSemaphore(max_concurrent)
        self._measure_lock = threading.Lock()   # a timing needs the device to itself
        self._lock = threading.Lock()
        self._tmp = Path(tempfile.mkdtemp(prefix="hackscan-session-"))
        self._refs: dict[str, Path] = {}
        self._ids = itertools.count()
        self._dyn = None
        self._gpu_q = None   # made on the first audit where several GPUs are visible
        self._closed = False

    @property
    def options(self) -> dict:
        """The options the session audits with (a copy)."""
        return dict(self._dyn_args)

    # ---- lifecycle ------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._dyn is not None:
                self._dyn.close()
                self._dyn = None
        remove_tree(self._tmp)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def reference_runs(self) -> int:
        """How many reference runs this session has made (a problem seen again reuses its run)."""
        return self._dyn.reference_runs if self._dyn is not None else 0

    def _dynamic(self):
        with self._lock:
            if self._closed:
                raise RuntimeError("this hackscan.Session is closed")
            if self._dyn is None:
                from hackscan.dynamic.audit import DynamicOptions, DynamicSession

                self._dyn = DynamicSession(DynamicOptions(**self._dyn_args))
            return self._dyn

    def _files(self, candidate, reference, text_label: str = "<candidate>") -> tuple[Path, Path | None, str]:
        from hackscan.scanning import is_path as _is_path

        n = next(self._ids)
        if _is_path(candidate):
            cand, label = Path(candidate), str(candidate)
        else:
            cand, label = self._tmp / f"candidate_{n}.py", text_label
            cand.write_text(str(candidate))
        ref = None
        if reference is not None:
            if _is_path(reference):
                ref = Path(reference)
            else:   # one file per reference text: the same problem is one reference run
                with self._lock:
                    ref = self._refs.get(str(reference))
                    if ref is None:
                        ref = self._tmp / f"reference_{len(self._refs)}.py"
                        ref.write_text(str(reference))
                        self._refs[str(reference)] = ref
        return cand, ref, label

    # ---- auditing ------------------------------------------------------------------
    def _gpu_slot(self, dyn):
        """Where several GPUs are visible, each concurrent audit's workers see one of them."""
        if len(dyn.gpus) <= 1:
            return None
        with self._lock:
            if self._gpu_q is None:
                import queue

                self._gpu_q = queue.Queue()
                for k in range(self.max_concurrent):
                    self._gpu_q.put(dyn.gpus[k % len(dyn.gpus)])
        return self._gpu_q

    def audit(self, candidate: str | Path, reference: str | Path | None = None) -> SubmissionResult:
        """Static audit, then (as the session was made) dynamic confirmation and measurement.
        `candidate` and `reference` are paths or source text; safe to call from several threads."""
        from hackscan.scanning import check_source, scan_item

        if self._closed:
            raise RuntimeError("this hackscan.Session is closed")
        check_source(candidate, "candidate")     # a path that names no file is never read as text
        if reference is not None:
            check_source(reference, "reference")
        cand, ref, label = self._files(candidate, reference)
        temp = cand.parent == self._tmp
        try:
            result = scan_item(Item(cand, ref, label), Options(policy=self.policy, entry=self.entry))
            if self.dynamic == "off" and self.measure_mode == "off":
                return result
            dyn = self._dynamic()
            if self.dynamic != "off":
                with self._slots:
                    q = self._gpu_slot(dyn)
                    gpu = q.get() if q is not None else None
                    try:
                        with dyn.on_gpu(gpu):
                            result = dyn.audit(result, cand, ref)
                    finally:
                        if q is not None:
                            q.put(gpu)
            if self.measure_mode != "off":
                result = self._measure(dyn, result, cand, ref)
            return result
        finally:
            if temp:
                cand.unlink(missing_ok=True)

    def _measure(self, dyn, result, cand, ref):
        # a timing needs the device to itself: no audit of this session runs beside it
        with self._measure_lock:
            for _ in range(self.max_concurrent):
                self._slots.acquire()
            try:
                return dyn.measure(result, cand, ref)
            finally:
                for _ in range(self.max_concurrent):
                    self._slots.release()

    def audit_many(self, pairs: Iterable[tuple[str | Path, str | Path | None]], jobs: int | None = None
                   ) -> Iterator[SubmissionResult]:
        """`audit` over (candidate, reference) pairs, `jobs` at a time (at most the session's
        bound), yielding results in input order; with measurement, every audit first and then one
        timing at a time."""
        from hackscan.scanning import check_source, scan_item

        if self._closed:
            raise RuntimeError("this hackscan.Session is closed")
        pairs = list(pairs)
        for cand_src, ref_src in pairs:   # a path that names no file is never read as text
            check_source(cand_src, "candidate")
            if ref_src is not None:
                check_source(ref_src, "reference")
        # never hold more of the session's slots than this batch has pairs
        jobs = max(1, min(jobs or self.max_concurrent, self.max_concurrent, len(pairs)))
        triples, temps, failed = [], [], {}
        for i, (cand_src, ref_src) in enumerate(pairs):
            try:
                cand, ref, label = self._files(cand_src, ref_src, f"<candidate {i}>")
                if cand.parent == self._tmp:
                    temps.append(cand)
                triples.append((scan_item(Item(cand, ref, label), Options(policy=self.policy, entry=self.entry)),
                                cand, ref))
            except Exception as e:  # noqa: BLE001 - one pair that cannot be written (a lone surrogate) is its own error
                failed[i] = error_result(f"<candidate {i}>", f"could not prepare the submission: {type(e).__name__}: {e}"[:500])
        try:
            if self.dynamic == "off" and self.measure_mode == "off":
                yield from _merged(failed, (t[0] for t in triples), len(pairs))
                return
            dyn = self._dynamic()
            taken = 0
            try:
                for _ in range(jobs):   # this batch holds `jobs` of the session's slots
                    self._slots.acquire()
                    taken += 1
                yield from _merged(failed, dyn.audit_many(triples, jobs) if triples else iter(()), len(pairs))
            finally:
                for _ in range(taken):
                    self._slots.release()
        finally:
            for t in temps:
                t.unlink(missing_ok=True)


def _merged(failed: dict, results, n: int) -> Iterator[SubmissionResult]:
    """The results of the pairs that were audited, in input order, with the ones that failed
    before their audit (`failed`, by index) in their places."""
    it = iter(results)
    for i in range(n):
        yield failed[i] if i in failed else next(it)
