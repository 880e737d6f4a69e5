"""The static pass over the real-kernel validation set (shared/realworld beside the checkout,
when it is there): every item is audited, none crashes or ends as `error`, and the verdict
counts per label are printed (pytest -s) for the record. The set is read where it lies, never
copied into the project."""
from __future__ import annotations

import csv
import json
from collections import Counter

import pytest

from hackscan.api import scan_item
from hackscan.engine import Options
from hackscan.inputs.discover import Item

from conftest import ROOT

SET = ROOT.parent / "shared" / "realworld"


@pytest.mark.skipif(not (SET / "manifest.tsv").is_file(), reason="no real-kernel set beside the checkout")
def test_static_pass_over_every_real_item():
    with open(SET / "manifest.tsv", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert len(rows) >= 200
    counts, errors = Counter(), []
    for row in rows:
        d = SET / "items" / row["id"]
        res = scan_item(Item(d / "candidate.py", d / "reference.py", f"{row['id']}/candidate.py"),
                        Options(entry=row.get("candidate_class") or "ModelNew"))
        counts[(row["label"], res.verdict)] += 1
        if res.verdict == "error":
            errors.append((row["id"], res.error))
    print(json.dumps({f"{k[0]}|{k[1]}": v for k, v in sorted(counts.items())}, indent=1))
    assert not errors, errors[:5]
    # the static pass alone never condemns: it reports suspects, it does not run anything
    honest_condemned = counts[("presumed-honest", "hacked")]
    assert honest_condemned == 0, counts
