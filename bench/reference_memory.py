"""Host memory of a full-size problem's reference run: the peak resident memory of the worker
that draws the visible and hidden input sets and runs the reference on each, on the CPU.

A problem of two input tensors of R x C fp32 (`--rows`, `--cols`) whose reference is a
mean-squared error: every set is 2 R C 4 bytes and the reference run visits fifteen of them. The
worker's peak resident memory (sampled from /proc every 0.1 s: the largest VmRSS of a process
running hackscan's worker script) and the wall time are printed as JSON and written to --out.

    python bench/reference_memory.py [--rows 8192] [--cols 8192] [--out FILE]

To compare two versions in one run, call it once per checkout with PYTHONPATH pointing at
each, one after the other.
"""
from __future__ import annotations

import argparse
import json
import platform
import os
import tempfile
import textwrap
import threading
import time
from datetime import date
from pathlib import Path

PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean((predictions - targets) ** 2)

R, C = {rows}, {cols}

def get_inputs():
    return [torch.randn(R, C), torch.randn(R, C)]

def get_init_inputs():
    return []
"""


def _worker_rss() -> int:
    """The largest resident set of a process running hackscan's worker script now."""
    best = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"_worker.py" not in fh.read():
                    continue
            with open(f"/proc/{pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        best = max(best, int(line.split()[1]) * 1024)
        except OSError:
            continue
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=8192)
    ap.add_argument("--out")
    ap.add_argument("--prepare-threads", type=int, help="threads the reference worker draws its sets with "
                    "(default: the auditor's choice, half the cores up to eight)")
    args = ap.parse_args()

    import hackscan
    import hackscan.dynamic.audit as audit
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession

    if args.prepare_threads:
        audit.prepare_threads = lambda: args.prepare_threads

    with tempfile.TemporaryDirectory() as tmp:
        ref = Path(tmp) / "reference.py"
        ref.write_text(textwrap.dedent(PROBLEM.format(rows=args.rows, cols=args.cols)))
        s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=900, seed=1))
        peak = [0]
        done = threading.Event()

        def sample():
            while not done.wait(0.1):
                peak[0] = max(peak[0], _worker_rss())

        th = threading.Thread(target=sample, daemon=True)
        th.start()
        try:
            t0 = time.perf_counter()
            run = s._run_reference(ref, "bench", 0)
            wall = time.perf_counter() - t0
        finally:
            done.set()
            th.join()
            s.close()
    peak = peak[0]
    set_bytes = 2 * args.rows * args.cols * 4
    rec = {"date": date.today().isoformat(), "hackscan": hackscan.__version__, "file": hackscan.__file__,
           "machine": platform.machine(), "rows": args.rows, "cols": args.cols, "set_bytes": set_bytes,
           "reference_ok": run.ok, "error": run.error, "sets_with_outputs": len(run.outputs),
           "skipped": sorted(run.skipped), "wall_s": round(wall, 1), "worker_peak_rss_bytes": peak,
           "prepare_threads": args.prepare_threads or getattr(audit, "prepare_threads", lambda: 1)(),
           "prepare_s": run.prepare_s, "calls_s": getattr(run, "calls_s", None), "set_seconds": getattr(run, "set_seconds", None),
           "peak_in_sets": round(peak / set_bytes, 2)}
    print(json.dumps(rec, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(rec, indent=1) + "\n")


if __name__ == "__main__":
    main()
