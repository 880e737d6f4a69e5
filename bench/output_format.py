"""Writing and reading one worker output: torch.save/torch.load against the raw format of
hackscan/dynamic/tensorfile.py (best of 5, one 4096x4096 fp32 tensor, 64 MiB).

    python bench/output_format.py [--out bench/results]
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def best(fn, n=5) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    import torch

    from hackscan.dynamic.tensorfile import load_outputs

    from hackscan.dynamic.worker import tensorfiles as worker
    t = torch.rand(4096, 4096)
    d = Path(tempfile.mkdtemp())
    res = {
        "torch.save_ms": best(lambda: torch.save([t], d / "o.pt")) * 1e3,
        "torch.load_ms": best(lambda: torch.load(d / "o.pt", weights_only=True)) * 1e3,
        "raw_write_ms": best(lambda: worker._save_outputs(torch, [t], str(d / "o"))) * 1e3,
        "raw_read_ms": best(lambda: load_outputs(d / "o.raw")) * 1e3,
    }
    res = {k: round(v, 1) for k, v in res.items()}
    out = {"date": date.today().isoformat(), "machine": f"{platform.machine()}, Python {platform.python_version()}",
           "torch": torch.__version__, "command": "python bench/output_format.py", "tensor": "4096x4096 float32",
           **res}
    Path(args.out).mkdir(parents=True, exist_ok=True)
    (Path(args.out) / f"output-format-{out['date']}.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
