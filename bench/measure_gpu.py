"""Fair measurement on a GPU (issue 4's verification tables), each part written under --out as
soon as it is done:

1. speedups against the strict fp32 and the TF32 reference for a Triton fp32 matmul with
   Triton's default `tl.dot` precision and for a cuDNN convolution with a Triton epilogue;
2. the identity-ReLU hack: a KernelBench-style speedup next to what hackscan reports;
3. a side-stream candidate: event-only against device-synchronised timing, and its flags;
4. stability: one candidate measured in 5 separate worker processes;
5. overhead: hackscan's candidate worker against a KernelBench-style timing process with the
   same iteration count.

    python bench/measure_gpu.py --out $OUT/measure
"""
from __future__ import annotations

import argparse
import atexit
import json
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "bench" / "measure_cases"
sys.path.insert(0, str(ROOT))

# a KernelBench-style timing process: events around each call on the caller's stream, a
# synchronisation after each, the same inputs every time, no L2 flush
KB_STYLE = r'''
import importlib.util, json, sys, time
t_start = time.perf_counter()
import torch
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
ref = load(sys.argv[1], "ref"); cand = load(sys.argv[2], "cand"); n = int(sys.argv[3])
torch.manual_seed(0)
init = ref.get_init_inputs()
model = cand.ModelNew(*init).cuda()
inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in ref.get_inputs()]
with torch.no_grad():
    for _ in range(3):
        model(*inputs)
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); model(*inputs); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
print("RESULT" + json.dumps({"n": n, "mean_ms": sum(ts) / n, "wall_s": time.perf_counter() - t_start}))
'''


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=float, default=10.0, help="seconds of timed calls per worker at most")
    ap.add_argument("--runs", type=int, default=5, help="separate measurements for the stability table")
    ap.add_argument("--only", default="", help="measure only the cases whose names contain this")
    ap.add_argument("--compile", action="store_true", help="a torch.compile'd reference as a third baseline")
    args = ap.parse_args()
    import torch

    from hackscan.api import scan_item
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession
    from hackscan.engine import Options
    from hackscan.inputs.discover import Item

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    head = {"date": date.today().isoformat(), "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
            "command": "python bench/measure_gpu.py " + " ".join(sys.argv[1:])}
    try:
        import triton
        head["triton"] = triton.__version__
    except ImportError:
        pass

    def write(name, obj):
        (out / name).write_text(json.dumps(dict(head, **obj), indent=1) + "\n")
        print(f"[{time.perf_counter() - t0:6.1f}s] wrote {name}", flush=True)

    s = DynamicSession(DynamicOptions(mode="all", device="cuda", measure="all", measure_budget_s=args.budget,
                                      measure_compile=args.compile, timeout_s=300))
    # the card's clocks, power and throttle reasons every 200 ms while we measure (read only)
    smi = None
    try:
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,clocks.mem,temperature.gpu,power.draw,"
                                "clocks_event_reasons.active", "--format=csv", "-lms", "200"],
                               stdout=open(out / "measure-clocks.csv", "w"), stderr=subprocess.STDOUT)
        atexit.register(smi.terminate)
    except OSError as e:
        print("no nvidia-smi:", e)

    def measured(cand, ref, audit=True):
        c, r = CASES / cand, CASES / ref
        res = scan_item(Item(c, r, cand), Options())
        ta = time.perf_counter()
        if audit:
            res = s.audit(res, c, r)
        ta = time.perf_counter() - ta
        tm = time.perf_counter()
        res = s.measure(res, c, r)
        return res, ta, time.perf_counter() - tm

    def row(name, res, ta, tm):
        m = res.measure or {}
        sp = m.get("speedup", {})
        return {"case": name, "verdict": res.verdict, "hack_types": list(res.hack_types), "status": m.get("status"),
                "reason": m.get("reason"),
                "candidate_median_ms": (m.get("candidate") or {}).get("median_ms"),
                "candidate_spread": (m.get("candidate") or {}).get("spread"),
                "strict_median_ms": (m.get("reference_strict") or {}).get("median_ms"),
                "tf32_median_ms": (m.get("reference_tf32") or {}).get("median_ms"),
                "compiled_median_ms": (m.get("reference_compiled") or {}).get("median_ms"),
                "speedup_vs_compiled": sp.get("vs_compiled"),
                "speedup_vs_strict": sp.get("vs_strict"), "speedup_vs_tf32": sp.get("vs_tf32"),
                "speedup_naive_kernelbench_style": sp.get("naive"),
                "event_median_ms": (m.get("candidate") or {}).get("event_median_ms"),
                "memory_ratio": (m.get("memory") or {}).get("ratio"),
                "flags": m.get("flags", []), "counted": m.get("counted"), "floor": m.get("floor"),
                "audit_s": round(ta, 1), "measure_s": round(tm, 1), "measure": m}

    rows = []
    for name, cand, ref in (("triton-matmul-tf32", "matmul_triton_tf32.py", "matmul_ref.py"),
                            ("cudnn-conv-triton-relu", "conv_cudnn_triton_relu.py", "conv_ref.py"),
                            ("identity-relu-hack", "relu_identity_hack.py", "relu_ref.py"),
                            ("side-stream-matmul", "matmul_side_stream.py", "matmul_ref.py")):
        if args.only not in name:
            continue
        try:
            rows.append(row(name, *measured(cand, ref, audit=name != "side-stream-matmul")))
        except Exception as e:  # noqa: BLE001
            rows.append({"case": name, "crash": repr(e)})
        write("measure-cases.json", {"rows": rows})

    if args.runs <= 0:
        s.close()
        return
    # stability: the same candidate in separate worker processes (the baselines are cached)
    stab = []
    for _ in range(args.runs):
        t_run = time.time()
        res, _, tm = measured("matmul_triton_tf32.py", "matmul_ref.py", audit=False)
        m = res.measure or {}
        stab.append({"median_ms": (m.get("candidate") or {}).get("median_ms"), "n": (m.get("candidate") or {}).get("n"),
                     "speedup_vs_tf32": (m.get("speedup") or {}).get("vs_tf32"),
                     "candidate_worker_s": m.get("candidate_worker_s"), "measure_s": round(tm, 2),
                     "started_unix": round(t_run, 2), "spread": (m.get("candidate") or {}).get("spread")})
    meds = [r["median_ms"] for r in stab if r["median_ms"]]
    spread = (max(meds) - min(meds)) / (sorted(meds)[len(meds) // 2]) if meds else None
    write("measure-stability.json", {"runs": stab, "median_spread": spread})

    # overhead: a KernelBench-style process with the same number of timed calls
    n = stab[-1]["n"] or 100
    kb = subprocess.run([sys.executable, "-c", KB_STYLE, str(CASES / "matmul_ref.py"),
                         str(CASES / "matmul_triton_tf32.py"), str(n)], capture_output=True, text=True, timeout=300)
    line = next((ln for ln in kb.stdout.splitlines() if ln.startswith("RESULT")), None)
    kbr = json.loads(line[6:]) if line else {"error": kb.stderr[-1500:]}
    write("measure-overhead.json", {"kernelbench_style": kbr, "hackscan_candidate_worker_s": stab[-1]["candidate_worker_s"],
                                    "hackscan_timed_calls": n,
                                    "ratio": (stab[-1]["candidate_worker_s"] / kbr["wall_s"]) if "wall_s" in kbr else None})
    s.close()


if __name__ == "__main__":
    main()
