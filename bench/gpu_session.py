"""A time-boxed GPU session: builds in parallel, the corpus, the CUDA hostile candidates
and the Level-1 breakdown, each part written under --out as soon as it is done (corpus rows one
line at a time), so a session cut short still returns everything it finished.

    python bench/gpu_session.py --out $OUT --jobs 12 --corpus-budget 300

The whole corpus does not fit one 10-minute call with its ~42 extension builds: run
`--part ext --no-level1` in one call and `--part plain --hostile zzz` in the next.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import dynamic_corpus as dc

ROOT = dc.ROOT


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--corpus-budget", type=float, default=300, help="seconds for the corpus part")
    ap.add_argument("--hostile", default="cuda_", help="regular expression over hostile candidates")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--only", default="", help="regular expression over corpus paths (pairs that cannot run on a CPU are always in)")
    ap.add_argument("--skip", default="", help="regular expression over corpus paths to leave out")
    ap.add_argument("--no-level1", action="store_true")
    ap.add_argument("--cuda", default="", help="regular expression: the extension candidates to include")
    ap.add_argument("--part", choices=("all", "ext", "plain"), default="all",
                    help="ext: only pairs that build an extension; plain: only the others")
    args = ap.parse_args()
    import torch

    from hackscan.api import scan_item
    from hackscan.corpus import corpus_files, parse_marks
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession
    from hackscan.engine import Options
    from hackscan.inputs.discover import discover

    t_start = time.perf_counter()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    head = {"date": date.today().isoformat(), "device": args.device,
            "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None, "torch": torch.__version__,
            "command": "python bench/gpu_session.py " + " ".join(sys.argv[1:])}

    def write(name, obj):
        (out / name).write_text(json.dumps(dict(head, **obj), indent=1) + "\n")
        print(f"[{time.perf_counter() - t_start:6.1f}s] wrote {name}", flush=True)

    files = corpus_files(ROOT / "corpus" / "synthetic")
    if args.device == "cpu":
        files = [f for f in files if parse_marks(f).sidecar.get("cpu")]
    if args.only:
        files = [f for f in files if re.search(args.only, str(f)) or not parse_marks(f).sidecar.get("cpu")]
    if args.skip:
        files = [f for f in files if not re.search(args.skip, str(f))]
    if args.cuda:  # extension candidates only where this matches: each costs a build
        files = [f for f in files if "load_inline" not in f.read_text() or re.search(args.cuda, str(f))]
    if args.part != "all":  # a whole-corpus run in two calls: the extension pairs, then the rest
        files = [f for f in files if ("load_inline" in f.read_text()) == (args.part == "ext")]
    items = discover(files, root=ROOT / "corpus", sidecars=True)
    hostile = [p for p in sorted((ROOT / "corpus" / "hostile").glob("*.py")) if re.search(args.hostile, p.name)]
    level1_cands = [ROOT / c for _, c in dc.LEVEL1.values()]

    # 1. every extension build at once, in parallel
    s = DynamicSession(DynamicOptions(mode="all", device=args.device, timeout_s=120))
    ext = [i.path for i in items if "load_inline" in i.path.read_text()] + hostile
    ext += [] if args.no_level1 else level1_cands
    tb = time.perf_counter()
    built = s.prebuild(sorted(set(ext)), args.jobs) if args.device == "cuda" else {}
    write("builds.json", {"candidates": len(built), "wall_s": round(time.perf_counter() - tb, 1),
                          "failed": sorted(Path(k).name for k, v in built.items() if v < 0)})

    # 2. the corpus, rows appended as they finish, until its budget runs out
    sides = {i.path: parse_marks(i.path).sidecar for i in items}
    static = {i.path: scan_item(i, Options()) for i in items}
    left = args.corpus_budget
    tc = time.perf_counter()
    n = 0
    ex = ThreadPoolExecutor(max_workers=args.jobs)
    with open(out / "corpus.jsonl", "w") as fh:
        def timed(i):
            t0 = time.perf_counter()
            return s.audit(static[i.path], i.path, i.reference), time.perf_counter() - t0

        futs = {ex.submit(timed, i): i for i in items}
        try:
            for f in as_completed(futs, timeout=max(10.0, left)):
                i = futs[f]
                try:
                    r, secs = f.result()
                except Exception as e:  # noqa: BLE001
                    fh.write(json.dumps({"file": i.display, "crash": repr(e)}) + "\n")
                    continue
                fh.write(json.dumps(dict(dc.corpus_row(i.display, sides[i.path], r), seconds=round(secs, 1))) + "\n")
                fh.flush()
                n += 1
        except TimeoutError:
            print(f"budget reached: {n} of {len(items)} corpus pairs done", flush=True)
            fh.flush()
    # unfinished audits are left behind (their rows are missing, the written ones stay)
    ex.shutdown(wait=False, cancel_futures=True)
    print(f"[{time.perf_counter() - t_start:6.1f}s] corpus: {n} pairs in {time.perf_counter() - tc:.1f}s", flush=True)

    # 3. the CUDA hostile candidates (their builds are done)
    write("hostile-cuda.json", dc.hostile_run(args.device, args.jobs, 30, args.hostile))

    # 4. the Level-1-sized breakdown, builds cached, the reference reused for the second run
    if not args.no_level1:
        tl = time.perf_counter()
        write("level1.json", {"level1": dc.level1(args.device, runs=2), "wall_s": round(time.perf_counter() - tl, 1)})

    s.close()
    sys.stdout.flush()
    os._exit(0)  # audits left behind by the corpus budget must not hold the exit


if __name__ == "__main__":
    main()
