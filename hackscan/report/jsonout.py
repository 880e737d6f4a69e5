"""JSON (one versioned document) and JSONL (one submission per line)."""
from __future__ import annotations

import json

from hackscan._version import __version__
from hackscan.findings import SubmissionResult
from hackscan.report import summary

SCHEMA_VERSION = 1


def document(results: list[SubmissionResult], *, policy: str, dynamic: str = "off", config: str | None = None) -> dict:
    from hackscan.inputs.kernelbench_runs import summary as kb_summary

    doc = {
        "schema": "hackscan-audit",
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "hackscan", "version": __version__},
        "policy": policy,
        "dynamic": dynamic,
        "config": config,   # the configuration file this audit used (None: defaults and flags only)
        "submissions": [r.to_json() for r in results],
        "summary": summary(results),
    }
    kb = kb_summary(results)
    if kb:
        doc["kernelbench_run"] = kb
    return doc


def render(results: list[SubmissionResult], *, policy: str, dynamic: str = "off", config: str | None = None) -> str:
    return json.dumps(document(results, policy=policy, dynamic=dynamic, config=config), indent=2) + "\n"


def render_line(result: SubmissionResult) -> str:
    d = result.to_json()
    d["schema_version"] = SCHEMA_VERSION
    return json.dumps(d, separators=(",", ":")) + "\n"
