"""Latency of a reward call: one-shot `hackscan.audit` against a kept `hackscan.Session`.

For N candidates of one problem (the corpus's Triton ReLU and PyTorch ReLU look-alikes and hacks,
cycled), times each call both ways in one run: the one-shot call starts a session and runs the
problem's reference every time; the session runs it on its first call only. Prints and writes
per-call wall times (median, first, rest) and their ratio.

    python bench/session_latency.py [--n 6] [--device cpu] [--dynamic all] [--prestart 3] [--out bench/results]

With --prestart N, a third pass keeps a session with N candidate workers started ahead of their
jobs (bubblewrap only), in the same run.

On the CPU, Triton kernels run under TRITON_INTERPRET=1 (set here when the device is cpu).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus" / "synthetic"
CANDIDATES = ["legit/triton_relu.py", "legit/threading_lock_block_table.py", "legit/get_inputs_shim_from_reference.py",
              "legit/triton_jit_helper_stores.py"]
REFERENCE = ROOT / "corpus" / "problems" / "relu.py"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=6)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dynamic", default="all")
    ap.add_argument("--prestart", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    if args.device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    import hackscan

    ref = REFERENCE.read_text()
    cands = [(CORPUS / CANDIDATES[i % len(CANDIDATES)]).read_text() for i in range(args.n)]
    one_shot, kept, verdicts = [], [], []
    for c in cands:
        t0 = time.perf_counter()
        r = hackscan.audit(c, ref, dynamic=args.dynamic, device=args.device)
        one_shot.append(time.perf_counter() - t0)
        verdicts.append(r.verdict)
    with hackscan.Session(dynamic=args.dynamic, device=args.device) as s:
        for c in cands:
            t0 = time.perf_counter()
            r = s.audit(c, ref)
            kept.append(time.perf_counter() - t0)
            verdicts.append(r.verdict)
        runs = s.reference_runs
    started = []
    if args.prestart:
        with hackscan.Session(dynamic=args.dynamic, device=args.device, prestart=args.prestart) as s:
            for c in cands:
                t0 = time.perf_counter()
                r = s.audit(c, ref)
                started.append(time.perf_counter() - t0)
                verdicts.append(r.verdict)
    rec = {"date": date.today().isoformat(),
           "command": "python bench/session_latency.py " + " ".join(sys.argv[1:]),
           "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
           "device": args.device, "dynamic": args.dynamic, "calls": args.n,
           "one_shot_s": [round(x, 2) for x in one_shot], "session_s": [round(x, 2) for x in kept],
           "one_shot_median_s": round(statistics.median(one_shot), 2),
           "session_first_s": round(kept[0], 2),
           "session_rest_median_s": round(statistics.median(kept[1:]), 2) if len(kept) > 1 else None,
           "session_reference_runs": runs, "verdicts": sorted(set(verdicts))}
    if started:
        rec.update(prestart=args.prestart, prestart_session_s=[round(x, 2) for x in started],
                   prestart_first_s=round(started[0], 2),
                   prestart_rest_median_s=round(statistics.median(started[1:]), 2) if len(started) > 1 else None)
    if rec["session_rest_median_s"]:
        rec["one_shot_over_session_rest"] = round(rec["one_shot_median_s"] / rec["session_rest_median_s"], 2)
    text = json.dumps(rec, indent=1)
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"session-latency-{rec['date']}-{args.device}.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
