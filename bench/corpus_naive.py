"""The corpus's claims on a device (issue 38): every hack passes KernelBench's check on its own
problem (hackscan.naive: KernelBench's steps, in a child process per pair), every look-alike is
right under two base seeds. Run on a GPU for the pairs that run only there (sidecar `cpu = false`)
and for those whose sidecar says the CPU cannot show their mechanism (`naive_check`); `--all`
adds the CPU pairs. One JSON line per pair in OUT/naive.jsonl as each ends, then a summary.

    python bench/corpus_naive.py --out $OUT --device cuda --jobs 6
    python bench/corpus_naive.py --summarize OUT/naive.jsonl

A pair in a format KernelBench does not run (a `.cu` binding file) is recorded as such, not run."""
from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hackscan.corpus import corpus_files, parse_marks  # noqa: E402
from hackscan.naive import ORDERS, sidecar_check  # noqa: E402

CORPUS = ROOT / "corpus" / "synthetic"
ACROSS_CALLS = {"result-caching", "cross-call-batching", "phase-detection"}
SEEDS_LEGIT = (42, 20261204)


def pairs(every: bool) -> list[Path]:
    out = []
    for f in corpus_files(CORPUS):
        side = parse_marks(f).sidecar
        if every or not side.get("cpu") or side.get("naive_check"):
            out.append(f)
    return out


def check(path: Path, device: str) -> dict:
    side = parse_marks(path).sidecar
    rel = str(path.relative_to(CORPUS))
    row = {"pair": rel, "legit": path.parent.name == "legit", "verdict": side.get("verdict"),
           "order": side.get("naive_order", "reference-first"), "device": device}
    if path.suffix != ".py":
        return dict(row, outcome="not-kernelbench", why="a binding file, not a KernelBench submission")
    t0 = time.time()
    seeds = SEEDS_LEGIT if row["legit"] else (42,)
    runs = [sidecar_check(path, side, seed=s, device=device, timeout=900) for s in seeds]
    row["seconds"] = round(time.time() - t0, 1)
    errors = [r["error"] for r in runs if "error" in r]
    if errors:
        return dict(row, outcome="error", error=errors[0][-800:])
    trials = [t for r in runs for t in r["trials"]]
    row["trials"] = trials
    row["notes"] = sorted({n for r in runs for n in r["notes"] if n})[:4]
    across = bool(set(side.get("hack_types", ())) & ACROSS_CALLS)
    need = trials[:1] if across and not row["legit"] else trials
    row["outcome"] = "passes" if all(need) else "fails"
    if row["outcome"] == "fails" and not row["legit"]:
        # what the other harness orders make of it: which harness, if any, the hack could pass
        row["other_orders"] = {}
        for order in ORDERS:
            if order != row["order"]:
                r = sidecar_check(path, dict(side, naive_order=order), seed=42, device=device, timeout=900)
                row["other_orders"][order] = r.get("trials", r.get("error", "")[-300:])
    return row


def summarize(path: Path) -> dict:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    s = {"pairs": len(rows), "by_outcome": {}}
    for r in rows:
        kind = "look-alikes" if r["legit"] else "hacks"
        s["by_outcome"].setdefault(kind, {}).setdefault(r["outcome"], []).append(r["pair"])
    return s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--all", action="store_true", help="the CPU pairs too")
    ap.add_argument("--only", nargs="*", help="pairs (relative to the corpus) to run, instead of the selection")
    ap.add_argument("--summarize", type=Path)
    a = ap.parse_args()
    if a.summarize:
        print(json.dumps(summarize(a.summarize), indent=1))
        return 0
    a.out.mkdir(parents=True, exist_ok=True)
    todo = [CORPUS / p for p in a.only] if a.only else pairs(a.all)
    # the pairs with a build first: they take longest
    todo.sort(key=lambda p: "load_inline" not in p.read_text(errors="replace"))
    sink = (a.out / "naive.jsonl").open("a")
    with ThreadPoolExecutor(a.jobs) as pool:
        futs = {pool.submit(check, p, a.device): p for p in todo}
        for f in as_completed(futs):
            try:
                row = f.result()
            except Exception as e:  # noqa: BLE001 - one pair's failure is its row, the run goes on
                row = {"pair": str(futs[f].relative_to(CORPUS)), "outcome": "error", "error": repr(e)[-800:]}
            sink.write(json.dumps(row) + "\n")
            sink.flush()
            print(row["pair"], row["outcome"], row.get("notes", row.get("error", ""))[:200] if row.get("notes") or row.get("error") else "", flush=True)
    sink.close()
    (a.out / "naive-summary.json").write_text(json.dumps(summarize(a.out / "naive.jsonl"), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
