"""The worker's guard (hackscan.dynamic.worker.guard) tells a look at public source from a reach
for the worker: torch.compile reads the source of the frames on its stack (the worker's among
them) through the standard library, which was reported as the candidate opening the worker's
own files, a false `hacked` (harness-tampering) on a torch.compile'd kernel. The audit hook
cannot be removed once added: each case runs in a process of its own."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from conftest import ROOT

CANDIDATE = '''
import linecache, os

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER_SRC = os.path.join(HERE, "_hsworker", "steps.py")

def through_linecache():
    return len(linecache.getlines(WORKER_SRC))

def read_directly():
    with open(WORKER_SRC) as fh:
        return len(fh.read())

def write_source():
    with open(WORKER_SRC, "a") as fh:
        fh.write("# changed")

def read_job():
    with open(os.path.join(HERE, "job.json")) as fh:
        return fh.read()
'''

DRIVER = '''
import importlib.util, json, sys
from hackscan.dynamic.worker import guard
job = sys.argv[1]
seen = []
guard.install(seen.append, job)
spec = importlib.util.spec_from_file_location("cand", job + "/cand.py")
cand = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cand)
getattr(cand, sys.argv[2])()
print(json.dumps(seen))
'''


def _events(tmp_path, fn: str) -> list[str]:
    job = tmp_path / fn
    (job / "_hsworker").mkdir(parents=True)
    (job / "_hsworker" / "steps.py").write_text("def step():\n    return 1\n")
    (job / "job.json").write_text(json.dumps({"role": "candidate"}))
    (job / "cand.py").write_text(textwrap.dedent(CANDIDATE))
    p = subprocess.run([sys.executable, "-c", DRIVER, str(job), fn], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_a_frames_source_read_through_the_standard_library_is_no_tampering(tmp_path):
    assert _events(tmp_path, "through_linecache") == []


def test_the_candidates_own_reads_and_writes_of_the_worker_and_its_job_are_reported(tmp_path):
    for fn, name in (("read_directly", "steps.py"), ("write_source", "steps.py"), ("read_job", "job.json")):
        got = _events(tmp_path, fn)
        assert got and f"opened the worker's own file '{name}'" in got[0], (fn, got)
