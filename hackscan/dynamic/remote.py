"""Dynamic audits as Ray tasks (`--backend ray`): candidates ordered by problem and cut into
tasks of at most CHUNK, so each task runs each of its problems' references once; each task holds
a GPU (on CUDA) and runs in a fresh Ray worker process. Inside the task the audit is the local one: every candidate
and reference still runs in its own isolated worker subprocess, never in the Ray worker.

The secret seed travels to the tasks (auditor processes), never to the audited code; the paths
must be readable where the tasks run (a local instance, or a cluster with a shared filesystem)."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

from hackscan.dynamic.verdict import failed
from hackscan.findings import SubmissionResult

CHUNK = 8   # candidates per task: larger reuses the reference more, smaller balances better


def audit_chunk(args) -> list[SubmissionResult]:
    """One task: (DynamicOptions, [(static result, candidate path, reference path)], jobs)."""
    opts, triples, jobs = args
    from hackscan.dynamic.audit import DynamicSession

    session = DynamicSession(opts)
    try:
        return list(session.audit_many([(r, Path(c), Path(f) if f else None) for r, c, f in triples], jobs))
    finally:
        session.close()


def _problem(ref: Path | None) -> str:
    """The problem a reference stands for, keyed as the session keys its reference runs."""
    from hackscan.dynamic.audit import DynamicSession

    if ref is None:
        return ""
    try:
        return DynamicSession.ref_key(ref)
    except OSError:
        return str(ref)


def audit_many_ray(backend, opts, triples: list, jobs_per_task: int = 1,
                   chunk: int = CHUNK) -> Iterator[SubmissionResult]:
    """Like DynamicSession.audit_many, over Ray tasks; results in input order (each yielded as
    soon as it and everything before it are done)."""
    from hackscan.parallel import BatchFailure

    groups: dict[str, list[int]] = {}
    for i, (_, _, ref) in enumerate(triples):
        groups.setdefault(_problem(ref), []).append(i)
    # candidates ordered by problem, cut into tasks of `size`: a problem's candidates stay together
    # (its reference runs once per task), and small problems share a task (each task pays a fresh
    # process and its imports), with at least two tasks per slot to balance the load
    order = [i for idx in groups.values() for i in idx]
    size = max(1, min(chunk, -(-len(order) // (2 * max(1, backend.jobs)))))
    tasks = []
    for k in range(0, len(order), size):
        part = order[k:k + size]
        tasks.append((part, [(triples[i][0], str(triples[i][1]), str(triples[i][2]) if triples[i][2] else None)
                             for i in part]))
    done: dict[int, SubmissionResult] = {}
    nxt = 0
    args = ((opts, payload, jobs_per_task) for _, payload in tasks)
    for (part, _), (_, res) in zip(tasks, backend.map(audit_chunk, args)):
        for j, i in enumerate(part):
            if isinstance(res, BatchFailure):
                # the task never came back: its audits did not happen, whatever the static pass said
                done[i] = failed(triples[i][0], f"dynamic audit failed: its Ray task failed: {res.reason}")
            elif not isinstance(res, list) or j >= len(res) or not isinstance(res[j], SubmissionResult):
                done[i] = failed(triples[i][0], "dynamic audit failed: its Ray task returned no result for it")
            else:
                done[i] = res[j]
        while nxt in done:
            yield done.pop(nxt)
            nxt += 1
    while nxt < len(triples):  # unreachable unless a task returned fewer results
        yield done.pop(nxt, None) or failed(triples[nxt][0], "dynamic audit failed: its result was lost")
        nxt += 1
