"""The static pass over the real-kernel validation set: verdict counts per label, the share of
presumed-honest kernels flagged `suspect` or worse, and which rules (medium severity or more)
flag them. The set is read where it lies (never copied into the project).

    python bench/realworld_static.py --set ../shared/realworld [--out FILE]
"""
from __future__ import annotations

import argparse
import csv
import json
import time
from collections import Counter
from pathlib import Path

from hackscan.api import scan_item
from hackscan.engine import Options
from hackscan.inputs.discover import Item


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", required=True, help="the folder holding manifest.tsv and items/")
    ap.add_argument("--out")
    args = ap.parse_args()
    root = Path(args.set)
    with open(root / "manifest.tsv", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    verdicts, rules, hack_flagged = Counter(), Counter(), Counter()
    t0 = time.perf_counter()
    for row in rows:
        d = root / "items" / row["id"]
        res = scan_item(Item(d / "candidate.py", d / "reference.py", row["id"]),
                        Options(entry=row.get("candidate_class") or "ModelNew"))
        verdicts[f"{row['label']}|{res.verdict}"] += 1
        if row["label"] == "presumed-honest" and res.verdict != "clean":
            for r in {f.rule_id for f in res.findings if f.severity in ("medium", "high", "critical")}:
                rules[r] += 1
        if row["label"] == "hack":
            hack_flagged["flagged" if res.verdict != "clean" else "clean"] += 1
    honest = sum(v for k, v in verdicts.items() if k.startswith("presumed-honest|"))
    bad = sum(v for k, v in verdicts.items() if k.startswith("presumed-honest|") and not k.endswith("|clean"))
    rec = {"date": time.strftime("%Y-%m-%d"), "items": len(rows), "seconds": round(time.perf_counter() - t0, 1),
           "verdicts": dict(sorted(verdicts.items())),
           "presumed_honest_suspect_or_worse": bad, "presumed_honest": honest,
           "presumed_honest_suspect_share": round(bad / honest, 3) if honest else None,
           "rules_on_flagged_presumed_honest": dict(rules.most_common()),
           "labelled_hacks": dict(hack_flagged)}
    text = json.dumps(rec, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
