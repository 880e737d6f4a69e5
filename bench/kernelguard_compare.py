"""hackscan's KernelGuard-shaped api mode beside KernelGuard itself (kernelguard.analyze_code,
the code path of `kernelguard --api-mode`), static only, on the bundled corpus and, where given,
the real-kernel set: how many items each filters, per label, and where they disagree.

    python bench/kernelguard_compare.py [--set <shared>/realworld] [--out FILE]

Needs `pip install kernelguard` (in the test extra). KernelGuard only parses the code; hackscan's
static pass never runs it."""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections import Counter
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import kernelguard

from hackscan.api import scan_item
from hackscan.engine import Options
from hackscan.inputs.discover import Item
from hackscan.integrations import kernelguard as shape
from hackscan.paths import corpus_dir


def _version() -> str:
    from importlib.metadata import version

    return version("kernelguard")


def corpus_items():
    for toml in sorted((corpus_dir() / "synthetic").rglob("*.toml")):
        py = toml.with_suffix(".py")
        if not py.is_file():
            continue
        meta = tomllib.loads(toml.read_text())
        ref = (toml.parent / meta["reference"]).resolve() if meta.get("reference") else None
        yield ("legit" if toml.parent.name == "legit" else "hack"), py, ref, meta.get("entry", "ModelNew"), py.stem


def set_items(root: Path):
    with open(root / "manifest.tsv", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            d = root / "items" / row["id"]
            yield row["label"], d / "candidate.py", d / "reference.py", row.get("candidate_class") or "ModelNew", row["id"]


def compare(items) -> dict:
    counts, disagree = Counter(), []
    for label, cand, ref, entry, name in items:
        code = cand.read_text(errors="replace")
        kg = kernelguard.analyze_code(code, compute_structural_hash=False)
        hs = shape.from_result(scan_item(Item(cand, ref, name), Options(entry=entry)), code)
        counts[f"{label}|kernelguard={'filter' if kg['should_filter'] else 'pass'}|"
               f"hackscan={'filter' if hs['should_filter'] else 'pass'}"] += 1
        if kg["should_filter"] != hs["should_filter"]:
            disagree.append({"item": name, "label": label, "kernelguard": [p["pattern"] for p in kg["matched_patterns"]],
                             "hackscan": hs["verdict"]})
    return {"counts": dict(sorted(counts.items())), "disagreements": disagree}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", help="the real-kernel set (manifest.tsv, items/)")
    ap.add_argument("--out")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rec = {"date": time.strftime("%Y-%m-%d"), "kernelguard": _version(),
           "corpus": compare(corpus_items())}
    if args.set:
        rs = compare(set_items(Path(args.set)))
        # item ids of the real set stay out of the record: counts only
        rec["realworld"] = {"counts": rs["counts"], "disagreements": len(rs["disagreements"])}
    rec["seconds"] = round(time.perf_counter() - t0, 1)
    text = json.dumps(rec, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
