"""What a full-size problem keeps under a disk budget: one problem whose input set and output are
each MIB MiB (fp32), audited with `--dynamic all` under a disk budget per worker that holds a few
sets, as ten audits side by side on the H200's 64 GiB disk left each. Reports, per run: the hidden
sets the reference wrote, those it kept outputs for, the probes in error for want of outputs, the
bytes the candidate's worker wrote against what its calls returned, and the wall time.

For an A/B of two checkouts, run it from each with PYTHONPATH pointing at that checkout:

    PYTHONPATH=. python bench/disk_budget.py LABEL [--mib 16] [--budget-mib 200] [--device cuda]
"""
import argparse
import json
import os
import pathlib
import tempfile
import textwrap
import time

from hackscan.api import scan_item
from hackscan.dynamic.audit import DynamicOptions, DynamicSession
from hackscan.engine import Options
from hackscan.inputs.discover import Item

# an RMS normalisation over rows: one input, one output of the same size (a full-size KernelBench
# Level-1 norm is 256-1024 MiB of each)
REF = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, x):
        return x / (x.pow(2).mean(dim=1, keepdim=True) + 1e-5).sqrt()
ROWS = {rows}
def get_inputs():
    return [torch.randn(ROWS, 1024)]
def get_init_inputs():
    return []
"""
CAND = """
import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(dim=1, keepdim=True) + 1e-5)
"""

ap = argparse.ArgumentParser()
ap.add_argument("label")
ap.add_argument("--mib", type=int, default=16)
ap.add_argument("--budget-mib", type=int, default=200)
ap.add_argument("--device", default="cpu")
a = ap.parse_args()

d = pathlib.Path(tempfile.mkdtemp())
ref = d / "ref.py"
ref.write_text(textwrap.dedent(REF).format(rows=a.mib * 256))
cand = d / "cand.py"
cand.write_text(textwrap.dedent(CAND))
s = DynamicSession(DynamicOptions(mode="all", device=a.device, timeout_s=600, seed=11,
                                  disk_budget_bytes=a.budget_mib << 20))
seen = {}
run_worker = s.pooled_worker


def watch(job, files, limits, env, jobdir, *rest, **kw):
    """The candidate's main worker: what its calls returned and what it wrote (read before the
    session removes its folder)."""
    res = run_worker(job, files, limits, env, jobdir, *rest, **kw)
    if job.get("role") == "candidate" and res.ok:
        steps = [r for r in res.data.get("steps", []) if isinstance(r, dict)]
        kept = [r for r in steps if r.get("file")]
        on_disk = {f.name: f.stat().st_size for f in pathlib.Path(jobdir).glob("out_*")}
        seen.update(calls=len(steps), outputs_kept=len(kept), outputs_not_kept=sum(1 for r in steps if "not_kept" in r),
                    files=len(on_disk), bytes_written=sum(on_disk.values()),
                    bytes_returned=len(kept) * (a.mib << 20))
    return res


s.pooled_worker = watch
t0 = time.perf_counter()
try:
    out = s.audit(scan_item(Item(cand, ref, cand.name), Options()), cand, ref)
    r = s.reference(ref, 0)
finally:
    wall = time.perf_counter() - t0
    s.close()
hidden = out.dynamic.get("hidden_sets", {})
skipped = hidden.get("skipped", {})
probes = out.dynamic.get("probes", {})
print(json.dumps({
    "code": a.label, "device": a.device, "set_mib": a.mib, "budget_mib": a.budget_mib, "cpus": os.cpu_count(),
    "verdict": out.verdict, "correct_on_visible": out.dynamic.get("correct_on_visible"),
    "reference_sets_with_outputs": sorted(k for k in r.outputs if k not in ("visible", "visible2")),
    "sets_skipped": len(skipped),
    "skipped_inputs_written_outputs_refused": sorted(k for k, v in skipped.items() if "outputs too large" in v),
    "probes_in_error": {k: v["detail"][:80] for k, v in probes.items() if v["status"] == "error"},
    "hidden_distributions": probes.get("hidden-distributions", {}).get("detail", "")[:160],
    "candidate": seen, "wall_s": round(wall, 2)}))
