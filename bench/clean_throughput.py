"""`hackscan clean` on a large JSONL of KernelBench-style candidates with references, built by
varying the corpus (each row: a corpus candidate with its reference, a row-specific comment and
renamed local helper names, so no two rows are byte-identical), static only.

    python bench/clean_throughput.py --rows 30000 --jobs 2 --out bench/results/clean-throughput-DATE.json
    python bench/clean_throughput.py --rows 30000 --jobs 2 --backends local,ray   # Ray overhead

Reports wall time, rows per second and the peak RSS of the clean process and of its workers."""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def build(path: Path, n: int) -> int:
    from test_clean import corpus_rows

    base = corpus_rows()
    size = 0
    with open(path, "w") as fh:
        for i in range(n):
            r = base[i % len(base)]
            code = re.sub(r"\b(launch|helper|_impl)\b", lambda m: f"{m.group(1)}_{i}", r["code"])
            code = f"# generated sample {i}\n" + code
            line = json.dumps({"id": f"s{i}", "code": code, "reference": r["reference"]}) + "\n"
            fh.write(line)
            size += len(line)
    return size


def run(ds: Path, out: Path, jobs: int, backend: str) -> dict:
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c",
                        "import resource, sys; from hackscan.cli import main; rc = main(sys.argv[1:]); "
                        "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
                        "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(rc)",
                        "clean", str(ds), "--out", str(out), "--jobs", str(jobs), "--backend", backend,
                        "--no-progress"], capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    rss = next((ln.split()[1:] for ln in p.stdout.splitlines() if ln.startswith("RSS")), ["0", "0"])
    summary = json.loads((out / "summary.json").read_text()) if p.returncode == 0 else {}
    return {"backend": backend, "jobs": jobs, "wall_s": round(wall, 1), "rows_per_s": round(summary.get("rows", 0) / wall, 1),
            "peak_rss_mb_main": round(int(rss[0]) / 1024, 1),
            "peak_rss_mb_largest_worker": round(int(rss[1]) / 1024, 1),
            "verdicts": summary.get("verdicts"), "kept": summary.get("kept"), "rc": p.returncode,
            "stderr_tail": p.stderr[-500:]}


def verdicts(results: Path) -> dict:
    out = {}
    with open(results) as fh:
        for line in fh:
            r = json.loads(line)
            out[r["row"]] = (r["verdict"], tuple(r["hack_types"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=30000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--backends", default="local", help="comma-separated: local, ray (the same dataset for each)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ds = Path(tmp) / "gen.jsonl"
        size = build(ds, args.rows)
        res = {"date": date.today().isoformat(), "command": "python bench/clean_throughput.py " + " ".join(sys.argv[1:]),
               "machine": f"{os.cpu_count()} cores", "rows": args.rows, "dataset_bytes": size, "runs": []}
        first = None
        for b in args.backends.split(","):
            out = Path(tmp) / f"out-{b}"
            r = run(ds, out, args.jobs, b)
            if r["rc"] == 0:
                v = verdicts(out / "results.jsonl")
                first = first or v
                r["same_results_as_first"] = v == first
            res["runs"].append(r)
        walls = [r["wall_s"] for r in res["runs"]]
        if len(walls) > 1:
            res["wall_ratio_to_first"] = [round(w / walls[0], 3) for w in walls]
    print(json.dumps(res, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
