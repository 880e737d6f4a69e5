"""A self-contained HTML report (no scripts, no external resources: inline CSS and SVG): verdict
counts, submissions per hack type, and where measured, claimed (KernelBench-style) against fair
speedup and peak-memory ratios, then every submission with its reasons, findings and measurement.
Every string from the audited files is escaped."""
from __future__ import annotations

import math
from collections import Counter
from html import escape

from hackscan._version import __version__
from hackscan.findings import VERDICTS, SubmissionResult
from hackscan.report import summary
from hackscan.report.text import basis, measure_lines, not_checked

COLORS = {"clean": "#2e7d32", "suspect": "#f9a825", "hacked": "#c62828", "violation": "#6a1b9a",
          "unverified": "#1565c0", "error": "#546e7a"}

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222;max-width:1200px}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}.num{text-align:right;font-variant-numeric:tabular-nums}
.v{color:#fff;border-radius:3px;padding:0 6px;font-weight:600}
details{margin:.2em 0}code,pre{font:12px/1.35 ui-monospace,monospace}pre{background:#f7f7f7;padding:6px;overflow:auto}
.flag{color:#c62828}.muted{color:#777}svg text{font:11px system-ui,sans-serif}
"""


def _v(verdict: str) -> str:
    return f'<span class="v" style="background:{COLORS.get(verdict, "#999")}">{escape(verdict)}</span>'


def _fmt(x, spec=".2f", suffix="") -> str:
    return "-" if x is None else f"{x:{spec}}{suffix}"


def _bars(items: list[tuple[str, int, str]], title: str, width: int = 640) -> str:
    """Horizontal bars: (label, value, color)."""
    if not items:
        return ""
    top = max(v for _, v, _ in items) or 1
    row, left = 18, 220
    h = row * len(items) + 24
    out = [f'<svg role="img" aria-label="{escape(title)}" width="{width}" height="{h}">']
    for i, (label, v, color) in enumerate(items):
        y = 4 + i * row
        w = (width - left - 60) * v / top
        out.append(f'<text x="{left - 6}" y="{y + 12}" text-anchor="end">{escape(label)}</text>'
                   f'<rect x="{left}" y="{y + 2}" width="{w:.1f}" height="{row - 5}" fill="{color}"/>'
                   f'<text x="{left + w + 4:.1f}" y="{y + 12}">{v}</text>')
    out.append("</svg>")
    return "".join(out)


def _scatter(points: list[tuple[str, float, float, bool]], width: int = 420, height: int = 420) -> str:
    """Claimed (x) against fair (y) speedup, log-log, with the diagonal: points far below it
    claimed speed they do not have. (label, claimed, fair, counted)."""
    pts = [(lab, c, f, ok) for lab, c, f, ok in points if c and f and c > 0 and f > 0]
    if not pts:
        return ""
    lo = min(min(c, f) for _, c, f, _ in pts)
    hi = max(max(c, f) for _, c, f, _ in pts)
    lo, hi = 10 ** math.floor(math.log10(lo * 0.9)), 10 ** math.ceil(math.log10(hi * 1.1))
    pad = 40

    def sx(v):
        return pad + (width - 2 * pad) * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    def sy(v):
        return height - pad - (height - 2 * pad) * (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    out = [f'<svg role="img" aria-label="claimed against fair speedup" width="{width}" height="{height}">',
           f'<rect x="{pad}" y="{pad}" width="{width - 2 * pad}" height="{height - 2 * pad}" fill="none" stroke="#999"/>',
           f'<line x1="{sx(lo):.1f}" y1="{sy(lo):.1f}" x2="{sx(hi):.1f}" y2="{sy(hi):.1f}" stroke="#bbb" stroke-dasharray="4"/>']
    d = lo
    while d <= hi * 1.0001:
        out.append(f'<text x="{sx(d):.1f}" y="{height - pad + 14}" text-anchor="middle">{d:g}x</text>'
                   f'<text x="{pad - 4}" y="{sy(d) + 4:.1f}" text-anchor="end">{d:g}x</text>')
        d *= 10
    out.append(f'<text x="{width / 2}" y="{height - 6}" text-anchor="middle">claimed (KernelBench-style loop)</text>'
               f'<text x="12" y="{height / 2}" transform="rotate(-90 12 {height / 2})" text-anchor="middle">'
               f'fair (against TF32 PyTorch)</text>')
    for lab, c, f, ok in pts:
        out.append(f'<circle cx="{sx(c):.1f}" cy="{sy(f):.1f}" r="4" fill="{"#2e7d32" if ok else "#c62828"}">'
                   f'<title>{escape(lab)}: claimed {c:.2f}x, fair {f:.2f}x</title></circle>')
    out.append("</svg>")
    return "".join(out)


def render(results: list[SubmissionResult], *, policy: str = "kernelbench", dynamic: str = "off",
           title: str = "hackscan audit") -> str:
    s = summary(results)
    parts = [f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>{escape(title)}</h1>",
             f'<p class="muted">hackscan {escape(__version__)}; policy {escape(policy)}; dynamic {escape(dynamic)}; '
             f'{s["submissions"]} submissions, {s["findings"]} findings.</p>',
             "<h2>Verdicts</h2><table><tr>" + "".join(f"<th>{_v(v)}</th>" for v in VERDICTS) + "</tr><tr>"
             + "".join(f'<td class="num">{s["verdicts"][v]}</td>' for v in VERDICTS) + "</tr></table>"]
    by_type = Counter()
    for r in results:
        for t in r.hack_types:
            by_type[(t, r.verdict)] += 1
    if by_type:
        items = [(f"{t} ({v})", n, COLORS.get(v, "#999")) for (t, v), n in sorted(by_type.items(), key=lambda x: -x[1])]
        parts.append("<h2>Submissions per hack type and verdict</h2>" + _bars(items, "submissions per hack type"))
    from hackscan.inputs.kernelbench_runs import summary as kb_summary

    kb = kb_summary(results)
    if kb:
        parts.append("<h2>KernelBench's own evaluation</h2><table><tr><th>samples</th><th>marked correct</th>"
                     "<th>of those hacked</th><th>of those in violation</th><th>of those clean</th></tr><tr>"
                     + "".join(f'<td class="num">{kb[k]}</td>' for k in (
                         "samples", "claimed_correct", "claimed_correct_but_hacked", "claimed_correct_but_violation",
                         "claimed_correct_and_clean")) + "</tr></table>")
    measured = [r for r in results if r.measure and r.measure.get("status") == "measured"]
    if measured:
        parts.append("<h2>Measurement</h2>")
        parts.append(_scatter([(r.path, r.measure["speedup"].get("naive"), r.measure["speedup"].get("fair"),
                                bool(r.measure.get("counted"))) for r in measured]))
        mem = [(r.path, r.measure.get("memory", {}).get("ratio")) for r in measured]
        mem = [(p, x) for p, x in mem if x is not None]
        if mem:
            parts.append("<h3>Peak memory, candidate over reference</h3>" + _bars(
                [(p[-40:], round(x, 2), "#c62828" if x > 1 else "#2e7d32") for p, x in mem], "memory ratio"))
        rows = ["<table><tr><th>submission</th><th>verdict</th><th>median ms</th><th>fair (vs TF32)</th>"
                "<th>vs strict fp32</th><th>claimed (KernelBench-style)</th><th>memory ratio</th><th>flags</th>"
                "<th>counted</th></tr>"]
        for r in measured:
            m, sp = r.measure, r.measure["speedup"]
            rows.append(f"<tr><td><code>{escape(r.path)}</code></td><td>{_v(r.verdict)}</td>"
                        f'<td class="num">{_fmt(m["candidate"]["median_ms"], ".4f")}</td>'
                        f'<td class="num">{_fmt(sp.get("fair"), ".2f", "x")}</td>'
                        f'<td class="num">{_fmt(sp.get("vs_strict"), ".2f", "x")}</td>'
                        f'<td class="num">{_fmt(sp.get("naive"), ".2f", "x")}</td>'
                        f'<td class="num">{_fmt((m.get("memory") or {}).get("ratio"), ".2f", "x")}</td>'
                        f'<td class="flag">{escape(", ".join(f["flag"] for f in m.get("flags", [])))}</td>'
                        f'<td>{"yes" if m.get("counted") else "no"}</td></tr>')
        rows.append("</table>")
        parts.append("".join(rows))
    parts.append("<h2>Submissions</h2><table><tr><th>submission</th><th>verdict</th><th>rests on</th>"
                 "<th>hack types</th><th>details</th></tr>")
    for r in results:
        det = []
        for reason in r.reasons:
            det.append(f"<li>{escape(reason)}</li>")
        for p in r.problem:
            det.append(f"<li>problem <code>{escape(p['id'])}</code>: {escape(p['detail'])}</li>")
        nc = not_checked(r)
        if nc:
            det.append(f"<li>not checked here: {escape(nc)}</li>")
        body = f"<ul>{''.join(det)}</ul>" if det else ""
        if r.findings:
            body += "<details><summary>" + f"{len(r.findings)} finding{'s' if len(r.findings) != 1 else ''}</summary><ul>"
            for f in r.findings:
                dyn = f" [dynamic: {escape(f.dynamic.status)}" + (f" by {escape(f.dynamic.probe)}" if f.dynamic.probe else "") + "]" \
                    if f.dynamic.status != "not-run" else ""
                body += (f"<li><code>{escape(f.rule_id)}</code> line {f.location.line}: {escape(f.message)}{dyn}"
                         + (f"<pre>{escape(f.snippet)}</pre>" if f.snippet else "") + "</li>")
            body += "</ul></details>"
        if r.measure is not None:
            body += "<pre>" + escape("\n".join(x.strip() for x in measure_lines(r.measure))) + "</pre>"
        parts.append(f"<tr><td><code>{escape(r.path)}</code></td><td>{_v(r.verdict)}</td><td>{basis(r)}</td>"
                     f"<td>{escape(', '.join(r.hack_types))}</td><td>{body}</td></tr>")
    parts.append("</table></body></html>\n")
    return "\n".join(parts)


def render_dataset(summary: dict, results_path, limit: int = 1000, title: str = "hackscan clean") -> str:
    """The report of a cleaned dataset: counts, verdicts per hack type, and the first `limit`
    removed or suspect rows (read from results.jsonl as a stream)."""
    import json

    parts = [f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{escape(title)}</title>"
             f"<style>{CSS}</style></head><body>", f"<h1>{escape(title)}</h1>",
             f'<p class="muted">hackscan {escape(__version__)}; {escape(str(summary.get("dataset", "")))}; policy '
             f'{escape(str(summary.get("policy")))}; dynamic {escape(str(summary.get("dynamic")))}; '
             f'{summary["rows"]} rows, {summary["kept"]} kept, {summary["removed"]} removed '
             f'({escape(", ".join(summary.get("removed_verdicts", [])))}).</p>']
    v = summary.get("verdicts", {})
    parts.append("<h2>Verdicts</h2><table><tr>" + "".join(f"<th>{_v(k)}</th>" for k in VERDICTS) + "</tr><tr>"
                 + "".join(f'<td class="num">{v.get(k, 0)}</td>' for k in VERDICTS) + "</tr></table>")
    items = [(f"{t} ({verdict})", n, COLORS.get(verdict, "#999"))
             for t, by in summary.get("hack_types", {}).items() for verdict, n in by.items()]
    if items:
        parts.append("<h2>Rows per hack type and verdict</h2>"
                     + _bars(sorted(items, key=lambda x: -x[1]), "rows per hack type"))
    rows, points, mem = [], [], []
    with open(results_path, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            m = rec.get("measure")
            if m and len(points) < 5000:   # measured rows (`--measure`): at most 5000 points drawn
                label = str(rec.get("id") if rec.get("id") is not None else rec["row"])
                if m.get("fair") is not None and m.get("naive") is not None:
                    points.append((label, m["naive"], m["fair"], bool(m.get("counted"))))
                if m.get("memory_ratio") is not None:
                    mem.append((label, m["memory_ratio"]))
            if rec["verdict"] == "clean" or len(rows) >= limit:
                continue
            rows.append(f"<tr><td>{escape(str(rec.get('id')))}</td><td class=\"num\">{rec['row']}</td>"
                        f"<td>{_v(rec['verdict'])}</td><td>{escape(', '.join(rec.get('hack_types', [])))}</td>"
                        f"<td>{escape('; '.join(rec.get('reasons', []))[:600])}</td></tr>")
    if points:
        parts.append(f"<h2>Measurement ({len(points)} rows)</h2>" + _scatter(points))
    if mem:
        worse = sum(x > 1 for _, x in mem)
        parts.append(f"<h3>Peak memory, candidate over reference: {worse} of {len(mem)} rows above 1</h3>" + _bars(
            [(p[-40:], round(x, 2), "#c62828" if x > 1 else "#2e7d32") for p, x in sorted(mem, key=lambda t: -t[1])[:60]],
            "memory ratio"))
    if rows:
        parts.append(f"<h2>Rows not clean (first {len(rows)})</h2><table><tr><th>id</th><th>row</th><th>verdict</th>"
                     "<th>hack types</th><th>reasons</th></tr>" + "".join(rows) + "</table>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
