"""`hackscan clean --dynamic all --device cuda --measure all` on a small dataset built from the
measurement cases (a Triton matmul, a side-stream matmul, the identity-ReLU hack, a cuDNN conv):
the per-row results with their measurements and the report with its plots, on a real GPU.

    python bench/clean_gpu.py --out $OUT/clean
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "bench" / "measure_cases"
ROWS = [("triton-matmul", "matmul_triton_tf32.py", "matmul_ref.py"),
        ("side-stream-matmul", "matmul_side_stream.py", "matmul_ref.py"),
        ("identity-relu", "relu_identity_hack.py", "relu_ref.py"),
        ("cudnn-conv-relu", "conv_cudnn_triton_relu.py", "conv_ref.py")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--budget", type=float, default=3.0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = out / "run"
    ds = out / "rows.jsonl"
    with open(ds, "w") as fh:
        for rid, cand, ref in ROWS:
            fh.write(json.dumps({"id": rid, "code": (CASES / cand).read_text(), "reference": (CASES / ref).read_text()})
                     + "\n")
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "hackscan.cli", "clean", str(ds), "--out", str(work), "--dynamic", "all",
                        "--device", "cuda", "--measure", "all", "--no-progress"],
                       capture_output=True, text=True, cwd=ROOT, timeout=560)
    wall = time.perf_counter() - t0
    rows = [json.loads(x) for x in (work / "results.jsonl").read_text().splitlines()] if (work / "results.jsonl").exists() else []
    res = {"date": date.today().isoformat(), "command": "python bench/clean_gpu.py " + " ".join(sys.argv[1:]),
           "wall_s": round(wall, 1), "rc": p.returncode, "stdout": p.stdout[-500:], "stderr": p.stderr[-1500:],
           "rows": [{"id": r["id"], "verdict": r["verdict"], "hack_types": r["hack_types"], "measure": r.get("measure")}
                    for r in rows]}
    try:
        import torch

        res["gpu"], res["torch"] = torch.cuda.get_device_name(), torch.__version__
    except Exception:  # noqa: BLE001
        pass
    (out / "clean-gpu.json").write_text(json.dumps(res, indent=1) + "\n")
    for name in ("report.html", "summary.json"):
        if (work / name).exists():
            shutil.copy(work / name, out / f"clean-gpu-{name}")
    shutil.rmtree(work, ignore_errors=True)
    ds.unlink()
    print(json.dumps({k: res[k] for k in ("wall_s", "rc")}), [(r["id"], r["verdict"], (r["measure"] or {}).get("fair"))
                                                               for r in res["rows"]])


if __name__ == "__main__":
    main()
