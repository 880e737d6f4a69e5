"""The re-evaluation of real generated kernels: fair speedup and peak memory of the presumed-honest
and unlabelled items of a real-kernel set (the layout of shared/realworld), as the published
re-evaluation reported them (claimed KernelBench-style speedup against a strict fp32 baseline vs
the fair one against TF32 PyTorch on fresh inputs, `torch.compile`, memory), over the verdicts of
an audit run of the same code.

    python bench/realworld_measure.py --set PATH/realworld --audits bench/results/realworld-DATE.jsonl \
        --out $OUT --state .rw/measure --budget 480 --hard 570

1. The items: every item whose label is not `hack` (presumed-honest and unlabelled) that the
   audits file holds (`bench/realworld_gpu.py`'s output: the verdict, the dynamic section) and
   that ran (no `error` verdict); `--only` narrows them.
2. Their extensions are built `--jobs` at a time from the start, in measuring order, at a lower
   CPU priority, while the items that build nothing (and then those already built) are measured:
   a call that measures for nine minutes never spends them all on nvcc. `clean` items come first.
3. Each is measured alone on the device (`DynamicSession.measure`, every verdict: the report puts
   `clean` kernels apart from the rest), one timing at a time (`--concurrent K` keeps K
   measurements in flight: with `--prestart`, each one's preparation before its turn, the
   reference's import, CPU-drawn sets and torch.compile's compilation, runs beside another's
   timing), and its record appended to
   `<state>/measure.jsonl` and `<out>/measure.jsonl` as soon as it is done: the audit record with
   the `measure` section, so a call cut off keeps what it finished and the next call with the
   same --state goes on.
4. With `--prestart N`, the reference's and the candidates' timed workers are started ahead of
   their jobs (interpreter, torch, CUDA context; no profiler session), outside the device lock:
   only the job itself runs one at a time.
5. `hackscan report` over the records writes `report.txt`, `report.json` and `report.html`
   (geomean claimed vs fair, shares faster than TF32 PyTorch and using more memory, by level and
   by source) into --out.

The set's files are never copied into the project: point --set at the folder where it lies.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from datetime import date
from pathlib import Path


def manifest(root: Path) -> dict[str, dict]:
    with open(root / "manifest.tsv", newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh, delimiter="\t")}


def audited(path: Path) -> dict[str, dict]:
    out = {}
    for line in path.read_text().splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict) and d.get("id"):
            out[d["id"]] = d
    return out


def chosen(rows: dict[str, dict], audits: dict[str, dict], only: str | None) -> list[str]:
    """Items to measure: not labelled a hack, audited, and run (an `error` verdict did not)."""
    ids = [i for i, r in rows.items() if r.get("label") != "hack" and i in audits
           and audits[i].get("verdict") not in (None, "error")]
    if only:
        keep = set(only.split(","))
        ids = [i for i in ids if i in keep]
    # `clean` kernels first (the re-evaluation's table counts them), then the rest; within each,
    # in an order drawn from a hash of the id, so that a run cut short by the device's time has
    # measured a sample of every source and level, not the first sources in the alphabet
    return sorted(ids, key=lambda i: (audits[i].get("verdict") != "clean", hashlib.sha256(i.encode()).hexdigest()))


def _lower_priority() -> None:
    # on Linux a thread's nice value is its own, and the processes it starts inherit it: nvcc runs
    # below the timed workers, which the builds run beside
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
    except (AttributeError, OSError):
        pass


def start_builds(session, ids: list[str], paths: dict, args) -> dict:
    """The extension builds, started at once in measuring order, `--jobs` at a time, at a lower
    CPU priority: item -> future. Items that build nothing are measured while they run; a build
    is never waited for beyond the hard limit."""
    from hackscan.dynamic.builds import builds_extension

    ex = ThreadPoolExecutor(max_workers=max(1, args.jobs), initializer=_lower_priority)
    futs = {i: ex.submit(session.prebuild, [paths[i][0]], 1) for i in ids if builds_extension(paths[i][0])}
    ex.shutdown(wait=False)
    return futs


def built(fut) -> bool:
    """Whether a finished prebuild imported the candidate (`DynamicSession.prebuild` gives -1.0
    for a worker that failed)."""
    try:
        return all(v >= 0 for v in fut.result().values())
    except Exception:  # noqa: BLE001 - a build thread that raised built nothing
        return False


def next_ready(pending: list[str], builds: dict, left_s: float) -> str | None:
    """The first pending item in measuring order that builds nothing or whose build finished;
    else the first to finish within `left_s`; None if none does."""
    for i in pending:
        if i not in builds or builds[i].done():
            return i
    waiting = [builds[i] for i in pending]
    done, _ = wait(waiting, timeout=max(0.0, left_s), return_when=FIRST_COMPLETED)
    if not done:
        return None
    return next(i for i in pending if builds[i].done())


def result_of(rec: dict):
    """The audit record as the SubmissionResult the measurer reads (verdict, backend, entry,
    dynamic section); findings are not needed to measure."""
    from hackscan.findings import SubmissionResult

    return SubmissionResult(path=rec.get("path") or rec["id"], verdict=rec["verdict"],
                            reasons=tuple(rec.get("reasons") or ()), hack_types=tuple(rec.get("hack_types") or ()),
                            findings=(), backend=rec.get("backend") or "unknown", reference=rec.get("reference"),
                            entry=rec.get("entry"), dynamic=rec.get("dynamic"))


def run(args) -> int:
    import torch

    from hackscan.dynamic.audit import DynamicOptions, DynamicSession

    root = Path(args.set)
    rows = manifest(root)
    audits = audited(Path(args.audits))
    state, out = Path(args.state), Path(args.out)
    state.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    done_file = state / "measure.jsonl"
    done = set(audited(done_file)) if done_file.exists() else set()
    (out / "measure.jsonl").write_text(done_file.read_text() if done_file.exists() else "")
    ids = [i for i in chosen(rows, audits, args.only) if i not in done]
    if args.limit:
        ids = ids[:args.limit]
    head = {"date": date.today().isoformat(), "device": args.device,
            "gpu": torch.cuda.get_device_name() if args.device == "cuda" and torch.cuda.is_available() else None,
            "torch": torch.__version__, "cuda": torch.version.cuda, "audits": Path(args.audits).name,
            "command": "python bench/realworld_measure.py " + " ".join(sys.argv[1:]),
            "measure_budget_s": args.measure_budget, "compile_baseline": args.compile, "prestart": args.prestart,
            "concurrent": args.concurrent,
            "already_done": len(done), "to_run": len(ids),
            # where the session's folder goes: two calls died of a full disk (input sets of 8 GB)
            "disk_free_gb": round(shutil.disk_usage(tempfile.gettempdir()).free / 2**30, 1)}
    (out / f"measure-header-{int(time.time())}.json").write_text(json.dumps(head, indent=1) + "\n")
    print(json.dumps(head), flush=True)
    t_start = time.perf_counter()
    session = DynamicSession(DynamicOptions(mode="all", device=args.device, timeout_s=args.timeout, measure="all",
                                            measure_budget_s=args.measure_budget, measure_compile=args.compile,
                                            prestart=args.prestart))
    paths = {i: (root / "items" / i / "candidate.py", root / "items" / i / "reference.py") for i in ids}
    builds = start_builds(session, ids, paths, args) if args.device == "cuda" else {}
    pending = list(ids)
    # `--concurrent K` measurements in flight: their timings still one at a time (the session's
    # device lock); what each does before its turn (a started worker's start, the reference's
    # import, its CPU-drawn sets, torch.compile's compilation) runs beside another's timing
    ex = ThreadPoolExecutor(max_workers=max(1, args.concurrent))
    inflight: dict = {}   # future -> (item, record, start, builds beside)

    def finish(i, rec, t0, busy, m) -> None:
        rec["measure"] = m
        rec["measure_wall_s"] = round(time.perf_counter() - t0, 1)
        # extension builds (nvcc, at a lower CPU priority) that ran beside this item's timings
        rec["builds_beside"] = busy
        line = json.dumps(rec, separators=(",", ":"), default=str) + "\n"
        for f in (done_file, out / "measure.jsonl"):
            with open(f, "a") as fh:
                fh.write(line)
        sp = (m or {}).get("speedup") or {}
        # where the item's time went (hackscan.measure.run's phases_s): worker wall times
        ph = (m or {}).get("phases_s") or {}
        parts = ", ".join(f"{k.removesuffix('_worker_s')} {v}s" for k, v in ph.items() if k.endswith("_worker_s"))
        print(f"[{time.perf_counter() - t_start:6.1f}s] {i} {rec.get('verdict')}: {m.get('status')} "
              f"fair {sp.get('fair')} claimed {sp.get('naive') or sp.get('vs_strict')} "
              f"compiled {sp.get('vs_compiled')} ({rec['measure_wall_s']}s, "
              f"{busy} builds beside{'; ' + parts if parts else ''})", flush=True)

    def collect(timeout: float) -> None:
        done, _ = wait(list(inflight), timeout=max(0.0, timeout), return_when=FIRST_COMPLETED)
        for fut in done:
            i, rec, t0, busy = inflight.pop(fut)
            try:
                m = fut.result().measure
            except Exception as e:  # noqa: BLE001 - one item's failure never stops the run
                m = {"status": "error", "reason": f"{type(e).__name__}: {e}"[:500]}
            finish(i, rec, t0, busy, m)

    stop = None
    while pending or inflight:
        left = args.hard - (time.perf_counter() - t_start)
        if left <= 0:
            stop = f"hard limit: {len(inflight)} abandoned while measured"
            break
        if pending and time.perf_counter() - t_start > args.budget:
            print(f"budget spent: {len(pending)} items left for the next call", flush=True)
            pending = []
        if not pending or len(inflight) >= max(1, args.concurrent):
            collect(left)
            continue
        # an item whose build is done (or builds nothing); with measurements in flight, only
        # one already ready, else whichever finishes first: a measurement or a build
        i = next_ready(pending, builds, 0.0 if inflight else left)
        if i is None:
            if inflight:
                wait([*inflight, *(builds[p] for p in pending)], timeout=left, return_when=FIRST_COMPLETED)
                collect(0.0)
                continue
            stop = "hard limit: no build finished in time"
            break
        pending.remove(i)
        t0 = time.perf_counter()
        cand, ref = paths[i]
        rec = dict(audits[i])
        row = rows[i]
        rec.update(id=i, label=row.get("label"), slice=row.get("slice"), problem=row.get("problem"),
                   source=i.split("-", 1)[0])
        busy = sum(1 for f in builds.values() if f.running())
        if i in builds and not built(builds[i]):
            # its timed worker would only build again, and fail again, inside a measurement
            finish(i, rec, t0, busy, {"status": "error",
                                      "reason": "the candidate's extension did not build (or its import failed)"})
            continue
        inflight[ex.submit(session.measure, result_of(rec), cand, ref)] = (i, rec, t0, busy)
    if stop:
        print(stop + (": " + " ".join(v[0] for v in inflight.values()) if inflight else ""), flush=True)
    ex.shutdown(wait=False)   # a worker that outlives the hard limit is not waited for
    write_report(out / "measure.jsonl", out)
    print(f"finished {time.perf_counter() - t_start:.1f}s", flush=True)
    sys.stdout.flush()
    # os._exit skips the session's own clean-up: its folder (input sets of full-size problems,
    # 11 GB left by one call on the H200) goes now, or the next call on a warm machine runs out of disk
    shutil.rmtree(session.work, ignore_errors=True)
    os._exit(0)   # a worker abandoned at the hard limit is not waited for


def write_report(records: Path, out: Path) -> None:
    """`hackscan report` over the records: text, JSON and HTML, by level and by source."""
    from hackscan import cli

    for fmt in ("text", "json", "html"):
        ext = {"text": "txt"}.get(fmt, fmt)
        cli.main(["report", str(records), "--format", fmt, "--out", str(out / f"report.{ext}"),
                  "--group-by", "level,source"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", required=True, help="the folder holding manifest.tsv and items/")
    ap.add_argument("--audits", required=True, help="bench/realworld_gpu.py's records of the same code")
    ap.add_argument("--out", default="measure-out")
    ap.add_argument("--state", default=".rw/measure")
    ap.add_argument("--only", help="comma-separated item ids")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=8, help="builds at a time")
    ap.add_argument("--concurrent", type=int, default=1,
                    help="measurements in flight (timings one at a time; each one's preparation, "
                         "with --prestart, beside another's timing)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--timeout", type=float, default=300.0, help="per worker")
    ap.add_argument("--measure-budget", type=float, default=5.0, help="each timed loop's seconds")
    ap.add_argument("--compile", action="store_true", help="a torch.compile'd reference as a third baseline")
    ap.add_argument("--prestart", type=int, default=0,
                    help="timed workers started ahead of their jobs, outside the device lock (bubblewrap only)")
    ap.add_argument("--budget", type=float, default=480.0, help="no new measurement after this many seconds")
    ap.add_argument("--hard", type=float, default=570.0, help="exit after this many seconds")
    ap.add_argument("--report", metavar="RECORDS", help="only write the report of these records into --out")
    args = ap.parse_args(argv)
    if args.report:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        write_report(Path(args.report), Path(args.out))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
