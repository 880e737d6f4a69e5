"""Every output format through one pure function of the results (`hackscan audit` streams jsonl
line by line instead)."""
from __future__ import annotations

from hackscan.findings import SubmissionResult


FORMATS = ("text", "json", "jsonl", "sarif", "html")


def render(fmt: str, results: list[SubmissionResult], *, policy: str = "kernelbench", dynamic: str = "off",
           config: str | None = None, rules=(), color: bool = False, show_clean: bool = True, root=None) -> str:
    """The whole report in one format: a pure function of the results and the run's settings
    (each format's module renders; `hackscan audit` streams jsonl line by line instead)."""
    if fmt == "text":
        from hackscan.report import text

        return text.render(results, color=color, show_clean=show_clean, root=root, dynamic=dynamic)
    if fmt == "json":
        from hackscan.report import jsonout

        return jsonout.render(results, policy=policy, dynamic=dynamic, config=config)
    if fmt == "jsonl":
        from hackscan.report import jsonout

        return "".join(jsonout.render_line(r) for r in results)
    if fmt == "html":
        from hackscan.report import html

        return html.render(results, policy=policy, dynamic=dynamic)
    if fmt == "sarif":
        from hackscan.report import sarif

        return sarif.render(results, list(rules))
    raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
