"""What `--dynamic auto` costs per candidate now that it verifies every submission (issue 35).

Before, `auto` ran the dynamic layer only where a static suspect asked for a probe: an
unsuspected candidate cost nothing past the static pass, and came out a `clean` nobody verified.
Now the core probes (those that declare `always`) run on every submission that has a reference.
For the legitimate pairs of the corpus that run on the device (unsuspected by construction, the
case the change is about), one run times three modes in one process, each in its own session
with the reference already run (a problem's reference runs once, whatever the mode):

- `suspects`: the old `auto`, emulated by leaving `always` only on hidden-distributions (the
  probe that had it) and running nothing for a candidate without a suspect;
- `auto`: the core probes on every submission;
- `all`: every probe.

Reported per pair and as medians: seconds per candidate (`--repeat` audits, median), the
verdict and what it rests on. Ratios come from the same run.

    python bench/auto_cost.py --device cpu --repeat 3 --out bench/results/auto-cost-<date>-cpu.json
    python bench/auto_cost.py --device cuda --repeat 3 --out $OUT/auto-cost.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
import tomllib
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LEGIT = ROOT / "corpus" / "synthetic" / "legit"
MODES = ("suspects", "auto", "all")


def pairs(device: str, limit: int) -> list[tuple[str, Path, Path]]:
    out = []
    for toml in sorted(LEGIT.glob("*.toml")):
        meta = tomllib.loads(toml.read_text())
        if meta.get("verdict") != "clean" or meta.get("static") != "clean" or "reference" not in meta:
            continue
        if device == "cpu" and not meta.get("cpu", False):
            continue
        cand = toml.with_suffix(".py")
        out.append((toml.stem, cand, (toml.parent / meta["reference"]).resolve()))
    return out[:limit]


def run_mode(mode: str, items, device: str, repeat: int) -> dict:
    from hackscan.dynamic.probe import load_probes
    from hackscan.session import Session

    probes = load_probes()
    saved = {p: p.always for p in probes}
    try:
        if mode == "suspects":
            for p in probes:
                p.always = p.name == "hidden-distributions"
        with Session(dynamic="auto" if mode == "suspects" else mode, device=device, timeout_s=900) as s:
            rows = {}
            for name, cand, ref in items:
                s.audit(cand, ref)     # the reference's run (and the build), not counted
                times, r = [], None
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    if mode == "suspects":
                        from hackscan.api import scan

                        r = scan(cand.read_text(), ref.read_text(), path=str(cand))
                        if any(f.probes for f in r.findings):
                            r = s.audit(cand, ref)
                    else:
                        r = s.audit(cand, ref)
                    times.append(time.perf_counter() - t0)
                rows[name] = {"median_s": round(statistics.median(times), 3), "verdict": r.verdict,
                              "evidence": r.evidence}
                print(f"{mode:9s} {name:44s} {rows[name]['median_s']:7.3f} s  {r.verdict} [{r.evidence}]", flush=True)
            return rows
    finally:
        for p, a in saved.items():
            p.always = a


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--limit", type=int, default=8)
    ap.add_argument("--card", default=None, help="the GPU's name, for the record")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    items = pairs(a.device, a.limit)
    res = {m: run_mode(m, items, a.device, a.repeat) for m in MODES}
    med = {m: statistics.median(v["median_s"] for v in res[m].values()) for m in MODES}
    doc = {"date": date.today().isoformat(), "device": a.device, "card": a.card, "repeat": a.repeat,
           "command": f"python bench/auto_cost.py --device {a.device} --repeat {a.repeat} --limit {a.limit}",
           "pairs": [n for n, _, _ in items], "per_pair": res,
           "median_s": {m: round(v, 3) for m, v in med.items()},
           "ratio_auto_over_suspects": round(med["auto"] / max(med["suspects"], 1e-9), 2),
           "ratio_all_over_auto": round(med["all"] / max(med["auto"], 1e-9), 2),
           "verified_clean": {m: sum(1 for v in res[m].values() if v["verdict"] == "clean" and v["evidence"] == "dynamic")
                              for m in MODES}}
    print(json.dumps({k: doc[k] for k in ("median_s", "ratio_auto_over_suspects", "ratio_all_over_auto",
                                          "verified_clean")}))
    if a.out:
        Path(a.out).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
