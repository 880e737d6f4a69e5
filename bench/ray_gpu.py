"""The Ray backend's GPU path on a real GPU (issue 5): the same corpus pairs audited with
`--dynamic all --device cuda` through the local pool and through `--backend ray` (a local Ray
instance, one GPU per task, a fresh worker process per task), verdicts compared with each other
and with the sidecars, wall times of both.

    python bench/ray_gpu.py --out $OUT/ray --pairs 12
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def pick(n: int) -> list[Path]:
    """Pairs without an extension build (quick), spread over hack types, legit ones included."""
    from hackscan.corpus import corpus_files, parse_marks

    seen, out = set(), []
    for f in corpus_files(ROOT / "corpus" / "synthetic"):
        side = parse_marks(f).sidecar
        if f.suffix != ".py" or not side.get("reference") or "load_inline" in f.read_text():
            continue
        kind = f.parent.name
        if kind in seen and kind != "legit":
            continue
        seen.add(kind)
        out.append(f)
        if len(out) >= n:
            break
    return out


def audit(files: list[Path], extra: list[str], out: Path) -> dict:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "hackscan.cli", "audit", "--dynamic", "all", "--device", "cuda",
                        "--format", "json", "--no-progress", *extra, *map(str, files)],
                       capture_output=True, text=True, cwd=ROOT, timeout=540)
    wall = time.perf_counter() - t0
    out.write_text(p.stdout)
    try:
        subs = json.loads(p.stdout)["submissions"]
    except ValueError:
        return {"wall_s": round(wall, 1), "rc": p.returncode, "stderr": p.stderr[-2000:], "verdicts": {}}
    return {"wall_s": round(wall, 1), "rc": p.returncode, "stderr": p.stderr[-800:],
            "verdicts": {s["path"]: s["verdict"] for s in subs},
            "dynamic_status": {s["path"]: (s.get("dynamic") or {}).get("status") for s in subs}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--skip-local", action="store_true", help="only the Ray run (the local one recorded before)")
    ap.add_argument("--jobs", type=int, default=1, help="candidates at a time in the local pool (default: one per GPU)")
    args = ap.parse_args()
    import torch

    from hackscan.corpus import parse_marks

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    files = pick(args.pairs)
    expected = {str(f.relative_to(ROOT)): parse_marks(f).sidecar.get("verdict") for f in files}
    res = {"date": date.today().isoformat(), "gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "command": "python bench/ray_gpu.py " + " ".join(sys.argv[1:]), "pairs": list(expected)}
    try:
        import ray

        res["ray"] = ray.__version__
    except ImportError as e:
        res["ray"] = f"missing: {e}"
    res["local"] = ({"wall_s": None, "verdicts": {}} if args.skip_local
                    else audit(files, ["--dynamic-jobs", str(args.jobs)], out / "local.json"))
    res["ray_backend"] = audit(files, ["--backend", "ray"], out / "ray.json")
    lv, rv = res["local"]["verdicts"], res["ray_backend"]["verdicts"]
    res["same_verdicts"] = (lv == rv and bool(lv)) if lv else None
    res["as_sidecars"] = {"local": sum(lv.get(k) == v for k, v in expected.items()),
                          "ray": sum(rv.get(k) == v for k, v in expected.items()), "of": len(expected)}
    res["mismatches"] = {k: {"expected": v, "local": lv.get(k), "ray": rv.get(k)}
                         for k, v in expected.items() if lv.get(k) != v or rv.get(k) != v}
    (out / "ray-gpu.json").write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps({k: res[k] for k in ("same_verdicts", "as_sidecars", "mismatches")}, indent=1))
    print("walls", res["local"]["wall_s"], res["ray_backend"]["wall_s"])


if __name__ == "__main__":
    main()
