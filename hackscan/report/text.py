"""Human-readable report: a code frame per finding, a verdict line per submission, a summary."""
from __future__ import annotations

from pathlib import Path

from hackscan.findings import VERDICTS, Finding, SubmissionResult
from hackscan.report import summary

COLORS = {"critical": "\x1b[1;31m", "high": "\x1b[31m", "medium": "\x1b[33m", "low": "\x1b[36m",
          "info": "\x1b[2m", "hacked": "\x1b[1;31m", "violation": "\x1b[35m", "suspect": "\x1b[33m",
          "clean": "\x1b[32m", "unverified": "\x1b[1;34m", "error": "\x1b[1;35m"}
RESET = "\x1b[0m"


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0a, 0x20), 0x7f, *range(0x80, 0xa0)]}


def _safe(s) -> str:
    """Text from the audited files (names, source lines, messages quoting them), with control
    characters escaped: a file name or a line holding terminal escapes cannot rewrite the
    report on the reader's screen."""
    return str(s).translate(_CONTROL)


def _c(s: str, key: str, color: bool) -> str:
    return f"{COLORS.get(key, '')}{s}{RESET}" if color else s


def _frame(f: Finding, lines_cache: dict, root: Path | None) -> list[str]:
    path = f.location.path
    if path not in lines_cache:
        try:
            p = Path(path) if Path(path).is_absolute() or root is None else root / path
            lines_cache[path] = p.read_text("utf-8", "replace").splitlines()
        except OSError:
            lines_cache[path] = []
    lines = lines_cache[path]
    ln = f.location.line
    if not (1 <= ln <= len(lines)):
        return [f"     | {_safe(f.snippet)}"] if f.snippet else []
    src = lines[ln - 1]
    width = len(str(ln))
    out = [f" {' ' * width} |", f" {ln} | {_safe(src)}"]
    col = max(1, f.location.column if f.location.embedded is None else len(src) - len(src.lstrip()) + 1)
    if f.location.embedded is not None and f.snippet and f.snippet in src:
        col = src.index(f.snippet) + 1
    out.append(f" {' ' * width} | {' ' * (col - 1)}^")
    return out


def measure_lines(m: dict) -> list[str]:
    """The fair-measurement block under a submission's verdict."""
    if m.get("status") != "measured":
        return [f"   measure: {m.get('status', 'not-run')}: {_safe(m.get('reason', ''))}"]
    c, sp = m["candidate"], m["speedup"]
    out = [f"   measure: {c['median_ms']:.4f} ms median (IQR {c['iqr_ms']:.4f}, n={c['n']}); speedup "
           f"{sp['fair']:.2f}x against the TF32 reference [{sp['fair_ci'][0]:.2f}-{sp['fair_ci'][1]:.2f}], "
           f"{sp['vs_strict']:.2f}x against strict fp32"
           + (f", {sp['vs_compiled']:.2f}x against torch.compile" if sp.get("vs_compiled") else "")
           + (f"; a KernelBench-style loop would say {sp['naive']:.2f}x" if sp.get("naive") else "")]
    mem = m.get("memory")
    if mem and mem.get("ratio") is not None:
        out.append(f"   memory: peak {mem['candidate_peak_bytes'] / 2**20:.1f} MiB, {mem['ratio']:.2f}x the reference's")
    for f in m.get("flags", []):
        out.append(f"   flag {f['flag']}: {_safe(f['detail'])}")
    for n in m.get("notes", []):
        out.append(f"   note: {_safe(n)}")
    if not m.get("counted", True):
        out.append("   (speedup not counted: see the verdict and flags)")
    return out


def basis(r: SubmissionResult) -> str:
    """What a verdict rests on, in words: "verified" (a clean the dynamic layer verified),
    "dynamic" (another verdict a run settled) or "static" (nothing was run, or nothing it ran
    settled the verdict)."""
    if r.evidence == "dynamic":
        return "verified" if r.verdict == "clean" else "dynamic"
    return "static"


def not_checked(r: SubmissionResult) -> str | None:
    """What a run that verified a submission could not check on its device ("kernel-attribution
    (they need a GPU; ...)"), or None."""
    nc = (r.dynamic or {}).get("not_checked") if r.evidence == "dynamic" else None
    if not isinstance(nc, dict) or not nc.get("probes"):
        return None
    return f"{', '.join(map(str, nc['probes']))} ({nc.get('why', '')})"


def render(results: list[SubmissionResult], *, color: bool = False, show_clean: bool = True,
           root: Path | None = None, dynamic: str = "off") -> str:
    out: list[str] = []
    cache: dict = {}
    for r in results:
        for f in r.findings:
            loc = f.location
            head = f"{_safe(loc.path)}:{loc.line}:{loc.column}: {_c(f.rule_id, f.severity, color)} " \
                   f"[{f.severity}, {f.confidence} confidence] {_safe(f.message)}"
            out.append(head)
            out.extend(_frame(f, cache, root))
            notes = [f"hack type: {f.hack_type}"]
            if loc.embedded is not None:
                notes.append(f"in {_safe(loc.embedded)} line {loc.embedded_line}")
            if f.dynamic.status != "not-run":
                notes.append(f"dynamic: {f.dynamic.status}" + (f" by {f.dynamic.probe}" if f.dynamic.probe else ""))
            elif f.probes:
                notes.append(f"confirm with: {', '.join(f.probes)}")
            out.append(f"   = {'; '.join(notes)}")
            if f.dynamic.detail and f.dynamic.status in ("confirmed", "refuted", "error"):
                out.append(f"   = {_safe(f.dynamic.detail[:300])}")
            for rel in f.related:
                out.append(f"   - {_safe(rel.location.path)}:{rel.location.line}: {_safe(rel.message)}")
            out.append("")
        if r.verdict != "clean" or show_clean:
            types = f" ({', '.join(r.hack_types)})" if r.hack_types else ""
            extra = f": {_safe(r.error)}" if r.error else ""
            out.append(f"{_safe(r.path)}: {_c(r.verdict, r.verdict, color)} [{basis(r)}]{types}{extra}")
            if r.verdict == "unverified":
                out.extend(f"   {_safe(x)}" for x in r.reasons[:1])
            nc = not_checked(r)
            if nc:
                out.append(f"   not checked here: {_safe(nc)}")
            limits = (r.dynamic or {}).get("limits") or [] if r.evidence == "dynamic" else []
            for x in limits[:4]:
                out.append(f"   wrong on inputs the reference accepts (no verdict): {_safe(str(x))}")
            for p in r.problem:
                out.append(f"   problem {p['id']}: {_safe(p['detail'])}")
            if r.measure is not None:
                out.extend(measure_lines(r.measure))
            if r.findings or r.error or r.measure is not None or r.problem or r.verdict == "unverified" or nc or limits:
                out.append("")
    s = summary(results)
    v = s["verdicts"]
    parts = [f"{v[k]} {k}" for k in VERDICTS if v[k]]
    tail = "(static only: dynamic confirmation not run)." if dynamic == "off" else f"(dynamic: {dynamic})."
    out.append(f"Audited {s['submissions']} submission{'s' if s['submissions'] != 1 else ''}: "
               f"{', '.join(parts) or 'none'}; {s['findings']} finding{'s' if s['findings'] != 1 else ''} {tail}")
    from hackscan.inputs.kernelbench_runs import summary as kb_summary

    kb = kb_summary(results)
    if kb:
        out.append(f"KernelBench's eval_results.json marked {kb['claimed_correct']} of {kb['samples']} samples "
                   f"correct; of those hackscan finds {kb['claimed_correct_but_hacked']} hacked, "
                   f"{kb['claimed_correct_but_violation']} in violation, {kb['claimed_correct_and_clean']} clean.")
    return "\n".join(out) + "\n"
