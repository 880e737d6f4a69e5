"""`hackscan report`: the re-evaluation table over many measured results.

Reads what hackscan and KernelBench write (`audit --format json` documents, JSONL with one
submission per line as `audit --format jsonl`, `bench/realworld_gpu.py` and `clean`'s results
write them, and KernelBench's `eval_results.json`) and prints, over all kernels and by level and
by source: how many were measured, the geometric mean of the claimed speedup (KernelBench-style:
strict fp32 baseline, one input set, events on one stream) against the fair one (TF32 PyTorch,
fresh inputs, device-wide synchronisation), against `torch.compile`, the share faster than TF32
PyTorch, the share using more memory than PyTorch, and the share whose measurement carries a
flag. Kernels hackscan calls `clean` are counted apart from the others: a speedup of a hacked
kernel is not a speedup.

A KernelBench `eval_results.json` gives only the claim (`ref_runtime / runtime` for the samples
it marked correct); the fair columns stay empty for it."""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Iterable, Iterator

from hackscan.inputs.kernelbench_runs import claim as kb_claim, read_eval_results

# level 1-9 as KernelBench and its descendants name it: level_2_problem_..., level2/, L2/, l2p17
# (a GPU's name such as L40 is not a level)
LEVEL_PATTERNS = (re.compile(r"level[_\-\s]?(\d)(?!\d)", re.I), re.compile(r"(?:^|[/_\-])l(\d)p\d+", re.I),
                  re.compile(r"(?:^|/)L(\d)/"))


class ReportError(Exception):
    """A results file that cannot be read as any known layout."""


@dataclass
class Row:
    id: str
    verdict: str | None = None
    level: str = "?"
    source: str = "?"
    claimed: float | None = None      # KernelBench-style speedup
    fair: float | None = None         # against TF32 PyTorch, fresh inputs
    vs_strict: float | None = None
    vs_compiled: float | None = None
    memory_ratio: float | None = None
    counted: bool | None = None
    flags: list[str] = field(default_factory=list)
    correct: bool | None = None       # what KernelBench said, for its own files
    floor_share: float | None = None  # the physical floor's time over the candidate's fair median
    floor_bound: str | None = None    # what bounds that floor: memory or compute


def _num(x, zero: bool = False) -> float | None:
    """A positive finite number; `zero`: 0 too (a memory ratio of 0 is a reading: nothing
    allocated during the call)."""
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and (x > 0 or zero and x == 0)
    return float(x) if ok else None


def level_of(*texts: str) -> str:
    for t in texts:
        for rx in LEVEL_PATTERNS:
            m = rx.search(t or "")
            if m:
                return m.group(1)
    return "?"


def suite_level(ident: str, path: str, problem) -> str:
    """The level from the id, the path or the record's problem (`L2/17_...`); a problem filed
    under a suite of its own instead of a level (`KB-Hard/03_paged_attention`) is grouped by
    that suite's name."""
    problem = str(problem or "")
    lv = level_of(ident, path, problem)
    if lv == "?" and "/" in problem:
        return problem.split("/", 1)[0]
    return lv


def source_of(ident: str, path: str) -> str:
    """The id's prefix (`kbc-2026...` -> `kbc`), else the folder the file lies in."""
    if ident and "-" in ident and "/" not in ident:
        return ident.split("-", 1)[0]
    parent = Path(path).parent.name if path else ""
    return parent or "?"


def row_from_submission(d: dict) -> Row:
    ident = str(d.get("id") or d.get("path") or "?")
    path = str(d.get("path") or "")
    m = d.get("measure") or {}
    sp = m.get("speedup") or {}
    claimed = _num(sp.get("naive")) or _num(sp.get("vs_strict"))
    kbc = d.get("kernelbench_claim") or {}
    if claimed is None:
        claimed = _num(kbc.get("speedup"))
    fl, cand = m.get("floor") or {}, m.get("candidate") or {}
    fl_s, med_ms = _num(fl.get("seconds")), _num(cand.get("median_ms"))
    floor_share = fl_s / (med_ms / 1e3) if fl_s and med_ms else None
    return Row(id=ident, verdict=d.get("verdict"), level=str(d.get("level") or suite_level(ident, path, d.get("problem"))),
               source=str(d.get("source") or source_of(str(d.get("id") or ""), path)),
               claimed=claimed, fair=_num(sp.get("fair")), vs_strict=_num(sp.get("vs_strict")),
               vs_compiled=_num(sp.get("vs_compiled")), memory_ratio=_num((m.get("memory") or {}).get("ratio"), zero=True),
               counted=m.get("counted") if m else None,
               flags=[f.get("flag", "?") for f in m.get("flags", []) if isinstance(f, dict)],
               correct=kbc.get("correctness") if kbc else None, floor_share=floor_share,
               floor_bound=fl.get("bound") if floor_share is not None else None)


def rows_from_eval_results(path: Path, level: str | None = None) -> list[Row]:
    out = []
    lv = level or level_of(str(path))
    for (prob, sample), r in sorted(read_eval_results(path).items()):
        c = kb_claim(r)
        ok = bool(r.get("correctness"))
        out.append(Row(id=f"problem {prob} sample {sample}", level=lv, source=path.parent.name or "?",
                       claimed=_num(c.get("speedup")) if ok else None, correct=ok))
    return out


def _iter_json_rows(doc) -> Iterator[dict]:
    if isinstance(doc, dict) and isinstance(doc.get("submissions"), list):
        yield from (s for s in doc["submissions"] if isinstance(s, dict))
    elif isinstance(doc, list):
        yield from (s for s in doc if isinstance(s, dict))
    elif isinstance(doc, dict) and "verdict" in doc:
        yield doc


def load(paths: Iterable[str | Path]) -> tuple[list[Row], list[str]]:
    """Rows from every file (a folder: its eval_results.json, or its .json/.jsonl files), and a
    note for each line or file skipped. A kernel met more than once (the same id, level and
    source: a re-measurement given after the first run, a resumed run's second file) is counted
    once, as its last record; a note says how many were replaced."""
    rows, notes = _load_all(paths)
    last: dict[tuple[str, str, str], int] = {}
    for i, r in enumerate(rows):
        if r.id != "?":
            last[(r.id, r.level, r.source)] = i
    keep = [r for i, r in enumerate(rows) if r.id == "?" or last[(r.id, r.level, r.source)] == i]
    if len(keep) < len(rows):
        notes.append(f"{len(rows) - len(keep)} record(s) of kernels met again later were replaced by their "
                     "last record (files are read in the order given)")
    return keep, notes


def _load_all(paths: Iterable[str | Path]) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    notes: list[str] = []
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            ev = p / "eval_results.json"
            files.extend([ev] if ev.is_file() else sorted(x for x in p.iterdir() if x.suffix in (".json", ".jsonl")))
        elif p.is_file():
            files.append(p)
        else:
            raise ReportError(f"{p}: no such file or folder")
    for f in files:
        if f.name == "eval_results.json":
            got = rows_from_eval_results(f)
            if not got:
                notes.append(f"{f}: no KernelBench results in it")
            rows.extend(got)
            continue
        try:
            text = f.read_text("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ReportError(f"{f}: cannot be read ({e})") from None
        if f.suffix == ".jsonl":
            for i, line in enumerate(text.splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    d = json.loads(line)
                except ValueError:
                    notes.append(f"{f}:{i}: not JSON, skipped")
                    continue
                got = list(_iter_json_rows(d))
                if not got:
                    notes.append(f"{f}:{i}: not a submission, skipped")
                rows.extend(row_from_submission(s) for s in got)
            continue
        try:
            doc = json.loads(text)
        except ValueError:
            raise ReportError(f"{f}: not JSON") from None
        if isinstance(doc, dict) and not doc.get("submissions") and read_eval_results(f):
            rows.extend(rows_from_eval_results(f))
            continue
        got = list(_iter_json_rows(doc))
        if not got:
            raise ReportError(f"{f}: neither an audit document, submissions nor KernelBench results")
        rows.extend(row_from_submission(s) for s in got)
    return rows, notes


def geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def _share(flags: list[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def stats(rows: list[Row]) -> dict:
    measured = [r for r in rows if r.fair is not None]
    claimed = [r for r in rows if r.claimed is not None]
    mem = [r for r in rows if r.memory_ratio is not None]
    return {
        "kernels": len(rows),
        "with_claim": len(claimed),
        "measured": len(measured),
        "geomean_claimed": geomean([r.claimed for r in claimed]),
        "geomean_fair": geomean([r.fair for r in measured]),
        # like with like: the claim over the same kernels the fair speedup covers
        "geomean_claimed_of_measured": geomean([r.claimed for r in measured if r.claimed is not None]),
        "geomean_vs_compiled": geomean([r.vs_compiled for r in measured if r.vs_compiled is not None]),
        # torch.compile's baseline is optional (--measure-compile): its geomean covers only these
        "with_compiled": sum(r.vs_compiled is not None for r in measured),
        "share_faster_than_compiled": _share([r.vs_compiled > 1 for r in measured if r.vs_compiled is not None]),
        "share_claimed_faster": _share([r.claimed > 1 for r in claimed]),
        "share_faster_than_tf32": _share([r.fair > 1 for r in measured]),
        "share_more_memory": _share([r.memory_ratio > 1 for r in mem]),
        "share_flagged": _share([bool(r.flags) for r in measured]),
        "share_not_counted": _share([r.counted is False for r in measured]),
    }


def aggregate(rows: list[Row], group_by: tuple[str, ...] = ("level", "source")) -> dict:
    clean = [r for r in rows if r.verdict == "clean"]
    other = [r for r in rows if r.verdict is not None and r.verdict != "clean"]
    out = {"all": stats(rows), "clean": stats(clean), "not_clean": stats(other),
           "verdicts": {v: sum(r.verdict == v for r in rows) for v in sorted({r.verdict or "none" for r in rows})},
           "groups": {}}
    for g in group_by:
        keys = sorted({getattr(r, g) for r in rows}, key=lambda k: (k == "?", k))
        out["groups"][g] = {k: stats([r for r in rows if getattr(r, g) == k]) for k in keys}
    return out


COLUMNS = (("kernels", "kernels", "d"), ("measured", "measured", "d"), ("geomean_claimed_of_measured", "claimed", "x"),
           ("geomean_fair", "fair", "x"), ("with_compiled", "with compile", "d"),
           ("geomean_vs_compiled", "vs compile", "x"),
           ("share_faster_than_tf32", "> TF32 PyTorch", "%"), ("share_faster_than_compiled", "> compile", "%"),
           ("share_more_memory", "more memory", "%"), ("share_flagged", "flagged", "%"))


def _cell(v, kind: str) -> str:
    if v is None:
        return "-"
    return f"{v:d}" if kind == "d" else f"{v:.2f}x" if kind == "x" else f"{100 * v:.0f}%"


def _floor_cell(r: Row) -> str:
    """The share of the physical floor the candidate reaches (floor time over its fair median),
    and what bounds the floor."""
    if r.floor_share is None:
        return "-"
    return f"{r.floor_share:.0%} ({escape(r.floor_bound or '?')})"


def _table_rows(agg: dict) -> list[tuple[str, dict]]:
    rows = [("all kernels", agg["all"]), ("clean", agg["clean"]), ("not clean", agg["not_clean"])]
    for g, d in agg["groups"].items():
        rows.extend((f"{g} {k}", s) for k, s in d.items())
    return rows


def render_text(agg: dict, notes: list[str] = ()) -> str:
    head = ["", *[c[1] for c in COLUMNS]]
    body = [[name, *[_cell(s[k], kind) for k, _, kind in COLUMNS]] for name, s in _table_rows(agg)]
    widths = [max(len(str(r[i])) for r in [head, *body]) for i in range(len(head))]
    line = lambda r: "  ".join(str(c).ljust(widths[0]) if i == 0 else str(c).rjust(widths[i]) for i, c in enumerate(r))  # noqa: E731
    out = [line(head), *map(line, body), ""]
    a = agg["all"]
    out.append(f"verdicts: {', '.join(f'{k} {v}' for k, v in agg['verdicts'].items())}")
    if a["with_claim"] and not a["measured"]:
        out.append(f"claims only (no fair measurement): geomean claimed {_cell(a['geomean_claimed'], 'x')} over "
                   f"{a['with_claim']} kernels, {_cell(a['share_claimed_faster'], '%')} claimed faster than PyTorch")
    out.append("claimed: KernelBench-style loop (strict fp32 PyTorch, one input set, events on one stream), over "
               "the measured kernels; fair: TF32 PyTorch, fresh inputs, device-wide synchronisation; "
               "vs compile: against the reference under torch.compile (TF32), over the kernels measured with it; "
               "more memory: a footprint above the reference's (held between calls + the call's peak; records "
               "of older workers: the call's peak alone).")
    out.extend(f"note: {n}" for n in notes)
    return "\n".join(out) + "\n"


FLOOR_RATIO = 2 ** -10


def _histogram(values: list[float], width: int = 520, height: int = 200) -> str:
    """Memory-footprint ratios in log2 bins, red above 1 (more memory than PyTorch)."""
    if not values:
        return ""
    bins: dict[int, int] = {}
    for v in values:
        b = math.floor(math.log2(max(v, FLOOR_RATIO)) * 2)   # half-octave bins; none allocated: the lowest
        bins[b] = bins.get(b, 0) + 1
    lo, hi = min(bins), max(bins)
    n = hi - lo + 1
    top = max(bins.values())
    bw = (width - 60) / n
    out = [f'<svg role="img" aria-label="memory footprint ratio histogram" width="{width}" height="{height}">']
    for i, b in enumerate(range(lo, hi + 1)):
        c = bins.get(b, 0)
        h = (height - 50) * c / top
        x = 40 + i * bw
        color = "#c62828" if b >= 0 else "#2e7d32"
        out.append(f'<rect x="{x:.1f}" y="{height - 30 - h:.1f}" width="{bw - 2:.1f}" height="{h:.1f}" fill="{color}">'
                   f'<title>{2 ** (b / 2):.2f}x to {2 ** ((b + 1) / 2):.2f}x: {c}</title></rect>')
        if i % max(1, n // 8) == 0:
            out.append(f'<text x="{x:.1f}" y="{height - 14}">{2 ** (b / 2):.2g}x</text>')
    out.append(f'<text x="{width / 2}" y="{height - 1}" text-anchor="middle">memory footprint, candidate over PyTorch</text>')
    out.append("</svg>")
    return "".join(out)


def render_html(agg: dict, rows: list[Row], notes: list[str] = (), title: str = "hackscan report") -> str:
    from hackscan.report.html import CSS, _scatter

    parts = [f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
             f"<style>{CSS}</style></head><body><h1>{escape(title)}</h1>",
             "<table><tr><th></th>" + "".join(f"<th>{escape(c[1])}</th>" for c in COLUMNS) + "</tr>"]
    for name, s in _table_rows(agg):
        parts.append(f"<tr><td>{escape(name)}</td>" + "".join(f'<td class="num">{_cell(s[k], kind)}</td>'
                                                            for k, _, kind in COLUMNS) + "</tr>")
    parts.append("</table>")
    parts.append('<p class="muted">claimed: KernelBench-style loop (strict fp32 PyTorch, one input set, events on '
                 "one stream); fair: TF32 PyTorch, fresh inputs, device-wide synchronisation. Green points and bars: "
                 "counted and within PyTorch's memory; red: not counted (a flag) or above it. Of floor: the physical "
                 "floor's time (the bytes the problem must move at the device's bandwidth, or its FLOPs at its peak) "
                 "over the candidate's fair median, the share of the hardware's limit it reaches.</p>")
    pts = [(r.id, r.claimed, r.fair, bool(r.counted) and r.verdict == "clean") for r in rows
           if r.claimed is not None and r.fair is not None]
    if pts:
        parts.append("<h2>Claimed against fair speedup</h2>" + _scatter(pts))
    mem = [r.memory_ratio for r in rows if r.memory_ratio is not None]
    if mem:
        parts.append("<h2>Memory footprint against PyTorch</h2>" + _histogram(mem))
    parts.append("<h2>Kernels</h2><table><tr><th>kernel</th><th>verdict</th><th>level</th><th>source</th>"
                 "<th>claimed</th><th>fair</th><th>vs compile</th><th>memory</th><th>of floor</th><th>flags</th></tr>")
    for r in rows:
        parts.append(f"<tr><td><code>{escape(r.id)}</code></td><td>{escape(r.verdict or '-')}</td>"
                     f"<td>{escape(r.level)}</td><td>{escape(r.source)}</td>"
                     + "".join(f'<td class="num">{_cell(v, "x")}</td>' for v in (r.claimed, r.fair, r.vs_compiled,
                                                                                r.memory_ratio))
                     + f'<td class="num">{_floor_cell(r)}</td>'
                     + f'<td class="flag">{escape(", ".join(r.flags))}</td></tr>')
    parts.append("</table>")
    parts.extend(f'<p class="muted">note: {escape(n)}</p>' for n in notes)
    parts.append("</body></html>\n")
    return "\n".join(parts)
