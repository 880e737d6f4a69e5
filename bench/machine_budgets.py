"""Many audits through one machine, as users run them (issue 37's record).

A folder of real kernels (the layout of shared/realworld: manifest.tsv, items/<id>/candidate.py
and reference.py) is audited with `hackscan audit --dynamic all` in phases, each a separate run
of the CLI on the same machine, one after the other:

- `one`:  one process over the whole folder (`--jobs`/`--dynamic-jobs J`), cold build cache;
- `many`: the same items as P processes side by side (a P-th of the items each, `--dynamic-jobs
          J/P`), all started at once, one shared cold build cache (a build made once per
          content is used by every process);
- `warm`: `one` again on the build cache `one` left (builds cached);
- `kb`:   the KernelBench-style evaluation (bench/warm_audit.py's KB_STYLE: KernelBench's
          `eval_kernel_against_ref` steps written here, KernelBench is not installable from a
          registry) of every item in its own process, J at a time, on `one`'s cache of torch
          extensions (builds cached).

Each phase reports its wall time and, from the audits' own records: the build floor (the sum of
the extension builds' times over the cores), the time audits waited on each budget (the
`dynamic.waits` every record carries: disk, host memory, GPU memory, the GPU's turns), the
longest single wait against the longest single audit, and items lost to resources (an audit or
hidden set that failed for disk, host or GPU memory). A sampler records the peak disk used
under the temporary folder, the host's memory in use and the GPU's memory in use (nvidia-smi).

    python bench/machine_budgets.py --set PATH/realworld --out $OUT [--phases one,many,warm,kb]
        [--device cuda] [--procs 10] [--jobs 16] [--limit N] [--which all]

Items are copied into a scratch folder outside the project (never into it). Every phase writes
its JSONL and its summary under --out as soon as it ends: a call cut off keeps what it finished.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

# what an audit lost to a resource says (its error, its reason, a skipped hidden set)
LOST = re.compile(r"No space left|bytes of (disk|host memory|GPU memory)|out of memory|exceeds the [\d,]+-byte budget|"
                  r"would leave the disk nearly full|would exceed this worker's disk budget|killed by SIGKILL", re.I)


def manifest(root: Path, which: str) -> list[dict]:
    with open(root / "manifest.tsv", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    if which == "labelled":
        rows = [r for r in rows if r["label"] in ("hack", "presumed-honest")]
    return sorted(rows, key=lambda r: r["id"])


def stage(rows: list[dict], src: Path, dst: Path, shards: int = 1) -> list[Path]:
    """The items copied into `shards` folders (round robin), as a user's folder of kernels."""
    folders = [dst / f"shard-{k:02d}" for k in range(shards)]
    for f in folders:
        f.mkdir(parents=True, exist_ok=True)
    for i, r in enumerate(rows):
        shutil.copytree(src / "items" / r["id"], folders[i % shards] / r["id"], dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("meta.json"))
    return folders


class Sampler:
    """Peaks of disk used (the temporary folder's filesystem), host memory in use and GPU
    memory in use, sampled every second while a phase runs."""

    def __init__(self, device: str):
        self._disk0 = shutil.disk_usage(tempfile.gettempdir()).used
        # disk: the filesystem's use above what it held when the phase began (the scratch copies
        # of the items included), and the use itself
        self.device, self.peak = device, {"disk_used_bytes": 0, "disk_used_at_start_bytes": self._disk0,
                                          "host_used_bytes": 0, "gpu_used_bytes": 0}
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _gpu(self) -> int:
        if self.device != "cuda":
            return 0
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=10).stdout
            return sum(int(x) for x in out.split()) << 20
        except (OSError, ValueError, subprocess.SubprocessError):
            return 0

    def _run(self):
        while not self._stop.is_set():
            mem = {}
            with open("/proc/meminfo") as fh:
                for line in fh:
                    k, v = line.split(":", 1)
                    mem[k] = int(v.split()[0]) * 1024
            now = {"disk_used_bytes": shutil.disk_usage(tempfile.gettempdir()).used - self._disk0,
                   "host_used_bytes": mem["MemTotal"] - mem["MemAvailable"], "gpu_used_bytes": self._gpu()}
            for k, v in now.items():
                self.peak[k] = max(self.peak[k], v)
            self._stop.wait(1.0)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join(15)


def audit_cmd(folder: Path, out: Path, args, jobs: int) -> list[str]:
    return [sys.executable, "-m", "hackscan", "audit", str(folder), "--dynamic", args.mode, "--device", args.device,
            "--jobs", str(jobs), "--dynamic-jobs", str(jobs), "--timeout", str(args.timeout),
            "--format", "jsonl", "--output", str(out), "--no-progress"]


def run_phase(name: str, folders: list[Path], out: Path, args, jobs: int, cache: Path) -> dict:
    env = dict(os.environ, HACKSCAN_CACHE=str(cache), PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    outs = [out / f"{name}-{k:02d}.jsonl" for k in range(len(folders))]
    logs = [open(out / f"{name}-{k:02d}.log", "w") for k in range(len(folders))]
    t0 = time.perf_counter()
    with Sampler(args.device) as sampler:
        procs = [subprocess.Popen(audit_cmd(f, o, args, jobs), env=env, stdout=lg, stderr=subprocess.STDOUT)
                 for f, o, lg in zip(folders, outs, logs)]
        ends, codes = [], []
        for p in procs:
            try:
                p.wait(timeout=max(1.0, args.hard - (time.perf_counter() - t0)))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            ends.append(round(time.perf_counter() - t0, 1))
            codes.append(p.returncode)
    wall = time.perf_counter() - t0
    for lg in logs:
        lg.close()
    recs = []
    for o in outs:
        if o.exists():
            recs += [json.loads(line) for line in o.read_text().splitlines() if line.strip()]
    out = summarize(name, recs, wall, sampler.peak, len(folders), jobs, ends)
    # an audit process that died (the host's out-of-memory killer ends the auditor itself) loses
    # every item it had not written: each is an item lost to a resource
    staged = {p.parent.name for f in folders for p in f.glob("*/candidate.py")}
    written = {Path(r.get("path", "")).parent.name for r in recs}
    out["exit_codes"] = codes
    out["items_staged"] = len(staged)
    out["lost_to_resources"] += [{"path": i, "why": "never reported: its audit process ended first "
                                  f"(exit codes {sorted(set(codes))})", "verdict": None}
                                 for i in sorted(staged - written)]
    return out


def summarize(name: str, recs: list[dict], wall: float, peak: dict, procs: int, jobs: int, ends: list) -> dict:
    builds, waits_by, longest_wait, longest_audit, lost = [], {}, 0.0, 0.0, []
    for r in recs:
        dyn = r.get("dynamic") or {}
        t = dyn.get("timings") or {}
        b = t.get("candidate_build_beside_s")
        if isinstance(b, (int, float)) and b > 0:
            builds.append(b)
        longest_audit = max(longest_audit, float(dyn.get("audit_s") or 0.0))
        for w in dyn.get("waits") or []:
            kind = str(w.get("turn", "?")).split(":")[0]
            waits_by[kind] = round(waits_by.get(kind, 0.0) + float(w.get("waited_s", 0.0)), 3)
            longest_wait = max(longest_wait, float(w.get("waited_s", 0.0)))
        text = " ".join([str(r.get("error") or ""), str(dyn.get("reason") or ""),
                         *(str(v) for v in (dyn.get("skipped") or {}).values())])
        if LOST.search(text):
            lost.append({"path": r.get("path"), "why": LOST.search(text).group(0), "verdict": r.get("verdict")})
    cores = os.cpu_count() or 1
    verdicts: dict = {}
    for r in recs:
        verdicts[r.get("verdict")] = verdicts.get(r.get("verdict"), 0) + 1
    return {"phase": name, "processes": procs, "jobs_each": jobs, "items": len(recs), "wall_s": round(wall, 1),
            "process_ends_s": ends, "verdicts": verdicts,
            "builds": len(builds), "build_s_sum": round(sum(builds), 1), "cores": cores,
            "build_floor_s": round(sum(builds) / cores, 1),
            "waited_s_by_budget": waits_by, "longest_wait_s": round(longest_wait, 1),
            "longest_audit_s": round(longest_audit, 1), "lost_to_resources": lost, "peaks": peak}


def kb_phase(rows: list[dict], folder: Path, out: Path, args, jobs: int, cache: Path) -> dict:
    from warm_audit import kb_style

    env = dict(os.environ, TORCH_EXTENSIONS_DIR=str(cache / "kb-extensions"))
    dst = out / "kb.jsonl"

    def one(r, record=True):
        d = folder / r["id"]
        got = kb_style(d / "reference.py", d / "candidate.py", args.device, env)
        if record:
            with open(dst, "a") as fh:
                fh.write(json.dumps(dict(got, id=r["id"])) + "\n")
        return got

    with Sampler(args.device) as sampler, ThreadPoolExecutor(max_workers=jobs) as ex:
        # an untimed pass builds every extension (builds cached, as for `warm`)
        list(ex.map(lambda r: one(r, record=False), rows))
        t0 = time.perf_counter()
        got = list(ex.map(one, rows))
        wall = time.perf_counter() - t0
    return {"phase": "kb", "items": len(got), "wall_s": round(wall, 1), "jobs": jobs,
            "errors": sum(1 for g in got if "error" in g), "peaks": sampler.peak}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--phases", default="one,many,warm,kb")
    ap.add_argument("--which", choices=("labelled", "all"), default="all")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--mode", choices=("auto", "all"), default="all")
    ap.add_argument("--procs", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--hard", type=float, default=3600.0, help="a phase's processes are killed after this")
    ap.add_argument("--scratch", default=None, help="where items and caches go (default: a temporary folder)")
    args = ap.parse_args()
    src, out = Path(args.set), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = manifest(src, args.which)
    if args.limit:
        rows = rows[:args.limit]
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="hackscan-machine-"))
    head = {"date": date.today().isoformat(), "device": args.device, "items": len(rows), "phases": args.phases,
            "procs": args.procs, "jobs": args.jobs, "mode": args.mode, "cores": os.cpu_count(),
            "command": "python bench/machine_budgets.py " + " ".join(sys.argv[1:])}
    try:
        import torch

        head.update(torch=torch.__version__, cuda=torch.version.cuda,
                    gpu=torch.cuda.get_device_name() if args.device == "cuda" and torch.cuda.is_available() else None)
    except Exception:  # noqa: BLE001
        pass
    (out / "machine-budgets-header.json").write_text(json.dumps(head, indent=1) + "\n")
    one_dir = stage(rows, src, scratch / "one")[0]
    results = {}
    for phase in args.phases.split(","):
        if phase == "one":
            results[phase] = run_phase("one", [one_dir], out, args, args.jobs, scratch / "cache-one")
        elif phase == "warm":
            results[phase] = run_phase("warm", [one_dir], out, args, args.jobs, scratch / "cache-one")
        elif phase == "many":
            # the same audits at a time in all as `one` (at least one per process)
            folders = stage(rows, src, scratch / "many", args.procs)
            results[phase] = run_phase("many", folders, out, args, max(1, args.jobs // args.procs), scratch / "cache-many")
        elif phase == "kb":
            results[phase] = kb_phase(rows, one_dir, out, args, args.jobs, scratch / "cache-one")
        else:
            raise SystemExit(f"unknown phase {phase}")
        (out / f"machine-budgets-{phase}.json").write_text(json.dumps(results[phase], indent=1) + "\n")
        print(json.dumps(results[phase]), flush=True)
    if not args.scratch:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
