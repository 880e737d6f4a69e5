"""`--backend ray` against a local Ray instance on the CPU: the same results as the local pool
for static audits and `hackscan clean`, the CPU-dynamic path, cancellation of a hung task, one
retry when a worker dies, and a fresh worker process per GPU-style task."""
from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from hackscan.parallel import BatchFailure, LocalBackend, RayBackend  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))

from test_clean import corpus_rows, write_jsonl  # noqa: E402
from test_dynamic import HONEST, RELU_REF  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    # the test functions below travel by value: Ray's workers need not import this file
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


def _square(x):
    return x * x


def _sleep_forever(x):
    time.sleep(600)
    return x


def _die_once(marker):
    """The first attempt kills its worker process; the retry finds the marker and answers."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return "second attempt"


def _die_always(_):
    os._exit(1)


def _pid(_):
    return os.getpid()


def _raise(_):
    raise ValueError("bad batch")


def test_results_in_input_order_and_failures_per_batch():
    b = RayBackend(2)
    got = list(b.map(_square, range(20)))
    assert got == [(i, i * i) for i in range(20)]
    (_, res), = list(b.map(_raise, [1]))
    assert isinstance(res, BatchFailure) and "bad batch" in res.reason
    # the local pool answers the same
    assert list(LocalBackend(2).map(_square, range(20))) == got


def test_hung_task_is_cancelled_after_its_timeout():
    b = RayBackend(2, timeout_s=3)
    t0 = time.monotonic()
    out = list(b.map(_sleep_forever, [1]))
    assert time.monotonic() - t0 < 60
    assert isinstance(out[0][1], BatchFailure) and "timed out" in out[0][1].reason
    # the cluster is usable afterwards
    assert list(RayBackend(2).map(_square, [3])) == [(3, 9)]


def test_worker_death_is_retried_once(tmp_path):
    b = RayBackend(2)
    (_, res), = list(b.map(_die_once, [str(tmp_path / "marker")]))
    assert res == "second attempt"
    (_, res), = list(b.map(_die_always, [0]))           # a second death is reported, not raised
    assert isinstance(res, BatchFailure) and "Ray task failed" in res.reason


def test_gpu_style_tasks_get_a_fresh_process_each():
    pids = [r for _, r in RayBackend(2, fresh_process=True).map(_pid, range(4))]
    assert len(set(pids)) == 4
    reused = [r for _, r in RayBackend(1).map(_pid, range(4))]   # static work keeps its workers
    assert len(set(reused)) < 4


def test_cli_static_audit_same_as_local(cli):
    local = cli("audit", "--format", "json", "--jobs", "2", "corpus/synthetic/result-caching",
                "corpus/synthetic/legit", "corpus/synthetic/torch-fallback")
    viaray = cli("audit", "--format", "json", "--jobs", "2", "--backend", "ray", "corpus/synthetic/result-caching",
                 "corpus/synthetic/legit", "corpus/synthetic/torch-fallback")
    a, b = json.loads(local.stdout), json.loads(viaray.stdout)
    key = [(s["path"], s["verdict"], [f["rule_id"] for f in s["findings"]]) for s in a["submissions"]]
    assert len(key) > 20 and key == [(s["path"], s["verdict"], [f["rule_id"] for f in s["findings"]])
                                     for s in b["submissions"]]
    assert local.returncode == viaray.returncode


def test_clean_via_ray_same_rows_as_local(tmp_path):
    from hackscan.clean import CleanOptions, clean

    rows = corpus_rows()
    ds = tmp_path / "gen.jsonl"
    write_jsonl(ds, rows, ['{"id": "broken", "code": '])
    s_local = clean(ds, tmp_path / "local", CleanOptions(jobs=2))
    s_ray = clean(ds, tmp_path / "ray", CleanOptions(jobs=2, backend="ray"))
    assert s_local["verdicts"] == s_ray["verdicts"] and s_local["kept"] == s_ray["kept"]
    assert (tmp_path / "local" / "cleaned.jsonl").read_bytes() == (tmp_path / "ray" / "cleaned.jsonl").read_bytes()

    def rows_of(d):
        return sorted((r["row"], r["verdict"], r["hack_types"]) for r in
                      map(json.loads, (d / "results.jsonl").read_text().splitlines()))
    assert rows_of(tmp_path / "local") == rows_of(tmp_path / "ray")


def test_cli_dynamic_on_cpu_via_ray(tmp_path, cli):
    """The CPU-dynamic path: Ray tasks run the audit (each candidate still in its own isolated
    worker), and the verdicts are the dynamic ones."""
    d = tmp_path / "pairs"
    d.mkdir()
    (d / "reference.py").write_text(textwrap.dedent(RELU_REF))
    (d / "honest.py").write_text(textwrap.dedent(HONEST))
    (d / "identity.py").write_text(textwrap.dedent(HONEST).replace("torch.clamp_min(x, 0.0)", "x"))
    (d / "crashes.py").write_text(textwrap.dedent(HONEST).replace("return torch.clamp_min(x, 0.0)",
                                                                  "import os; os._exit(3)"))
    def audit(*extra):
        r = cli("audit", "--dynamic", "all", "--device", "cpu", "--format", "json", *extra, str(d), timeout=900)
        return {Path(s["path"]).name: s for s in json.loads(r.stdout)["submissions"]}

    by = audit("--backend", "ray")
    assert by["identity.py"]["verdict"] == "hacked", by["identity.py"]
    assert by["identity.py"]["dynamic"]["status"] == "ran"
    assert any(f["dynamic"]["status"] == "confirmed" for f in by["identity.py"]["findings"])
    # honest but written in torch: correct on every input, a contract violation under the kernelbench policy
    assert by["honest.py"]["verdict"] == "violation" and by["honest.py"]["dynamic"]["correct_on_visible"]
    assert by["crashes.py"]["verdict"] == "error"
    local = audit("--jobs", "2")
    assert {k: v["verdict"] for k, v in by.items()} == {k: v["verdict"] for k, v in local.items()}


def test_dynamic_tasks_group_problems_and_keep_input_order(tmp_path):
    """Candidates are ordered by problem and cut into tasks (a problem's candidates stay
    together, at least two tasks per slot); results come back in input order, and a failed task
    turns its candidates, and only those, into errors."""
    from dataclasses import replace

    from hackscan.dynamic.remote import audit_many_ray
    from hackscan.findings import SubmissionResult

    refs = []
    for k in range(3):
        refs.append(tmp_path / f"ref{k}.py")
        refs[-1].write_text(f"# problem {k}\n")
    base = SubmissionResult(path="", verdict="clean", reasons=(), hack_types=(), findings=())
    triples = [(replace(base, path=f"c{i}.py"), tmp_path / f"c{i}.py", refs[i % 3]) for i in range(12)]

    class Fake:
        jobs = 1
        tasks: list = []

        def map(self, fn, items):
            for x in items:
                _, payload, _ = x
                self.tasks.append([Path(ref).name for _, _, ref in payload])
                if len(self.tasks) == 2:
                    yield x, BatchFailure("worker died twice")
                else:
                    yield x, [replace(r, dynamic={"status": "ran", "task": len(self.tasks)}) for r, _, _ in payload]

    fake = Fake()
    out = list(audit_many_ray(fake, None, triples))
    assert [r.path for r in out] == [f"c{i}.py" for i in range(12)]
    assert len(fake.tasks) == 2 and all(len(t) == 6 for t in fake.tasks)
    assert all(len(set(t)) <= 2 for t in fake.tasks)           # grouped: a task holds one or two problems
    failed = {r.path for r in out if r.dynamic["status"] == "error"}
    assert len(failed) == 6 and all("worker died twice" in r.dynamic["reason"] for r in out if r.path in failed)
