"""Cost of measuring a candidate of a new problem (the reference timed, strict and TF32, then the
candidate): five small matmul problems, each measured once in one session, on the CPU or a GPU.
For an A/B of two checkouts, run it from each with PYTHONPATH pointing at that checkout:

    PYTHONPATH=. python bench/measure_cost.py LABEL [--device cuda]

HACKSCAN_PRESTART=2 in the environment has the measurement take started workers; `--jobs J`
measures the five problems J at a time (timings still one at a time on the device) and reports
the wall time of all five.
"""
import json
import pathlib
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

from hackscan.api import scan_item
from hackscan.dynamic.audit import DynamicOptions, DynamicSession
from hackscan.engine import Options
from hackscan.inputs.discover import Item
REF = """
import torch
import torch.nn as nn
class Model(nn.Module):
    def forward(self, a, b):
        return torch.relu(a @ b)
def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]
def get_init_inputs():
    return []
"""
CAND = """
import torch
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.mm(a, b).clamp_min_(0)
"""
d = pathlib.Path(tempfile.mkdtemp())
device = "cuda" if "--device" in sys.argv and sys.argv[sys.argv.index("--device") + 1] == "cuda" else "cpu"
s = DynamicSession(DynamicOptions(mode="off", device=device, timeout_s=300, seed=3, measure="all", measure_budget_s=1.0))
jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 1


def one(n):
    ref = d / f"ref{n}.py"
    ref.write_text(textwrap.dedent(REF).replace("N, N", f"{n}, {n}"))
    cand = d / f"c{n}.py"
    cand.write_text(textwrap.dedent(CAND))
    t0 = time.perf_counter()
    m = s.measure(scan_item(Item(cand, ref, cand.name), Options()), cand, ref).measure
    assert m["status"] == "measured", m
    return time.perf_counter() - t0, m.get("phases_s", {})


t_all = time.perf_counter()
with ThreadPoolExecutor(max_workers=jobs) as ex:   # --jobs J: J problems measured at a time
    got = list(ex.map(one, (96, 112, 128, 144, 160)))
wall = time.perf_counter() - t_all
secs, phases = [g[0] for g in got], [g[1] for g in got]
s.close()


def per(key):
    return [p.get(key) for p in phases]


print(json.dumps({"code": sys.argv[1], "device": device, "prestart": s.opts.prestart, "jobs": jobs,
                  "wall_s": round(wall, 2),
                  "per_problem_s": [round(x, 2) for x in secs], "mean_s": round(sum(secs) / len(secs), 2),
                  # where each problem's time went: the reference's worker, its input preparation
                  # (inside the device lock), the candidate's worker
                  "reference_worker_s": per("reference_worker_s"), "reference_prepare_s": per("reference_prepare_s"),
                  "reference_gate_wait_s": per("reference_gate_wait_s"),
                  "candidate_worker_s": per("candidate_worker_s")}))
