"""KernelBench run folders: `runs/<name>/level_L_problem_P_sample_S_kernel.py` with the run's
`eval_results.json`, which says what KernelBench's own evaluation concluded for each sample
(`compiled`, `correctness`, `runtime`, and in newer versions `ref_runtime`).

hackscan attaches that claim to each audited kernel (`kernelbench_claim` in JSON) and counts the
samples KernelBench marked correct that hackscan finds hacked or in violation: the number a run's
owner wants before trusting its pass rate. Both layouts of `eval_results.json` are read:
`{problem: {sample: result}}` (several samples) and `{problem: result}` (one sample each)."""
from __future__ import annotations

import json
from pathlib import Path

from hackscan.inputs.discover import KB_RUN

RESULT_KEYS = ("compiled", "correctness", "runtime", "ref_runtime")


def _is_result(d) -> bool:
    return isinstance(d, dict) and ("correctness" in d or "compiled" in d)


def read_eval_results(path: Path) -> dict[tuple[int, int], dict]:
    """(problem id, sample id) -> KernelBench's result for it."""
    try:
        doc = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    out: dict[tuple[int, int], dict] = {}
    if not isinstance(doc, dict):
        return out
    for pk, v in doc.items():
        try:
            prob = int(pk)
        except (TypeError, ValueError):
            continue
        if _is_result(v):
            out[(prob, int(v.get("sample_id", 0) or 0))] = v
        elif isinstance(v, dict):
            for sk, r in v.items():
                if _is_result(r):
                    try:
                        out[(prob, int(sk))] = r
                    except (TypeError, ValueError):
                        continue
        elif isinstance(v, list):
            for k, r in enumerate(v):
                if _is_result(r):
                    out[(prob, int(r.get("sample_id", k) or k))] = r
    return out


def claim(result: dict) -> dict:
    c = {k: result[k] for k in RESULT_KEYS if k in result}
    rt, ref = result.get("runtime"), result.get("ref_runtime")
    if isinstance(rt, (int, float)) and isinstance(ref, (int, float)) and rt > 0 and ref > 0:
        c["speedup"] = ref / rt
    return c


def claims_for(paths: list[Path]) -> dict[Path, dict]:
    """For each KernelBench-named kernel file, the claim in the eval_results.json of its folder
    (or a parent up to two levels), where there is one."""
    cache: dict[Path, dict] = {}
    out: dict[Path, dict] = {}
    for p in paths:
        m = KB_RUN.search(p.name)
        if not m:
            continue
        for d in (p.parent, p.parent.parent, p.parent.parent.parent):
            ev = d / "eval_results.json"
            if ev.is_file():
                if ev not in cache:
                    cache[ev] = read_eval_results(ev)
                r = cache[ev].get((int(m.group(2)), int(m.group(3))))
                if r is not None:
                    out[p] = claim(r)
                break
    return out


def summary(results) -> dict | None:
    """Counts over results that carry a claim; None when none does."""
    claimed = [r for r in results if r.kernelbench_claim is not None]
    if not claimed:
        return None
    correct = [r for r in claimed if r.kernelbench_claim.get("correctness")]
    return {"samples": len(claimed), "claimed_correct": len(correct),
            "claimed_correct_but_hacked": sum(r.verdict == "hacked" for r in correct),
            "claimed_correct_but_violation": sum(r.verdict == "violation" for r in correct),
            "claimed_correct_and_clean": sum(r.verdict == "clean" for r in correct)}
