"""A warm audit against a KernelBench-style evaluation of the same candidate, in one run.

For each Level-1-sized pair of the corpus (a Triton ReLU, CUDA layer norm, tiled matmul, MSE
loss, builds cached), times:

1. **KernelBench-style evaluation**, the steps of KernelBench's `eval_kernel_against_ref` written
   here (KernelBench is not installable from a registry): a fresh Python process loads the
   reference and the candidate from source, builds both models under a fixed seed, runs 5
   correctness trials (fresh `get_inputs()` per trial, allclose with atol = rtol = 1e-2) and 100
   timed trials with CUDA events after 3 warm-up calls, synchronising after each. Every
   extension (its and hackscan's) is built first, all at once, untimed. Reported: the process's wall time, and
   its time after `import torch` (an evaluator that keeps a process warm pays only that).
2. **hackscan, warm**: one `hackscan.Session` per mode (`--dynamic all`; `all` with candidate
   workers started ahead of their jobs (`HACKSCAN_PRESTART=3`: the main worker and the two rewritten runs'; timed once a started worker is
   ready, the wait reported apart); `all` with the profiled call in a worker of its own
   (`HACKSCAN_PROFILE_BESIDE=gpu`); `auto`); each problem's
   first audit runs the reference (reported apart), the next `--repeat` audits of the candidate
   reuse it. Reported: their median wall time.

Ratios: warm audit / KernelBench-style process, and / its in-process time. The issue's targets
(H200, builds cached): `all` at most 5 s, `auto` at most 2 s, at most 2x KernelBench's cost.

    python bench/warm_audit.py --device cuda --repeat 3 --out $OUT/warm-audit.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import tomllib
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEGIT = ROOT / "corpus" / "synthetic" / "legit"
PAIRS = ["triton_relu", "cuda_layernorm", "cuda_tiled_matmul", "cuda_mse_loss"]
MODES = ("all", "all+prestart", "all+profile-beside", "auto")

# the steps of KernelBench's eval_kernel_against_ref, in a process of its own
KB_STYLE = r'''
import importlib.util, json, sys, time
t_start = time.perf_counter()
import torch
t_torch = time.perf_counter()
ref_path, cand_path, device = sys.argv[1], sys.argv[2], sys.argv[3]

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

ref = load(ref_path, "ref_module")
torch.manual_seed(42)
init = ref.get_init_inputs()
model = ref.Model(*init).to(device)
cand = load(cand_path, "cand_module")          # compiles (or loads) its extension
torch.manual_seed(42)
new = cand.ModelNew(*init).to(device)
ok = True
with torch.no_grad():
    for trial in range(5):
        torch.manual_seed(trial)
        xs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
        a, b = model(*xs), new(*xs)
        torch.cuda.synchronize() if device == "cuda" else None
        ok = ok and a.shape == b.shape and bool(torch.allclose(a, b, atol=1e-2, rtol=1e-2))
    xs = [x.to(device) if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
    times = []
    for i in range(103):
        if device == "cuda":
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); new(*xs); e.record(); torch.cuda.synchronize()
            if i >= 3:
                times.append(s.elapsed_time(e))
        else:
            t0 = time.perf_counter(); new(*xs)
            if i >= 3:
                times.append((time.perf_counter() - t0) * 1e3)
end = time.perf_counter()
print(json.dumps({"correct": ok, "runtime_ms": sorted(times)[len(times) // 2], "after_import_s": end - t_torch,
                  "import_torch_s": t_torch - t_start}))
'''


def kb_style(ref: Path, cand: Path, device: str, env: dict) -> dict:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", KB_STYLE, str(ref), str(cand), device], capture_output=True,
                       text=True, env=env, timeout=900)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout)[-500:], "wall_s": round(wall, 3)}
    d = json.loads(p.stdout.strip().splitlines()[-1])
    return {"wall_s": round(wall, 3), "after_import_s": round(d["after_import_s"], 3), "correct": d["correct"],
            "runtime_ms": round(d["runtime_ms"], 4)}


def prebuild(pairs, device: str, env: dict) -> float:
    """Every extension built once before anything is timed, all at once: KernelBench-style's
    (an untimed run of each pair) and hackscan's (its keyed build folders, which every later
    session reuses). One after the other, six cold builds took longer than the timings."""
    from concurrent.futures import ThreadPoolExecutor

    from hackscan.dynamic.audit import DynamicOptions, DynamicSession

    t0 = time.perf_counter()
    s = DynamicSession(DynamicOptions(mode="all", device=device))
    try:
        with ThreadPoolExecutor(max_workers=len(pairs) + 1) as ex:
            kb = [ex.submit(kb_style, ref, cand, device, env) for _, cand, ref in pairs]
            ours = ex.submit(s.prebuild, [cand for _, cand, _ in pairs], len(pairs))
            for f in kb + [ours]:
                f.result()
    finally:
        s.close()
    return round(time.perf_counter() - t0, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--repeat", type=int, default=3, help="warm audits per pair and mode")
    ap.add_argument("--only", default="", help="comma-separated pair names")
    ap.add_argument("--out", required=True, help="a JSON file")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated, of " + ", ".join(MODES))
    args = ap.parse_args()
    modes = [m for m in MODES if m in args.modes.split(",")]
    if args.device == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")
    import torch

    import hackscan

    sides = {n: tomllib.loads((LEGIT / f"{n}.toml").read_text()) for n in PAIRS
             if not args.only or n in args.only.split(",")}
    pairs = [(n, LEGIT / f"{n}.py", (LEGIT / side["reference"]).resolve()) for n, side in sides.items()
             if args.device != "cpu" or side.get("cpu")]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=str(out.resolve().parent / "kb-style-builds"))
    rec = {"date": date.today().isoformat(), "command": "python bench/warm_audit.py " + " ".join(sys.argv[1:]),
           "device": args.device, "torch": torch.__version__,
           "gpu": torch.cuda.get_device_name() if args.device == "cuda" and torch.cuda.is_available() else None,
           "hackscan": hackscan.__version__, "pairs": {}}
    rec["prebuild_s"] = prebuild(pairs, args.device, env)
    for name, cand, ref in pairs:
        row = {}
        row["kb_style"] = [kb_style(ref, cand, args.device, env) for _ in range(args.repeat)]
        for mode in modes:
            # the profiled call in a worker of its own (HACKSCAN_PROFILE_BESIDE), candidate workers
            # started ahead of their jobs (HACKSCAN_PRESTART): read when the session's first
            # dynamic audit builds its options
            os.environ["HACKSCAN_PROFILE_BESIDE"] = "gpu" if mode.endswith("profile-beside") else "never"
            os.environ["HACKSCAN_PRESTART"] = "3" if mode.endswith("prestart") else "0"
            with hackscan.Session(dynamic=mode.split("+")[0], device=args.device) as s:
                t0 = time.perf_counter()
                first = s.audit(cand, ref)                           # the reference runs here (and builds)
                first_s = time.perf_counter() - t0
                warm, verdicts, waited = [], {first.verdict}, []
                for _ in range(args.repeat):
                    pool = getattr(s._dyn, "_pool", None) if getattr(s, "_dyn", None) is not None else None
                    if pool is not None:     # a worker ready, as in a loop the pool keeps up with
                        t0 = time.perf_counter()
                        pool.wait_ready(30)
                        waited.append(round(time.perf_counter() - t0, 3))
                    t0 = time.perf_counter()
                    r = s.audit(cand, ref)
                    warm.append(time.perf_counter() - t0)
                    verdicts.add(r.verdict)
                timings = (r.dynamic or {}).get("timings", {})
            row[mode] = {"first_s": round(first_s, 3), "warm_s": [round(x, 3) for x in warm],
                         "warm_median_s": round(statistics.median(warm), 3), "verdicts": sorted(verdicts),
                         "last_timings": timings, "pool_wait_s": waited,
                         "prestarted": (r.dynamic or {}).get("prestarted"),
                         # `auto` probes only candidates with a static suspect: a clean one is static only
                         "dynamic_ran": bool((r.dynamic or {}).get("status") == "ran")}
        kb_ok = [k for k in row["kb_style"] if "error" not in k]
        if kb_ok:
            kb_wall = statistics.median(k["wall_s"] for k in kb_ok)
            kb_in = statistics.median(k["after_import_s"] for k in kb_ok)
            for mode in modes:
                row[mode]["over_kb_style_process"] = round(row[mode]["warm_median_s"] / kb_wall, 2)
                row[mode]["over_kb_style_in_process"] = round(row[mode]["warm_median_s"] / kb_in, 2)
        rec["pairs"][name] = row
        out.write_text(json.dumps(rec, indent=1) + "\n")             # each pair kept as it finishes
        print(name, {m: row[m]["warm_median_s"] for m in modes},
              {k: kb_ok[0][k] for k in ("wall_s", "after_import_s")} if kb_ok else row["kb_style"], flush=True)


if __name__ == "__main__":
    main()
