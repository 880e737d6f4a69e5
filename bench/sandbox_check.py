"""Which sandbox engine runs here, and what holds inside it, read by the auditor from outside.

    python bench/sandbox_check.py [--device cuda] [--out FILE]

Runs a small program in the worker's walls (the same command line `run_worker` builds): it
touches the GPU where asked, tries the calls the seccomp filter refuses, looks for the auditor in
/proc and tries to write outside its folder. Prints one JSON record: the engine, the
protections `sandbox.Watch` saw hold, and what the program inside saw. On a machine where
bubblewrap cannot run, HACKSCAN_SANDBOX=basic is what the audit falls back to; both are tried.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

INSIDE = r'''
import ctypes, json, os, sys
out = {"uid": os.getuid(), "pid": os.getpid(), "ppid": os.getppid(),
       "pids_visible": sum(1 for n in os.listdir("/proc") if n.isdigit())}
libc = ctypes.CDLL(None, use_errno=True)
out["ptrace_traceme"] = libc.ptrace(0, 0, 0, 0)            # PTRACE_TRACEME
out["unshare_net"] = libc.unshare(0x40000000)
out["auditor_visible"] = os.path.exists("/proc/%d" % AUDITOR)
try:
    open("/etc/hackscan-sandbox-probe", "w").close(); out["wrote_etc"] = True
    os.unlink("/etc/hackscan-sandbox-probe")
except OSError:
    out["wrote_etc"] = False
if DEVICE == "cuda":
    try:
        import torch
        x = torch.ones(1 << 20, device="cuda")
        out["cuda_sum"] = float(x.sum())
        out["gpu"] = torch.cuda.get_device_name()
    except Exception as e:
        out["cuda_error"] = repr(e)[:300]
import time; time.sleep(1.0)   # long enough for the auditor to sample
print(json.dumps(out))
'''


def trial(engine: str, device: str) -> dict:
    from hackscan.dynamic import sandbox
    from hackscan.dynamic.runner import Limits, scrubbed_env, spawn

    os.environ[sandbox.ENGINE_ENV] = engine
    job = Path(tempfile.mkdtemp(prefix="hackscan-sbx-"))
    code = INSIDE.replace("AUDITOR", str(os.getpid())).replace("DEVICE", repr(device))
    env = scrubbed_env(job, {"PYTHONPATH": os.environ.get("PYTHONPATH", "")})
    t0 = time.perf_counter()
    with open(job / "out.txt", "wb") as out, open(job / "err.txt", "wb") as err:
        run = spawn([sys.executable, "-I", "-c", code], job, Limits(timeout_s=120, memory_bytes=None), device, env,
                    out, err)
    inside = {}
    for line in (job / "out.txt").read_text().splitlines():
        try:
            inside = json.loads(line)
        except ValueError:
            continue
    return {"asked": engine, "engine": run.engine, "why_not_bwrap": run.why, "rc": run.proc.returncode,
            "timed_out": run.timed_out, "wall_s": round(time.perf_counter() - t0, 2), "samples": run.watch.samples,
            "protections_seen": run.watch.protections(), "inside": inside,
            "stderr_tail": (job / "err.txt").read_text(errors="replace")[-600:]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out")
    args = ap.parse_args()
    from hackscan.dynamic import sandbox

    sandbox.harden_auditor()
    rec = {"date": time.strftime("%Y-%m-%d"), "euid": os.geteuid(), "device": args.device,
           "trials": [trial(e, args.device) for e in ("auto", "basic")]}
    text = json.dumps(rec, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
