"""The test suite's wall time per tier, on a fresh clone, as a contributor and CI run it (a
benchmark, not a timed test: a busy machine is slower, and the record says on what it ran).

    python bench/suite_time.py --out bench/results/suite-time-DATE.json [--ref HEAD] [--tiers inner,readme,slow]

Clones the repository at REF into a temporary folder, makes a fresh venv there, installs
`.[test]` (timed apart), then times each tier's command in that clone:

- inner:  pytest -m "not dynamic and not slow and not gpu"   (the inner loop)
- readme: pytest                                              (the README's test command)
- slow:   pytest -m slow                                      (run by .ci/run after the README's)

Each tier's pytest closing line (passed, failed, skipped, ...) and its random-order seed are
kept; the record names the machine (cores, memory), the commit and the date."""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIERS = {
    "inner": ["pytest", "-p", "no:cacheprovider", "-m", "not dynamic and not slow and not gpu"],
    "readme": ["pytest", "-p", "no:cacheprovider"],
    "slow": ["pytest", "-p", "no:cacheprovider", "-m", "slow"],
}


def _closing(text: str) -> str:
    lines = [ln.strip("= ").strip() for ln in text.splitlines() if re.search(r"\b(passed|failed|error)", ln)]
    return lines[-1] if lines else ""


def _seed(text: str) -> str | None:
    m = re.search(r"--randomly-seed=(\d+)", text)
    return m.group(1) if m else None


def _cpu_jiffies() -> tuple[int, int]:
    """(busy, total) clock ticks of every core since boot (/proc/stat's first line)."""
    f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = f[3] + (f[4] if len(f) > 4 else 0)    # idle and iowait
    return sum(f) - idle, sum(f)


def _per_module(xml: Path) -> dict:
    """Each test module's summed test time (junit XML), slowest first, with its slowest test."""
    import xml.etree.ElementTree as ET

    mods: dict = {}
    for tc in ET.parse(xml).iter("testcase"):
        mod = tc.get("classname", "").split(".")
        name = next((m for m in mod if m.startswith("test_")), ".".join(mod))
        t = float(tc.get("time", 0) or 0)
        m = mods.setdefault(name, {"tests": 0, "test_s": 0.0, "slowest": ["", 0.0]})
        m["tests"] += 1
        m["test_s"] += t
        if t > m["slowest"][1]:
            m["slowest"] = [tc.get("name", ""), round(t, 1)]
    for m in mods.values():
        m["test_s"] = round(m["test_s"], 1)
    return dict(sorted(mods.items(), key=lambda kv: -kv[1]["test_s"]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--ref", default="HEAD")
    ap.add_argument("--tiers", default="inner,readme,slow")
    ap.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    a = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", a.ref], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    work = Path(tempfile.mkdtemp(prefix="hackscan-suite-"))
    clone = work / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "checkout", "-q", commit], cwd=clone, check=True)
    rec = {"benchmark": "suite_time", "date": datetime.date.today().isoformat(), "commit": commit,
           "machine": {"cores": os.cpu_count(), "memory_gib": round(os.sysconf("SC_PAGE_SIZE")
                                                                     * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
                       "gpu": False},
           "command": " ".join(sys.argv), "tiers": {}}
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", ".venv"], cwd=clone, check=True)
    env = dict(os.environ, VIRTUAL_ENV=str(clone / ".venv"), PATH=f"{clone / '.venv' / 'bin'}:{os.environ['PATH']}")
    env.pop("PYTHONPATH", None)
    p = subprocess.run(["pip", "install", "-q", "-e", ".[test]"], cwd=clone, env=env, capture_output=True, text=True)
    rec["install_s"] = round(time.monotonic() - t0, 1)
    if p.returncode:
        rec["install_error"] = p.stderr[-2000:]
        Path(a.out).write_text(json.dumps(rec, indent=1) + "\n")
        return 1
    for tier in a.tiers.split(","):
        t0, (busy0, all0) = time.monotonic(), _cpu_jiffies()
        xml = work / f"{tier}.xml"
        p = subprocess.run(TIERS[tier] + [f"--junitxml={xml}"], cwd=clone, env=env, capture_output=True, text=True)
        out = p.stdout + p.stderr
        busy1, all1 = _cpu_jiffies()
        rec["tiers"][tier] = {"command": " ".join(TIERS[tier]), "wall_s": round(time.monotonic() - t0, 1),
                              "exit": p.returncode, "result": _closing(out), "randomly_seed": _seed(out),
                              # the machine's cores kept busy over the tier (the suite and anything
                              # else running: a figure near 1 says the tier is CPU-bound)
                              "cpu_busy_fraction": round((busy1 - busy0) / max(1, all1 - all0), 3)}
        if xml.exists():
            rec["tiers"][tier]["per_module"] = _per_module(xml)
        (work / f"{tier}.log").write_text(out)
        print(tier, rec["tiers"][tier], flush=True)
        Path(a.out).write_text(json.dumps(rec, indent=1) + "\n")
    print("logs in", work)
    if not a.keep:
        subprocess.run(["rm", "-rf", str(clone)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
