"""What every surface shows for the four outcomes issue 35 names, in one run on this machine:
a verified clean kernel, a hack, an unverifiable audit, and an audit that raised.

The four cases are written here: an honest Triton square; the same square clamping what it reads
to [0, 1] (right only on the benchmark's uniform inputs: a value-special-casing cheat no rule
suspects); the honest square against a reference with no `get_inputs` (nothing to run it on);
and the honest square with a failure injected into the auditor's candidate worker (the case's
source carries a marker the injected failure looks for; the audited code never sees it).

Surfaces: the CLI (`hackscan audit --dynamic auto`: text line, exit code, JSON, JSONL, SARIF,
HTML), `hackscan clean --dynamic auto`, the RL reward (`compute_score`), the KernelBench drop-in
(`eval_kernel_against_ref`) and KernelGuard's api-mode object. Everything runs in this process
(the CLI through `hackscan.cli.main`), so the injected failure reaches every surface.

    python bench/surfaces.py --device cpu --out bench/results/surfaces-<date>-cpu.md

(The cases' kernels are the issue's own tests', imported from tests/test_issue35_verdict.py.)
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import sys
import tempfile
from datetime import date
from pathlib import Path

# the kernels of the issue's own tests (tests/test_issue35_verdict.py), one copy of each
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from test_issue35_verdict import NO_INPUTS_REF as NO_INPUTS, SQUARE, SQUARE_CLAMPED as CLAMPED, SQUARE_REF as REF

MARK = "# surfaces-bench: inject a failure"
CASES = {"verified clean": (SQUARE, REF), "hack": (CLAMPED, REF), "unverifiable": (SQUARE, NO_INPUTS),
         "audit raised": (SQUARE + "\n" + MARK + "\n", REF)}


@contextlib.contextmanager
def injected_failure():
    """The candidate worker raises in the auditor for the marked case only."""
    from hackscan.dynamic.audit import DynamicSession

    real = DynamicSession.pooled_worker

    def pooled_worker(self, job, files, *a, **k):
        src = Path(files["candidate_module.py"]).read_text()
        if MARK in src:
            raise OSError("injected: the auditor lost its worker folder")
        return real(self, job, files, *a, **k)

    DynamicSession.pooled_worker = pooled_worker
    try:
        yield
    finally:
        DynamicSession.pooled_worker = real


def cli(args: list[str]) -> tuple[int, str]:
    from hackscan.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(args)
    return rc, buf.getvalue()


def run(device: str) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="hackscan-surfaces-"))
    rows: dict[str, dict] = {}
    with injected_failure():
        for name, (cand, ref) in CASES.items():
            d = tmp / re.sub(r"\W+", "_", name)
            d.mkdir()
            (d / "candidate.py").write_text(cand)
            (d / "ref.py").write_text(ref)
            base = ["audit", str(d / "candidate.py"), "--reference", str(d / "ref.py"), "--dynamic", "auto",
                    "--device", device, "--no-progress"]
            row = {}
            rc, text = cli(base)
            row["text"] = next((ln.split(": ", 1)[1] for ln in text.splitlines()
                                if ln.startswith(str(d / "candidate.py") + ": ")), "?")
            row["exit"] = rc
            rc, js = cli(base + ["--format", "json"])
            sub = json.loads(js)["submissions"][0]
            row["json"] = f"{sub['verdict']}, evidence {sub['evidence']}"
            rc, jl = cli(base + ["--format", "jsonl"])
            row["jsonl"] = json.loads(jl.splitlines()[0])["verdict"]
            rc, sarif = cli(base + ["--format", "sarif"])
            run_ = json.loads(sarif)["runs"][0]
            notes = [n["level"] for n in run_["invocations"][0]["toolExecutionNotifications"]]
            row["sarif"] = (f"{len(run_['results'])} results, notifications {notes or 'none'}, "
                            f"verdict {run_['properties']['hackscan']['submissions'][0]['verdict']}")
            html = tmp / f"{d.name}.html"
            cli(base + ["--format", "html", "-o", str(html)])
            m = re.search(r'<span class="v"[^>]*>(\w+)</span></td><td>(\w+)</td>', html.read_text())
            row["html"] = f"{m.group(1)} ({m.group(2)})" if m else "?"
            from hackscan.integrations.rl import compute_score

            rw = compute_score("bench", f"```python\n{cand}```", ref, {"device": device, "dynamic": "auto"})
            row["reward"] = f"{rw['outcome']} {rw['score']:+.1f}, infra_error {rw['infra_error']}"
            from hackscan.integrations.kernelbench import eval_kernel_against_ref

            kb = eval_kernel_against_ref(ref, cand, device=device, measure_performance=False)
            row["kernelbench"] = (f"compiled {kb.compiled}, correctness {kb.correctness}, "
                                  f"hackscan_verdict {kb.metadata.get('hackscan_verdict')}")
            rows[name] = row
        # KernelGuard's api mode reads stdin: one call per case
        for name, (cand, ref) in CASES.items():
            d = tmp / re.sub(r"\W+", "_", name)
            old = sys.stdin
            sys.stdin = io.TextIOWrapper(io.BytesIO(cand.encode()))
            try:
                rc, out = cli(["audit", "--api-mode", "--reference", str(d / "ref.py"), "--dynamic", "auto",
                               "--device", device])
            finally:
                sys.stdin = old
            obj = json.loads(out.strip().splitlines()[-1])
            rows[name]["kernelguard"] = f"{obj['classification']}, should_filter {obj['should_filter']}"
        # hackscan clean over the four as dataset rows
        data = tmp / "rows.jsonl"
        data.write_text("".join(json.dumps({"id": name, "code": cand, "reference": ref}) + "\n"
                                for name, (cand, ref) in CASES.items()))
        out = tmp / "cleaned"
        rc, _ = cli(["clean", str(data), "--out", str(out), "--dynamic", "auto", "--device", device, "--id-col", "id",
                     "--no-progress"])
        kept = {json.loads(x)["id"] for x in (out / "cleaned.jsonl").read_text().splitlines() if x.strip()}
        apart = ({json.loads(x)["id"] for x in (out / "unverified.jsonl").read_text().splitlines() if x.strip()}
                 if (out / "unverified.jsonl").is_file() else set())
        for x in (out / "results.jsonl").read_text().splitlines():
            rec = json.loads(x)
            name = rec.get("id")
            if name in rows:
                where = "cleaned.jsonl" if name in kept else ("unverified.jsonl" if name in apart else "removed")
                rows[name]["clean"] = f"{rec['verdict']} ({rec.get('evidence')}), {where}"
    return rows


SURFACES = ["text", "exit", "json", "jsonl", "sarif", "html", "clean", "reward", "kernelbench", "kernelguard"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    rows = run(a.device)
    lines = [f"# What each surface shows (issue 35), {date.today().isoformat()}, device {a.device}", "",
             f"Command: `python bench/surfaces.py --device {a.device}`", "",
             "| surface | " + " | ".join(CASES) + " |", "|---|" + "---|" * len(CASES)]
    for s in SURFACES:
        lines.append(f"| {s} | " + " | ".join(str(rows[c].get(s, "-")).replace("|", "/") for c in CASES) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
