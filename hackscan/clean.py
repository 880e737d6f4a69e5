"""`hackscan clean DATASET --out DIR`: audit every row of a JSONL, JSON-array or parquet dataset of
generated kernels and write the rows that pass, in the input's format.

Rows are read as a stream (JSONL line by line, a JSON array element by element, parquet batch by
batch through pyarrow), never the whole file. Each row's result (one object per input row: `id`,
`row`, `verdict`, `evidence`, `problem`, `hack_types`, `reasons`, `findings`) is written as soon
as that row is audited: to its batch's file under `inflight/` (flushed, and fsynced for audits
that ran code), then appended to `results.jsonl` when the batch ends. A restart first moves what
`inflight/` holds into `results.jsonl` (dropping a line cut short by a kill), then skips every
row there, so a kill at any moment loses no finished row and duplicates none. (With Ray on a
cluster, `--ray-address`, rows come back per batch: the tasks' disks are not this one.)

The options a verdict depends on (`dynamic`, `device`, `policy`, `measure` and the columns) are
recorded in `options.json`; a resume with other options refuses (CleanOptionsChanged, naming each
option that changed) rather than mix rows audited two ways under one summary.

`evidence` says what a row's verdict rests on: "static" (the static pass only) or "dynamic" (the
candidate ran against its reference on hidden inputs). A row whose dynamic audit was asked for and
could not verify it (no reference in the row, the reference unusable, a GPU needed, every probe
inconclusive, a degenerate problem) is `unverified`: removed by default and written to
`unverified.<ext>` (the input's rows, in its format) so it can be audited again where it can be
verified (a GPU, a fixed reference). When every row has a result, `cleaned.<ext>` (the rows whose
verdict the policy keeps), `summary.json` and `report.html` are written from the results and a
second pass over the input.
"""
from __future__ import annotations

import hashlib
import json
import re
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

PRESETS = {
    # a candidate and a reference code column per row
    "pair": {"code_col": "code", "ref_col": "reference", "id_col": "id"},
    # KernelBench-style generations: the model's kernel and the problem's PyTorch source
    "kernelbench": {"code_col": "custom_code", "ref_col": "ref_code", "id_col": "id"},
    # generated Triton beside its PyTorch original (KernelBook-like layouts)
    "triton-pairs": {"code_col": "triton_code", "ref_col": "python_code", "id_col": "uuid"},
}
BATCH = 64
# the options a row's verdict depends on: a resume must use the same ones
AUDIT_OPTIONS = {"dynamic": "--dynamic", "device": "--device", "policy": "--policy", "measure": "--measure",
                 "code_col": "--code-col", "ref_col": "--ref-col", "id_col": "--id-col"}


class CleanOptionsChanged(ValueError):
    """A resume whose options differ from those the finished rows were audited with."""


@dataclass
class CleanOptions:
    code_col: str = "code"
    ref_col: str | None = "reference"
    id_col: str | None = "id"
    policy: str = "kernelbench"
    # a row nobody could audit (error) or verify (unverified) is not kept
    remove: tuple[str, ...] = ("hacked", "violation", "unverified", "error")
    dynamic: str = "off"
    device: str = "cpu"
    jobs: int = 1
    timeout_s: float = 180.0
    progress: bool = False
    backend: str = "local"          # local | ray
    measure: str = "off"            # off | survivors | all: fair speedup and memory per row (a GPU)
    ray_address: str | None = None
    task_timeout_s: float | None = None
    extra: dict = field(default_factory=dict)


def get_path(row: dict, dotted: str | None):
    """A column, or a field of nested records (`sample.code`), list elements by index
    (`messages.1.content`, `messages.-1.content`)."""
    if not dotted:
        return None
    cur = row
    for part in dotted.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and re.fullmatch(r"-?\d+", part) and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return None
    return cur


def check_columns(dataset: Path, opts: "CleanOptions", explicit: tuple[str, ...], sample: int = 200) -> str | None:
    """Before any row runs: a column the caller named (and the code column) must be found in at
    least one of the first rows; else the reason, naming the columns that are there."""
    seen_keys: set[str] = set()
    rows = []
    for n, (_, rec, err) in enumerate(iter_rows(dataset)):
        if n >= sample:
            break
        if rec is not None:
            rows.append(rec)
            seen_keys |= set(rec)
    if not rows:
        return None   # nothing readable: each row becomes an error of its own
    for label, col in (("--code-col", opts.code_col), ("--ref-col", opts.ref_col), ("--id-col", opts.id_col)):
        if col and (label == "--code-col" or label in explicit) and all(get_path(r, col) is None for r in rows):
            return (f"{label} {col!r}: no such column in the first {len(rows)} rows "
                    f"(columns there: {', '.join(sorted(seen_keys)[:20]) or 'none'})")
    return None


def dataset_format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith((".jsonl", ".ndjson")):
        return "jsonl"
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(".json"):
        return "json"
    raise ValueError(f"{path}: unknown dataset format (use .jsonl, .ndjson, .json (an array) or .parquet)")


def iter_json_array(fh, chunk: int = 1 << 20):
    """The elements of a top-level JSON array, read incrementally: only the unparsed remainder of
    the file is held. A broken element raises ValueError with its offset (elements before it have
    been yielded)."""
    dec = json.JSONDecoder()
    buf, pos, eof, base = "", 0, False, 0

    def fill():
        nonlocal buf, pos, eof, base
        more = fh.read(chunk)
        eof = not more
        base += pos
        buf, pos = buf[pos:] + more, 0

    def skip(chars):
        nonlocal pos
        while True:
            while pos < len(buf) and (buf[pos].isspace() or buf[pos] in chars):
                pos += 1
            if pos < len(buf) or eof:
                return
            fill()

    skip("")
    if pos >= len(buf) or buf[pos] != "[":
        raise ValueError("not a JSON array (a .json dataset is one array of objects; use .jsonl for lines)")
    pos += 1
    while True:
        skip(",")
        if pos >= len(buf):
            raise ValueError(f"the array is not closed (character {base + pos})")
        if buf[pos] == "]":
            return
        while True:
            try:
                obj, end = dec.raw_decode(buf, pos)
                if end < len(buf) or eof:
                    break
            except ValueError as e:
                if eof:
                    raise ValueError(f"broken element at character {base + pos}: {e}") from None
            fill()
        pos = end
        yield obj


def iter_rows(path: Path) -> Iterator[tuple[int, dict | None, str | None]]:
    """(row index, record or None, error) for every row, streaming."""
    fmt = dataset_format(path)
    if fmt == "jsonl":
        with open(path, "rb") as fh:
            for i, line in enumerate(fh):
                if not line.strip():
                    yield i, None, "empty line"
                    continue
                try:
                    rec = json.loads(line)
                except ValueError as e:
                    yield i, None, f"not JSON: {e}"
                    continue
                yield i, rec if isinstance(rec, dict) else None, None if isinstance(rec, dict) else "not an object"
    elif fmt == "json":
        i = 0
        with open(path, encoding="utf-8", errors="surrogatepass") as fh:
            try:
                for rec in iter_json_array(fh):
                    yield i, rec if isinstance(rec, dict) else None, None if isinstance(rec, dict) else "not an object"
                    i += 1
            except (ValueError, UnicodeDecodeError) as e:   # the rest cannot be read: one error row says why
                yield i, None, f"the JSON array cannot be read from here on: {e}"[:500]
    else:
        import pyarrow.parquet as pq

        i = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=1024):
            for rec in batch.to_pylist():
                yield i, rec, None
                i += 1


def _audit_batch(args) -> list[dict]:
    """A batch of rows in a worker process: static audit, or (dynamic or measured rows with a
    reference) one dynamic session for the whole batch, so each problem's reference runs once per
    batch however many rows share it. Code is always text here, never a path to read. With a
    spool path, each row's record is appended there the moment it is known (flushed; fsynced
    where the row ran code), so a kill mid-batch loses no finished row."""
    rows, opts = args[0], args[1]
    spool = args[2] if len(args) > 2 else None
    from hackscan.api import scan

    out: dict[int, dict] = {}
    fh = open(spool, "ab") if spool else None
    shas = {r[0]: row_sha(*r[1:5]) for r in rows}

    def emit(rec: dict, durable: bool = False) -> None:
        rec["sha"] = shas.get(rec["row"])   # what was audited: a resume re-audits a row that changed
        out[rec["row"]] = rec
        if fh is not None:
            fh.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
            fh.flush()
            if durable:
                os.fsync(fh.fileno())

    try:
        run = []
        for i, rid, code, ref, err in rows:
            if err is not None:
                emit(_error_row(i, rid, err))
            elif (opts.dynamic == "off" and opts.measure == "off") or ref is None:
                try:
                    rec = _record(i, rid, scan(code, ref, path=f"row {i}", policy=opts.policy))  # never run
                    if opts.dynamic != "off" and rec["verdict"] == "clean":
                        # a dynamic audit was asked for and cannot run without a reference: nothing
                        # verified this row, which is not `clean`
                        rec.update(verdict="unverified", reasons=[
                            f"no reference in column {opts.ref_col!r}: the dynamic audit asked for could not "
                            "run (the static pass found nothing)"] + rec["reasons"])
                    emit(rec)
                except Exception as e:  # noqa: BLE001 - one row's failure never stops the run
                    emit(_failed(i, rid, e))
            else:
                run.append((i, rid, code, ref))
        if run:
            _audit_dynamic(run, opts, emit)
    finally:
        if fh is not None:
            fh.close()
    return [out[i] for i, *_ in rows]


def _audit_dynamic(run: list, opts: "CleanOptions", emit) -> None:
    import tempfile
    from pathlib import Path as _P

    from hackscan.api import audit_many

    with tempfile.TemporaryDirectory(prefix="hackscan-clean-") as tmp:
        pairs, ok = [], []
        for i, rid, code, ref in run:
            c, r = _P(tmp) / f"row_{i}.py", _P(tmp) / f"ref_{i}.py"
            try:
                c.write_text(code, encoding="utf-8")
                r.write_text(ref, encoding="utf-8")
            except (UnicodeError, OSError) as e:   # e.g. lone surrogates from JSON
                emit(_failed(i, rid, e))
                continue
            pairs.append((c, r))
            ok.append((i, rid))
        finished: set[int] = set()
        try:
            results = audit_many(pairs, dynamic=opts.dynamic, device=opts.device, policy=opts.policy,
                                 timeout_s=opts.timeout_s, measure=opts.measure if opts.measure != "off" else False)
            for (i, rid), res in zip(ok, results):
                emit(_record(i, rid, res), durable=True)    # on disk before the next row starts
                finished.add(i)
        except Exception as e:  # noqa: BLE001 - the session failed: the rest are errors, the run goes on
            for i, rid in ok:
                if i not in finished:
                    emit(_failed(i, rid, e), durable=True)


def _record(i: int, rid, r) -> dict:
    j = r.to_json()
    extra = {"error": r.error} if r.error else {}
    if r.measure is not None:
        extra["measure"] = _measure_summary(r.measure)
    return dict({"id": rid, "row": i}, verdict=r.verdict, evidence=r.evidence, problem=[dict(p) for p in r.problem],
                hack_types=list(r.hack_types), reasons=list(r.reasons),
                findings=[{k: f[k] for k in ("rule_id", "hack_type", "severity", "message", "dynamic")}
                          | {"line": f["location"]["line"]} for f in j["findings"]], **extra)


def _failed(i: int, rid, e: Exception) -> dict:
    return _error_row(i, rid, f"{type(e).__name__}: {e}"[:500])


def _error_row(i: int, rid, reason: str) -> dict:
    return {"id": rid, "row": i, "verdict": "error", "evidence": "static", "problem": [], "hack_types": [],
            "reasons": [reason], "findings": []}


def _measure_summary(m: dict) -> dict:
    """What a row's results line keeps of its measurement."""
    if m.get("status") != "measured":
        return {"status": m.get("status"), "reason": m.get("reason")}
    sp, mem = m.get("speedup") or {}, m.get("memory") or {}
    return {"status": "measured", "fair": sp.get("fair"), "fair_ci": sp.get("fair_ci"), "vs_strict": sp.get("vs_strict"),
            "naive": sp.get("naive"), "memory_ratio": mem.get("ratio"), "counted": bool(m.get("counted")),
            "flags": [f["flag"] for f in m.get("flags", [])],
            "median_ms": (m.get("candidate") or {}).get("median_ms")}


def _entry(rec: dict) -> dict:
    """What the end of the run needs of a finished row (the full record stays in the file)."""
    return {"verdict": rec["verdict"], "hack_types": rec.get("hack_types", []), "id": rec.get("id"),
            "evidence": rec.get("evidence", "static"), "problem": [p.get("id") for p in rec.get("problem") or []],
            "sha": rec.get("sha")}


def _finished(results: Path) -> dict[int, dict]:
    """Rows already done; a last line cut short by a kill is dropped from the file."""
    done: dict[int, dict] = {}
    if not results.exists():
        return done
    good = 0
    with open(results, "rb") as fh:
        for line in fh:
            if not line.endswith(b"\n"):
                break
            try:
                rec = json.loads(line)
            except ValueError:
                break
            done[rec["row"]] = _entry(rec)
            good += len(line)
    if good != results.stat().st_size:
        with open(results, "r+b") as fh:
            fh.truncate(good)
    return done


def _recover_inflight(results: Path, inflight: Path, done: dict[int, dict]) -> int:
    """Rows a killed run finished inside a batch (its `inflight/` files) moved into results.jsonl;
    the files removed. Returns how many rows were moved."""
    moved = 0
    files = sorted(inflight.glob("batch-*.jsonl")) if inflight.is_dir() else []
    if not files:
        return 0
    with open(results, "ab") as out:
        for f in files:
            for rec in _complete_records(f):
                if rec.get("row") in done:
                    continue
                out.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
                done[rec["row"]] = _entry(rec)
                moved += 1
            out.flush()
            os.fsync(out.fileno())
            f.unlink()
    return moved


def _complete_records(path: Path) -> list[dict]:
    """The whole lines of a file one process appended to (a last line cut short is dropped)."""
    recs = []
    try:
        data = path.read_bytes()
    except OSError:
        return recs
    for line in data.split(b"\n")[:-1]:
        try:
            rec = json.loads(line)
        except ValueError:
            break
        if isinstance(rec, dict) and isinstance(rec.get("row"), int):
            recs.append(rec)
    return recs


def _check_options(out: Path, opts: CleanOptions, n_done: int) -> None:
    """Refuse a resume whose options differ from the finished rows' (options.json); record them
    for a fresh run."""
    record = {k: getattr(opts, k) for k in AUDIT_OPTIONS}
    meta = out / "options.json"
    if n_done:
        try:
            old = json.loads(meta.read_text())
        except (OSError, ValueError):
            raise CleanOptionsChanged(
                f"{out}: {n_done} rows are finished there but {meta.name} does not say which options audited "
                f"them (an older hackscan, or a removed file): write to a new --out, or remove "
                f"{out / 'results.jsonl'} to audit every row again") from None
        changed = [f"{flag} {old.get(k)!r} (now {record[k]!r})" for k, flag in AUDIT_OPTIONS.items()
                   if old.get(k) != record[k]]
        if changed:
            raise CleanOptionsChanged(
                f"{out}: its {n_done} finished rows were audited with other options than this run's: "
                + "; ".join(changed) + ". Nothing was audited: resume with the same options, write to a new "
                f"--out, or remove {out / 'results.jsonl'} to audit every row again with these")
        return
    tmp = meta.with_name(meta.name + ".part")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(tmp, meta)


def clean(dataset: Path, out: Path, opts: CleanOptions) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    fmt = dataset_format(dataset)
    results = out / "results.jsonl"
    inflight = out / "inflight"
    done = _finished(results)
    pending = inflight.is_dir() and any(inflight.glob("batch-*.jsonl"))
    _check_options(out, opts, len(done) + (sum(len(_complete_records(f)) for f in inflight.glob("batch-*.jsonl"))
                                           if pending else 0))
    _recover_inflight(results, inflight, done)
    skipped = len(done)
    t0 = time.perf_counter()
    changed: list[int] = []
    todo_batches = _batches(dataset, opts, done, changed)
    n_new = 0
    total = _count_rows(dataset, fmt) if opts.progress else None
    total_hint = total - skipped if total is not None else None
    from hackscan.parallel import BatchFailure, LocalBackend, RayBackend

    if opts.backend == "ray":
        # dynamic rows hold a GPU each on CUDA; static batches only parse
        gpu = opts.dynamic != "off" and opts.device == "cuda"
        backend = RayBackend(opts.jobs if opts.jobs > 1 else None, address=opts.ray_address,
                             num_gpus=1 if gpu else 0, timeout_s=opts.task_timeout_s)
    else:
        backend = LocalBackend(opts.jobs)
    # each batch's rows go to its own file as they finish, where the workers share this disk
    spool = opts.backend == "local" or opts.ray_address is None
    inflight.mkdir(exist_ok=True)

    def tasks():
        for b in todo_batches:
            yield (b, opts, str(inflight / f"batch-{b[0][0]}.jsonl")) if spool else (b, opts)

    with open(results, "ab") as fh:
        try:
            for args, batch in backend.map(_audit_batch, tasks(), 2 * backend.jobs):
                rows = args[0]
                part = Path(args[2]) if len(args) > 2 else None
                if isinstance(batch, BatchFailure):
                    # rows the batch finished before it failed keep their results
                    kept = {r["row"]: r for r in _complete_records(part)} if part is not None else {}
                    batch = [kept.get(i) or _error_row(i, rid, batch.reason) for i, rid, *_ in rows]
                for rec in batch:
                    fh.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
                    done[rec["row"]] = _entry(rec)
                fh.flush()
                os.fsync(fh.fileno())
                if part is not None:
                    part.unlink(missing_ok=True)
                n_new += len(batch)
                if opts.progress:
                    rate = n_new / max(1e-9, time.perf_counter() - t0)
                    eta = f", ETA {max(0, total_hint - n_new) / rate:.0f}s" if total_hint else ""
                    print(f"\r{len(done)} rows done, {rate:.1f} rows/s{eta}   ", end="", file=sys.stderr, flush=True)
        finally:
            backend.close()
    try:
        inflight.rmdir()
    except OSError:
        pass   # a batch's file is left (a stop): the next run moves it into results.jsonl
    if opts.progress:
        print(file=sys.stderr)
    kept = _write_cleaned(dataset, out, fmt, done, opts)
    # rows nobody could verify, apart: the input's own rows, to audit again where they can be
    n_unverified = sum(d["verdict"] == "unverified" for d in done.values())
    if n_unverified:
        _write_rows(dataset, out, fmt, lambda i: i in done and done[i]["verdict"] == "unverified", "unverified")
    else:
        _target(dataset, out, fmt, "unverified").unlink(missing_ok=True)
    summary = _summary(done, kept, opts)
    summary.update(rows_new=n_new, rows_resumed=skipped - len(changed), rows_changed=len(changed),
                   seconds=round(time.perf_counter() - t0, 2),
                   dataset=str(dataset), format=fmt, unverified=n_unverified,
                   unverified_file=_target(dataset, out, fmt, "unverified").name if n_unverified else None)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    from hackscan.report.html import render_dataset

    (out / "report.html").write_text(render_dataset(summary, results), encoding="utf-8")
    return summary


def _count_rows(dataset: Path, fmt: str) -> int | None:
    if fmt == "json":
        return None   # unknown without a parse: progress shows no ETA
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(dataset).metadata.num_rows
    n = 0
    with open(dataset, "rb") as fh:
        while chunk := fh.read(1 << 20):
            n += chunk.count(b"\n")
    return n


def row_sha(rid, code, ref, err) -> str:
    """What a row's verdict is of: its id, code, reference and load error, hashed."""
    return hashlib.sha256(json.dumps([rid, code, ref, err], default=repr).encode()).hexdigest()[:24]


def _batches(dataset: Path, opts: CleanOptions, done: dict[int, dict], changed: list[int]):
    """The rows to audit, in batches: every row not finished, and every finished row whose
    content differs from what its record audited (a dataset edited or regenerated between a stop
    and the resume: its row numbers now name other rows), listed in `changed`."""
    batch = []
    for i, rec, err in iter_rows(dataset):
        rid = get_path(rec, opts.id_col) if rec is not None and opts.id_col else None
        rid = i if rid is None else rid
        code = get_path(rec, opts.code_col) if rec is not None else None
        ref = get_path(rec, opts.ref_col) if rec is not None and opts.ref_col else None
        if err is None and not isinstance(code, str):
            err = f"no code in column {opts.code_col!r}"
        row = (i, rid if isinstance(rid, (int, str)) else str(rid), code, ref if isinstance(ref, str) else None, err)
        if i in done:
            if done[i].get("sha") == row_sha(*row[1:]):
                continue
            if done[i].get("sha"):   # no hash: an error row of a batch that failed, tried again
                changed.append(i)
        batch.append(row)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _write_cleaned(dataset: Path, out: Path, fmt: str, done: dict[int, dict], opts: CleanOptions) -> int:
    """The rows the policy keeps, in the input's format (cleaned.<ext>)."""
    return _write_rows(dataset, out, fmt, lambda i: i in done and done[i]["verdict"] not in opts.remove,
                       "cleaned")


def _target(dataset: Path, out: Path, fmt: str, name: str) -> Path:
    return out / (name + ("".join(dataset.suffixes[-1:]) if fmt == "jsonl" else "." + fmt))


def _write_rows(dataset: Path, out: Path, fmt: str, keep, name: str) -> int:
    """The input's rows for which `keep(row index)` holds, in the input's format, by a second
    streaming pass, to `name`.<ext>. Written to a temporary name and renamed: a kill leaves no
    half-written file."""
    target = _target(dataset, out, fmt, name)
    kept = 0
    if fmt == "jsonl":
        tmp = target.with_name(target.name + ".part")
        with open(dataset, "rb") as src, open(tmp, "wb") as dst:
            for i, line in enumerate(src):
                if keep(i):
                    dst.write(line if line.endswith(b"\n") else line + b"\n")
                    kept += 1
        os.replace(tmp, target)
        return kept
    if fmt == "json":
        tmp = target.with_name(target.name + ".part")
        with open(dataset, encoding="utf-8", errors="surrogatepass") as src, \
                open(tmp, "w", encoding="utf-8", errors="surrogatepass") as dst:
            dst.write("[")
            try:
                for i, rec in enumerate(iter_json_array(src)):
                    if keep(i):
                        dst.write(("," if kept else "") + "\n" + json.dumps(rec, ensure_ascii=False))
                        kept += 1
            except ValueError:
                pass   # the broken rest was reported as an error row and is not kept
            dst.write("\n]\n")
        os.replace(tmp, target)
        return kept
    import pyarrow as pa
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(dataset)
    tmp = target.with_name(target.name + ".part")
    writer = pq.ParquetWriter(tmp, pf.schema_arrow)
    i = 0
    try:
        for batch in pf.iter_batches(batch_size=1024):
            mask = [keep(i + k) for k in range(batch.num_rows)]
            i += batch.num_rows
            if any(mask):
                writer.write_table(pa.Table.from_batches([batch]).filter(pa.array(mask)))
                kept += sum(mask)
    finally:
        writer.close()
    os.replace(tmp, target)
    return kept


def _summary(done: dict[int, dict], kept: int, opts: CleanOptions) -> dict:
    from collections import Counter

    verdicts = Counter(d["verdict"] for d in done.values())
    by_type: Counter = Counter()
    for d in done.values():
        for t in d["hack_types"]:
            by_type[(t, d["verdict"])] += 1
    types: dict = {}
    for (t, v), n in sorted(by_type.items()):
        types.setdefault(t, {})[v] = n
    evidence = Counter(d.get("evidence", "static") for d in done.values())
    problems = Counter(p for d in done.values() for p in d.get("problem", []))
    return {"rows": len(done), "kept": kept, "removed": len(done) - kept, "removed_verdicts": list(opts.remove),
            "verdicts": dict(sorted(verdicts.items())), "evidence": dict(sorted(evidence.items())),
            "problem": dict(sorted(problems.items())), "hack_types": types, "policy": opts.policy,
            "dynamic": opts.dynamic, "device": opts.device, "measure": opts.measure}
