"""Dynamic audit of the whole corpus (or its CPU-runnable part), with timings.

    python bench/dynamic_corpus.py --device cpu --out bench/results            # CPU pairs only
    python bench/dynamic_corpus.py --device cuda --jobs 12 --out $OUT           # every pair, on a GPU

Writes dynamic-<device>-<date>.json (per-pair verdicts, the sidecar's, timings) and a markdown
summary. With --level1, also measures the Level-1-sized breakdown (a 4096x4096 elementwise op and
a 2048^3 matmul: spawn/import, inputs, reference, candidate, comparison; reuse for the next
candidate) and cold extension builds for N=1 and N=8 candidates in parallel.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def corpus_row(display: str, side: dict, r) -> dict:
    """One audited corpus pair against its sidecar, with every probe's own outcome."""
    return {"file": display, "expected": side.get("verdict"), "got": r.verdict,
            "match": r.verdict == side.get("verdict"), "hack_types": list(r.hack_types),
            "expected_types": side.get("hack_types", []),
            "confirmed": sorted({f.dynamic.probe for f in r.findings if f.dynamic.status == "confirmed"}),
            "dynamic": {k: v for k, v in (r.dynamic or {}).items()
                        if k in ("status", "reason", "correct_on_visible", "visible_mismatch",
                                 "candidate_wall_s", "total_s", "note", "timings", "visible_trials",
                                 "hidden_sets_compared", "hidden_sets")},
            "probes": {k: v["status"] + ": " + v["detail"][:300] for k, v in (r.dynamic or {}).get("probes", {}).items()}}


def corpus_run(device: str, jobs: int, timeout: float, only: str | None = None, rows_file: str | None = None) -> dict:
    from hackscan.api import iter_scan
    from hackscan.corpus import corpus_files, parse_marks
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession
    from hackscan.engine import Options
    from hackscan.inputs.discover import discover

    files = corpus_files(ROOT / "corpus" / "synthetic")
    if device == "cpu":
        files = [f for f in files if parse_marks(f).sidecar.get("cpu")]
    items = discover(files, root=ROOT / "corpus", sidecars=True)
    if only:   # the pair's file or its reference's
        items = [i for i in items if re.search(only, str(i.path)) or re.search(only, str(i.reference or ""))]
    sides = [parse_marks(i.path).sidecar for i in items]
    s = DynamicSession(DynamicOptions(mode="all", device=device, timeout_s=timeout))
    t0 = time.perf_counter()
    build = {}
    if device == "cuda":
        cuda = [i.path for i in items if "load_inline" in i.path.read_text() or i.path.suffix == ".cu"]
        tb = time.perf_counter()
        build = s.prebuild(cuda, jobs)
        build = {"candidates": len(cuda), "wall_s": round(time.perf_counter() - tb, 1),
                 "failed": sorted(Path(k).name for k, v in build.items() if v < 0)}
    static = list(iter_scan(items, Options()))
    rows = []
    sink = open(rows_file, "a") if rows_file else None   # each row as it comes: a run cut off keeps them
    for item, side, r in zip(items, sides, s.audit_many([(r, i.path, i.reference) for r, i in zip(static, items)], jobs)):
        rows.append(corpus_row(item.display, side, r))
        if sink is not None:
            sink.write(json.dumps(rows[-1]) + "\n")
            sink.flush()
    if sink is not None:
        sink.close()
    wall = time.perf_counter() - t0
    s.close()
    return {"rows": rows, "wall_s": round(wall, 1), "build": build,
            "summary": {"pairs": len(rows), "matching_sidecar": sum(r["match"] for r in rows),
                        "verdicts": dict(Counter(r["got"] for r in rows))}}


LEVEL1 = {
    "elementwise": ("""
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

N = 4096

def get_inputs():
    return [torch.rand(N, N)]

def get_init_inputs():
    return []
""", "corpus/synthetic/legit/grid_stride_loop.py"),
    "matmul": ("""
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)

N = 2048

def get_inputs():
    return [torch.rand(N, N), torch.rand(N, N)]

def get_init_inputs():
    return []
""", "corpus/synthetic/legit/cuda_tiled_matmul.py"),
}


def level1(device: str, runs: int = 3) -> dict:
    from hackscan.api import scan_item
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession
    from hackscan.engine import Options
    from hackscan.inputs.discover import Item

    out = {}
    tmp = Path(tempfile.mkdtemp())
    for name, (ref_src, cand) in LEVEL1.items():
        ref = tmp / f"{name}_ref.py"
        ref.write_text(ref_src)
        cand = ROOT / cand
        s = DynamicSession(DynamicOptions(mode="all", device=device, timeout_s=600))
        s.prebuild([cand], 1)
        done = []
        for i in range(runs):
            t = time.perf_counter()
            r = s.audit(scan_item(Item(cand, ref, cand.name), Options()), cand, ref)
            done.append({"total_s": round(time.perf_counter() - t, 2), "verdict": r.verdict,
                         "reference_s": r.dynamic.get("reference_wall_s"),
                         "candidate_s": r.dynamic.get("candidate_wall_s"),
                         "audit_total_s": r.dynamic.get("total_s"), "breakdown": r.dynamic.get("timings"),
                         "probes": {k: v["status"] for k, v in r.dynamic.get("probes", {}).items()}})
        s.close()
        out[name] = dict(zip(("first (reference computed)", "second (reference reused)", "third"), done))
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def hostile_run(device: str, jobs: int, timeout: float, names: str = "") -> dict:
    """The hostile corpus (the candidates whose file names match `names`) on this device: each
    candidate's verdict against its sidecar."""
    from hackscan.api import scan_item
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession
    from hackscan.engine import Options
    from hackscan.inputs.discover import discover, read_sidecar

    items = discover([p for p in sorted((ROOT / "corpus" / "hostile").glob("*.py")) if re.search(names, p.name)], sidecars=True)
    s = DynamicSession(DynamicOptions(mode="all", device=device, timeout_s=timeout))
    t0 = time.perf_counter()
    if device == "cuda":  # builds apart: the timeout is for running, not compiling
        s.prebuild([i.path for i in items if "load_inline" in i.path.read_text()], jobs)
    rows = []
    static = [scan_item(i, Options()) for i in items]
    for item, r in zip(items, s.audit_many([(r, i.path, i.reference) for r, i in zip(static, items)], jobs)):
        side = read_sidecar(item.path.with_suffix(".toml"))
        text = " ".join(r.reasons) + " " + (r.error or "") + " " + str(r.dynamic)
        rows.append({"file": item.path.name, "expected": side.get("verdict"), "got": r.verdict,
                     "match": r.verdict == side.get("verdict") and bool(re.search(side.get("reason", ""), text)),
                     "reason": (r.error or "; ".join(r.reasons))[:300]})
    s.close()
    return {"rows": rows, "wall_s": round(time.perf_counter() - t0, 1),
            "matching_sidecar": sum(r["match"] for r in rows), "candidates": len(rows)}


def cold_builds(device: str) -> dict:
    from hackscan.corpus import corpus_files
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession

    cands = [f for f in corpus_files(ROOT / "corpus" / "synthetic") if "load_inline" in f.read_text()][:8]
    out = {}
    for n in (1, 8):
        cache = Path(tempfile.mkdtemp())
        os.environ["HACKSCAN_CACHE"] = str(cache)
        s = DynamicSession(DynamicOptions(device=device, timeout_s=900))
        t = time.perf_counter()
        res = s.prebuild(cands[:n], n)
        out[f"N={n}"] = {"wall_s": round(time.perf_counter() - t, 1), "built": sum(v >= 0 for v in res.values())}
        s.close()
        shutil.rmtree(cache, ignore_errors=True)
    os.environ.pop("HACKSCAN_CACHE", None)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--level1", action="store_true")
    ap.add_argument("--builds", action="store_true")
    ap.add_argument("--hostile", action="store_true")
    ap.add_argument("--only", help="regular expression: audit only the corpus pairs whose "
                    "candidate or reference path it matches")
    ap.add_argument("--no-corpus", action="store_true")
    ap.add_argument("--rows", help="also write each corpus row to this JSONL file as it comes")
    args = ap.parse_args()
    import torch

    res = {"date": date.today().isoformat(), "device": args.device,
           "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None,
           "torch": torch.__version__, "python": platform.python_version(), "cpus": os.cpu_count(),
           "command": "python bench/dynamic_corpus.py " + " ".join(sys.argv[1:])}
    if args.builds:
        res["cold_builds"] = cold_builds(args.device)
    if args.level1:
        res["level1"] = level1(args.device)
    if args.hostile:
        res["hostile"] = hostile_run(args.device, args.jobs, min(args.timeout, 60))
    if not args.no_corpus:
        res["corpus"] = corpus_run(args.device, args.jobs, args.timeout, args.only, args.rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"dynamic-{args.device}-{res['date']}.json"
    path.write_text(json.dumps(res, indent=1) + "\n")
    print(json.dumps({k: v for k, v in res.items() if k not in ("corpus", "hostile")}, indent=1))
    if "hostile" in res:
        h = res["hostile"]
        print(f"hostile: {h['matching_sidecar']}/{h['candidates']} as their sidecars say, wall {h['wall_s']}s")
        for r in h["rows"]:
            if not r["match"]:
                print("HOSTILE MISMATCH", r["file"], r["expected"], r["got"], r["reason"][:200])
    if "corpus" in res:
        print(json.dumps(res["corpus"]["summary"], indent=1), f"wall {res['corpus']['wall_s']}s")
        for r in res["corpus"]["rows"]:
            if not r["match"]:
                print("MISMATCH", r["file"], r["expected"], r["got"], r["confirmed"], r["dynamic"].get("reason", ""))


if __name__ == "__main__":
    main()
