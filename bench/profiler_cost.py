"""Where the one profiled forward's cost goes (GPU): a torch.profiler session's start, the call,
its stop and reading kineto's events, in fresh processes; and whether preparing the profiler in
a background thread at worker start hides the start-up.

    python bench/profiler_cost.py --out $OUT/profiler-cost.json
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

CASE = r'''
import json, sys, threading, time
import torch
from torch.profiler import ProfilerActivity, profile
case = sys.argv[1]
t = {}
t0 = time.perf_counter(); torch.zeros(1, device="cuda"); torch.cuda.synchronize(); t["cuda_init_s"] = time.perf_counter() - t0
x = torch.rand(4096, 4096, device="cuda")
acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]

def calls(n):
    t0 = time.perf_counter()
    for _ in range(n):
        torch.relu(x)
    torch.cuda.synchronize()
    return time.perf_counter() - t0

def session(p, prepared=False):
    r = {}
    t0 = time.perf_counter()
    if prepared:
        p.start_trace()
    else:
        p.__enter__()
    r["enter_s"] = time.perf_counter() - t0
    t0 = time.perf_counter(); torch.relu(x); torch.cuda.synchronize(); r["call_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    if prepared:
        p.stop_trace()
    else:
        p.__exit__(None, None, None)
    r["exit_s"] = time.perf_counter() - t0
    t0 = time.perf_counter(); ev = list(p.profiler.kineto_results.events()); r["read_s"] = time.perf_counter() - t0
    r["events"] = len(ev)
    return r

if case == "plain":
    t["calls20_s"] = calls(20)
    t["first"] = session(profile(activities=acts))
    t["second"] = session(profile(activities=acts))
elif case == "prepared-thread":
    p = profile(activities=acts)
    th = threading.Thread(target=p.prepare_trace)
    t0 = time.perf_counter(); th.start()
    t["calls20_s"] = calls(20)
    th.join(); t["prepare_wait_s"] = time.perf_counter() - t0
    t["first"] = session(p, prepared=True)
elif case == "prepared-sync":
    p = profile(activities=acts)
    t0 = time.perf_counter(); p.prepare_trace(); t["prepare_s"] = time.perf_counter() - t0
    t["calls20_s"] = calls(20)
    t["first"] = session(p, prepared=True)
print("RESULT" + json.dumps(t))
'''


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    import torch

    rows = []
    for rep in range(args.repeat):
        for case in ("plain", "prepared-sync", "prepared-thread"):
            p = subprocess.run([sys.executable, "-c", CASE, case], capture_output=True, text=True, timeout=120)
            line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")), None)
            row = {"case": case, "rep": rep, **(json.loads(line[6:]) if line else {"error": p.stderr[-800:]})}
            rows.append(row)
            print(json.dumps(row), flush=True)
    with open(args.out, "w") as fh:
        json.dump({"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "command": "python bench/profiler_cost.py " + " ".join(sys.argv[1:]), "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
