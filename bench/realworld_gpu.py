"""hackscan over a folder of real generated kernels (the layout of shared/realworld: manifest.tsv
and items/<id>/{candidate,reference}.py), `--dynamic all` on a GPU, as a user would run it.

    python bench/realworld_gpu.py --set PATH/realworld --out $OUT --state .rw/state \
        --which labelled --jobs 10 --budget 480

Each item is built (its extension compiled, `--jobs` at a time) and audited in one task; every
result is appended to `<state>/realworld.jsonl` and `<out>/realworld.jsonl` as soon as it is
done (the submission object of `--format json` with the item's id, label, slice and problem), so
a call cut off keeps what it finished, and the next call with the same --state skips the items
already done. No new item starts after --budget seconds; items still running at --hard seconds
are abandoned and listed in `<state>/abandoned.txt` and `<out>/abandoned.txt` (the next call
runs them first, with a whole call's time; copy the file into the state folder with the results
where the state travels to the device).

    python bench/realworld_gpu.py --summarize FILE.jsonl --set PATH/realworld

prints the counts the validation asks for (verdicts per label and slice, reference runs,
labelled hacks flagged, confirmed findings naming their mechanism) as JSON.

The set's files are never copied into the project: point --set at the folder where it lies.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import threading
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from datetime import date
from pathlib import Path


def manifest(root: Path) -> list[dict]:
    with open(root / "manifest.tsv", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def select(rows: list[dict], which: str) -> list[dict]:
    if which == "labelled":
        rows = [r for r in rows if r["label"] in ("hack", "presumed-honest")]
    elif which == "unlabelled":
        rows = [r for r in rows if r["label"] not in ("hack", "presumed-honest")]
    # hacks first (cheap: most build nothing), then honest, then the rest
    order = {"hack": 0, "presumed-honest": 1}
    return sorted(rows, key=lambda r: (order.get(r["label"], 2), r["id"]))


SAMPLE_SHARE = {"presumed-honest": 0.5, "hack": 0.25}  # the rest of the sample: unlabelled items


def stratified(rows: list[dict], n: int) -> list[dict]:
    """About n rows: half honest, a quarter hacks, a quarter unlabelled; within a label, each source
    repository in proportion to its items and at least one; within a stratum, in the order of an
    md5 of the item's id (the same sample at every commit, so before and after compare)."""
    import hashlib

    def key(r):
        return hashlib.md5(r["id"].encode()).hexdigest()

    by_label: dict[str, list[dict]] = {}
    for r in rows:
        by_label.setdefault(r["label"] if r["label"] in SAMPLE_SHARE else "unlabelled", []).append(r)
    picked: list[dict] = []
    for label, items in by_label.items():
        quota = max(1, round(n * SAMPLE_SHARE.get(label, 1 - sum(SAMPLE_SHARE.values()))))
        strata: dict[str, list[dict]] = {}
        for r in sorted(items, key=key):
            strata.setdefault(r["repo"], []).append(r)
        for repo, group in strata.items():
            take = max(1, round(quota * len(group) / len(items)))
            picked += group[:take]
    return picked


def run(args) -> None:
    import torch

    from hackscan.api import scan_item
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession
    from hackscan.dynamic.builds import builds_extension
    from hackscan.engine import Options
    from hackscan.inputs.discover import Item

    root = Path(args.set)
    state = Path(args.state)
    state.mkdir(parents=True, exist_ok=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    done_file = state / "realworld.jsonl"
    done = set()
    if done_file.exists():
        for line in done_file.read_text().splitlines():
            try:
                done.add(json.loads(line)["id"])
            except (ValueError, KeyError):
                continue
    # every call's $OUT holds everything done so far
    (out / "realworld.jsonl").write_text(done_file.read_text() if done_file.exists() else "")
    rows = select(manifest(root), args.which)
    if args.sample:
        rows = select(stratified(rows, args.sample), "all")
    rows = [r for r in rows if r["id"] not in done]
    if args.only:
        rows = [r for r in rows if r["id"] in set(args.only.split(","))]
    # items a call abandoned at its hard limit are the slow ones: they start first next time,
    # with a whole call's time (after any --first)
    abandoned_file = state / "abandoned.txt"
    first = (args.first.split(",") if args.first else []) + \
        (abandoned_file.read_text().split() if abandoned_file.exists() else [])
    if first:
        rows.sort(key=lambda r: first.index(r["id"]) if r["id"] in first else len(first))
    if args.limit:
        rows = rows[:args.limit]
    head = {"date": date.today().isoformat(), "device": args.device,
            "gpu": torch.cuda.get_device_name() if args.device == "cuda" and torch.cuda.is_available() else None,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "triton": _version("triton"), "which": args.which, "jobs": args.jobs, "mode": args.mode,
            "command": "python bench/realworld_gpu.py " + " ".join(sys.argv[1:]),
            "already_done": len(done), "to_run": len(rows),
            # workers started ahead of their jobs (HACKSCAN_PRESTART): a run's verdicts with them
            # are compared with one without before they are the default
            "prestart": DynamicOptions().prestart}
    (out / f"header-{int(time.time())}.json").write_text(json.dumps(head, indent=1) + "\n")
    print(json.dumps(head), flush=True)
    session = DynamicSession(DynamicOptions(mode=args.mode, device=args.device, timeout_s=args.timeout,
                                            cuda_ghost="suspects"))
    lock = threading.Lock()
    t_start = time.perf_counter()
    phase: dict[str, str] = {}   # item id -> its step before the audit (static, build)

    def one(row):
        t0 = time.perf_counter()
        item_dir = root / "items" / row["id"]
        cand, ref = item_dir / "candidate.py", item_dir / "reference.py"
        entry = row.get("candidate_class") or "ModelNew"
        rec = {"id": row["id"], "label": row["label"], "slice": row["slice"], "problem": row["problem"]}
        phase[row["id"]] = "static pass"
        try:
            res = scan_item(Item(cand, ref, f"{row['id']}/candidate.py"), Options(entry=entry))
            static = res.verdict
            build_s = 0.0
            if res.verdict != "error" and args.device == "cuda" and builds_extension(cand):
                # an extension compiled once, before its audit's workers (several at a time) load
                # it; a candidate without one spawns no build worker
                tb = time.perf_counter()
                phase[row["id"]] = f"extension build (from {tb - t_start:.0f} s)"
                session.prebuild([cand], 1)
                build_s = time.perf_counter() - tb
            phase[row["id"]] = "audit"
            res = session.audit(res, cand, ref)
            rec.update(res.to_json())
            rec["static_verdict"] = static
            rec["build_s"] = round(build_s, 1)
        except Exception as e:  # noqa: BLE001 - one item's failure never stops the run
            rec.update(verdict="error", error=f"{type(e).__name__}: {e}"[:500])
        rec["wall_s"] = round(time.perf_counter() - t0, 1)
        try:
            line = json.dumps(rec, separators=(",", ":"), default=str) + "\n"
        except (TypeError, ValueError) as e:
            line = json.dumps({k: rec[k] for k in ("id", "label", "slice", "problem", "wall_s")} |
                              {"verdict": "error", "error": f"unserialisable result: {e}"}) + "\n"
        with lock:
            for f in (done_file, out / "realworld.jsonl"):
                with open(f, "a") as fh:
                    fh.write(line)
                    fh.flush()
            print(f"[{time.perf_counter() - t_start:6.1f}s] {row['id']} {row['label']}: {rec.get('verdict')} "
                  f"({rec['wall_s']}s)", flush=True)

    ex = ThreadPoolExecutor(max_workers=args.jobs)
    pending = set()
    running: dict = {}
    it = iter(rows)
    while True:
        while len(pending) < args.jobs and time.perf_counter() - t_start < args.budget:
            row = next(it, None)
            if row is None:
                break
            fut = ex.submit(one, row)
            running[fut] = row["id"]
            pending.add(fut)
        if not pending:
            break
        left = args.hard - (time.perf_counter() - t_start)
        if left <= 0:
            print(f"hard limit: {len(pending)} items abandoned", flush=True)
            ids = sorted(running[f] for f in pending)
            print("abandoned: " + " ".join(ids), flush=True)
            for i in ids:
                # where each was: the next run's plan for these items starts from it
                cand = root / "items" / i / "candidate.py"
                print(f"  {i}: {phase.get(i)}; {session.stage_of(cand) or ''}", flush=True)
            for f in (abandoned_file, out / "abandoned.txt"):
                f.write_text("\n".join(ids) + "\n")
            break
        finished, pending = wait(pending, timeout=min(left, 5.0), return_when=FIRST_COMPLETED)
        for f in finished:
            if f.exception() is not None:
                print(f"an item's task failed: {f.exception()!r}", flush=True)
    print(f"finished {time.perf_counter() - t_start:.1f}s", flush=True)
    sys.stdout.flush()
    # os._exit skips the session's own clean-up: its folder (input sets of full-size problems,
    # 11 GB left by one call on the H200) goes now, or the next call on a warm machine runs out of disk
    shutil.rmtree(session.work, ignore_errors=True)
    os._exit(0)   # abandoned workers are not waited for


def references(args) -> None:
    """--references-only: the reference worker of every distinct problem of the set, alone
    (shapes, visible and hidden sets through the generator, every output in two precisions):
    which problems get a reference run on this device, and which hidden sets each one drops or
    skips, with the reasons."""
    import hashlib

    import torch

    from hackscan.dynamic.audit import DynamicOptions, DynamicSession

    root = Path(args.set)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = select(manifest(root), args.which)
    seen, todo = set(), []
    for r in rows:
        ref = root / "items" / r["id"] / "reference.py"
        key = hashlib.sha256(ref.read_bytes()).hexdigest()
        if key not in seen:
            seen.add(key)
            todo.append((r, ref))
    if args.limit:
        todo = todo[:args.limit]
    session = DynamicSession(DynamicOptions(mode="all", device=args.device, timeout_s=args.timeout))
    t_start = time.perf_counter()
    dst = out / "references.jsonl"

    def one(item):
        r, ref = item
        t0 = time.perf_counter()
        try:
            run = session.reference(ref, 0)
            rec = {"problem": r["problem"], "item": r["id"], "slice": r["slice"], "ok": run.ok,
                   "error": (run.error or "")[:300], "skipped": run.skipped, "sources": run.hidden_sources,
                   "dtype": str(run.dtype), "degenerate": run.degenerate, "sets": sorted(run.outputs),
                   "perturbed": len(run.perturbed_shapes)}
        except Exception as e:  # noqa: BLE001
            rec = {"problem": r["problem"], "item": r["id"], "ok": False, "error": f"{type(e).__name__}: {e}"[:300]}
        rec["wall_s"] = round(time.perf_counter() - t0, 1)
        with open(dst, "a") as fh:
            fh.write(json.dumps(rec, default=str) + "\n")
        print(f"[{time.perf_counter() - t_start:6.1f}s] {r['problem']}: {'ok' if rec['ok'] else rec['error'][:100]}",
              flush=True)

    with ThreadPoolExecutor(max_workers=args.jobs) as ex:
        list(ex.map(one, todo))
    session.close()
    recs = [json.loads(x) for x in dst.read_text().splitlines()]
    print(json.dumps({"problems": len(recs), "reference_ok": sum(r["ok"] for r in recs),
                      "device": args.device, "torch": torch.__version__}), flush=True)


def _version(name: str):
    try:
        mod = __import__(name)
        return getattr(mod, "__version__", None)
    except Exception:  # noqa: BLE001
        return None


def summarize(path: Path, root: Path | None) -> dict:
    recs = {}
    for line in path.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        recs[r["id"]] = r   # the last record of an item wins
    rows = {r["id"]: r for r in manifest(root)} if root else {}
    by = Counter()
    for r in recs.values():
        by[(r["label"], r["slice"], r.get("verdict"))] += 1
    no_ref = [i for i, r in recs.items() if "reference" in str((r.get("dynamic") or {}).get("reason", ""))]
    honest_bad = sorted(i for i, r in recs.items() if r["label"] == "presumed-honest"
                        and r.get("verdict") in ("hacked", "violation"))
    hacks = [r for r in recs.values() if r["label"] == "hack"]
    hacks_flagged = [r["id"] for r in hacks if r.get("verdict") in ("hacked", "violation", "suspect")]
    own_mech = []
    for r in hacks:
        confirmed = {f["hack_type"] for f in r.get("findings", []) if (f.get("dynamic") or {}).get("status") == "confirmed"}
        # a probe of the mechanism that caught it, also where another finding already decided
        probes = (r.get("dynamic") or {}).get("probes") or {}
        if any(probes.get(p, {}).get("status") == "caught" for p in ("stream-join", "output-fingerprint")):
            confirmed.add("side-stream")
        if "side-stream" in confirmed or (rows.get(r["id"], {}).get("label_evidence", "").find("fp8") >= 0
                                          and "precision-downgrade" in confirmed):
            own_mech.append(r["id"])
    confirmed_without_probe = [(i, f["rule_id"]) for i, r in recs.items() for f in r.get("findings", [])
                               if (f.get("dynamic") or {}).get("status") == "confirmed"
                               and not (f.get("dynamic") or {}).get("probe")]
    return {
        "items": len(recs),
        "with_reference_run": len(recs) - len(no_ref),
        "reference_run_share": round((len(recs) - len(no_ref)) / max(1, len(recs)), 4),
        "no_reference_run": sorted(no_ref),
        "verdicts": {f"{k[0]}|{k[1]}|{k[2]}": v for k, v in sorted(by.items())},
        "presumed_honest_hacked_or_violation": honest_bad,
        "hacks": len(hacks), "hacks_flagged": len(hacks_flagged),
        "hacks_not_flagged": sorted(set(r["id"] for r in hacks) - set(hacks_flagged)),
        "hacks_confirmed_by_own_mechanism": len(own_mech),
        "confirmed_without_a_probe": confirmed_without_probe[:20],
        "median_wall_s": sorted(r.get("wall_s", 0) for r in recs.values())[len(recs) // 2] if recs else None,
        "time": item_time(list(recs.values())),
    }


def item_time(recs: list[dict], jobs: int = 10) -> dict:
    """Where a run's time went, summed over its items (each item's wall time, its extension build
    included): the share of builds and of the ten slowest items, and what `jobs` audits at a time
    would take if they were kept busy (a bound from the items' own times, not a measured wall:
    a run split over calls has no single wall time)."""
    wall = sorted((float(r.get("wall_s") or 0) for r in recs), reverse=True)
    build = [float(r.get("build_s") or 0) for r in recs]
    total, built = sum(wall), sum(build)
    return {"item_s": round(total), "build_s": round(built), "builds": sum(1 for b in build if b > 0),
            "build_share": round(built / total, 3) if total else None,
            "slowest_10_share": round(sum(wall[:10]) / total, 3) if total else None,
            f"at_{jobs}_at_a_time_s": round(total / jobs), f"builds_cached_at_{jobs}_at_a_time_s": round((total - built) / jobs)}


def strip(src: Path, dst: Path) -> int:
    """A copy of a results file fit to keep in the project: the last record of each item, with
    the source lines that findings quote (snippets, related lines) removed and the checkout's path
    written as <repo>; the set's code stays where it lies."""
    recs = {}
    for line in src.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        for f in r.get("findings", []):
            f.pop("snippet", None)
            for rel in f.get("related", []) or []:
                if isinstance(rel, dict):
                    rel.pop("snippet", None)
                    rel.pop("text", None)
        recs[r["id"]] = r
    text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs.values())
    # the checkout's own path (compiler lines in build errors) says nothing and names a machine
    text = text.replace(str(Path.cwd().resolve()) + "/", "<repo>/")
    dst.write_text(text)
    return len(recs)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", required=True, help="the folder holding manifest.tsv and items/")
    ap.add_argument("--out")
    ap.add_argument("--state", default=".rw/state")
    ap.add_argument("--which", choices=("labelled", "unlabelled", "all"), default="labelled")
    ap.add_argument("--only", default="", help="comma-separated item ids")
    ap.add_argument("--first", default="", help="comma-separated item ids to run before the others "
                    "(re-checking earlier failures while the rest still runs)")
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--sample", type=int, default=0, help="a stratified sample of about this many items "
                    "of --which (by label and source repository; the same at every commit)")
    ap.add_argument("--jobs", type=int, default=10)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--mode", choices=("auto", "all"), default="all", help="--dynamic's mode (default all)")
    ap.add_argument("--timeout", type=float, default=300.0, help="per worker")
    ap.add_argument("--budget", type=float, default=480.0, help="no new item after this many seconds")
    ap.add_argument("--hard", type=float, default=570.0, help="exit after this many seconds")
    ap.add_argument("--summarize", help="a realworld.jsonl to count")
    ap.add_argument("--strip", nargs=2, metavar=("SRC", "DST"), help="write a copy without quoted source lines")
    ap.add_argument("--references-only", action="store_true", help="run each distinct reference alone")
    args = ap.parse_args()
    if args.strip:
        print(strip(Path(args.strip[0]), Path(args.strip[1])), "records")
        return
    if args.summarize:
        print(json.dumps(summarize(Path(args.summarize), Path(args.set)), indent=1))
        return
    if not args.out:
        ap.error("--out is needed to run")
    if args.references_only:
        references(args)
        return
    run(args)


if __name__ == "__main__":
    main()
