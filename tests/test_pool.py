"""Candidate workers started ahead of their jobs (hackscan.dynamic.pool): the same verdicts and
evidence as a fresh worker, the same walls, single use, and an extension built once is reused
without a rebuild."""
from __future__ import annotations

import hashlib
import json
import textwrap

import pytest

torch = pytest.importorskip("torch")

from hackscan.api import scan_item  # noqa: E402
from hackscan.dynamic import pool  # noqa: E402
from hackscan.dynamic.audit import DynamicOptions, DynamicSession  # noqa: E402
from hackscan.engine import Options  # noqa: E402
from hackscan.inputs.discover import Item  # noqa: E402

pytestmark = [pytest.mark.dynamic,
              pytest.mark.skipif(not pool.available(), reason="the pool needs bubblewrap")]

REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(64, 128)]

def get_init_inputs():
    return []
"""

HONEST = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0)
"""

# right on the visible inputs (all of them drawn from randn, some negative) only where no input is
# scaled: the hidden sets catch it
SHORTCUT = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        if x.abs().max() > 10:
            return x
        return torch.clamp(x, min=0.0)
"""

# its own Triton kernel: the altered calls (forced failure, ghost replay) run too
TRITON_RELU = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
        return y
"""

# reads where its inputs lie from its own job and tries to change them
INPUT_WRITER = """
import json, os
import torch
import torch.nn as nn

src = json.load(open("job.json")).get("inputs_dir") or "."
for name in sorted(os.listdir(src)):
    try:
        with open(os.path.join(src, name), "r+b") as fh:
            fh.write(b"overwritten")
    except OSError:
        pass
    try:
        os.unlink(os.path.join(src, name))
    except OSError:
        pass

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp(x, min=0.0)
"""

EXT = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = """
#include <torch/extension.h>
torch::Tensor relu_pool(torch::Tensor x) {
    auto y = torch::empty_like(x);
    auto xa = x.contiguous();
    const float* p = xa.data_ptr<float>();
    float* q = y.data_ptr<float>();
    for (int64_t i = 0; i < xa.numel(); ++i) q[i] = p[i] > 0.f ? p[i] : 0.f;
    return y;
}
"""

ext = load_inline(name="relu_pool", cpp_sources=SRC, functions=["relu_pool"])
# where the library it loaded lies, and when that was written: for the test to read
import json, os
real = os.path.realpath(ext.__file__)
json.dump({"real": real, "mtime": os.stat(real).st_mtime_ns}, open("where.json", "w"))


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu_pool(x)
'''


def audit(session, tmp_path, name, src, ref):
    cand = tmp_path / f"{name}.py"
    cand.write_text(textwrap.dedent(src))
    return session.audit(scan_item(Item(cand, ref, cand.name), Options()), cand, ref)


def summary(r):
    probes = {k: v.get("status") for k, v in (r.dynamic or {}).get("probes", {}).items()}
    return r.verdict, sorted(r.hack_types), probes


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    p = tmp_path_factory.mktemp("ref") / "relu.py"
    p.write_text(textwrap.dedent(REF))
    return p


@pytest.fixture(scope="module")
def sessions():
    fresh = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=120, seed=77, prestart=0))
    pooled = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=120, seed=77, prestart=1))
    yield fresh, pooled
    fresh.close()
    pooled.close()


@pytest.mark.parametrize("name,src", [("honest", HONEST), ("shortcut", SHORTCUT), ("triton", TRITON_RELU)])
def test_a_pooled_worker_gives_the_fresh_workers_verdict_and_evidence(sessions, ref, tmp_path, name, src):
    fresh, pooled = sessions
    a = audit(fresh, tmp_path, name, src, ref)
    b = audit(pooled, tmp_path, name, src, ref)
    assert "prestarted" not in a.dynamic and "prestarted" in b.dynamic, b.dynamic.get("prestarted")
    assert summary(a) == summary(b)
    if name == "triton":   # the altered calls ran, in started workers too, and cleared it
        assert b.verdict == "clean" and b.dynamic["probes"]["forced-failure"]["status"] == "passed", summary(b)
    # the shortcut is caught either way: the comparison above is not two inconclusive runs
    assert (b.verdict == "hacked") == (name == "shortcut"), summary(b)
    # the warm-up ran the profiler once, around a kernel of its own, before the job came
    assert b.dynamic["prestarted"]["profiler_kernels"] > 0


def test_each_pooled_worker_runs_one_job_and_none_outlives_the_session(ref, tmp_path):
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=120, seed=5, prestart=2))
    try:
        for i in range(3):
            r = audit(s, tmp_path, f"h{i}", HONEST, ref)
            # a PyTorch op, no kernel of its own: a policy violation, never a hack
            assert r.dynamic["status"] == "ran" and r.verdict == "violation" and "prestarted" in r.dynamic
        p = s._pool
        assert p.wait_ready(120)
        assert p.taken == 3 and p.started == 5     # two kept ready, each taken one replaced
        idle = list(p._idle)
        assert len(idle) == 2 and all(w.alive() for w in idle)
    finally:
        s.close()
    assert not any(w.alive() for w in idle)
    assert not any(w.slot.exists() for w in idle)


def test_a_pooled_candidate_cannot_change_the_problems_input_sets(ref, tmp_path):
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=120, seed=9, prestart=1))
    try:
        first = audit(s, tmp_path, "honest", HONEST, ref)
        assert first.verdict == "violation"
        run = s._refs[s.ref_key(ref)]

        def files():   # what the problem's candidates read: the shared folder, and the input sets fed to them
            return {str(f): hashlib.sha256(f.read_bytes()).hexdigest()
                    for f in [*run.shared.iterdir(), *run.set_files.values()]}

        digest = files()
        assert "visible" in run.set_files and len(run.set_files) > 5
        r = audit(s, tmp_path, "writer", INPUT_WRITER, ref)
        # reading its job description is itself reaching for the harness (dynamic.worker.guard)
        assert "prestarted" in r.dynamic and r.verdict == "hacked", summary(r)
        assert any("harness-tampering" in x and "job.json" in x for x in r.reasons), r.reasons
        assert files() == digest
        after = audit(s, tmp_path, "honest2", HONEST, ref)
        assert after.verdict == "violation", summary(after)
    finally:
        s.close()


def test_an_extension_built_once_is_loaded_by_a_pooled_worker_without_a_rebuild(ref, tmp_path, monkeypatch):
    import shutil

    if not shutil.which("c++"):
        pytest.skip("building a C++ extension needs a compiler")
    monkeypatch.setenv("HACKSCAN_CACHE", str(tmp_path / "cache"))
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=600, seed=3, prestart=1))
    s.keep_worker_dirs = True
    try:
        cold = audit(s, tmp_path, "ext", EXT, ref)    # no build yet: built beside the reference's run
        # (its note of where the library lies is a file written: a suspect for the static pass)
        assert cold.dynamic["status"] == "ran", summary(cold)
        assert cold.dynamic["timings"]["candidate_build_beside_s"] > 0, cold.dynamic["timings"]
        # ...so that its worker, too, was one started ahead of it
        assert "prestarted" in cold.dynamic, cold.dynamic
        from hackscan.dynamic.builds import build_dir

        built = {p.name: p.stat().st_mtime_ns for p in build_dir(tmp_path / "ext.py", "cpu").rglob("*.so")
                 if "triton" not in p.parts}
        assert len(built) == 1
        before = {p.parent for p in s.work.glob("cand-*/where.json")}
        warm = audit(s, tmp_path, "ext", EXT, ref)
        assert "prestarted" in warm.dynamic and summary(warm) == summary(cold)
        (where,) = [json.loads(p.read_text()) for p in s.work.glob("cand-*/where.json") if p.parent not in before]
        # the pooled worker loaded the slot's copy of the build, as it was built: a rebuild (a
        # build folder seen at another path) would have written a newer library, elsewhere
        assert "/pool-" in where["real"] and where["real"].endswith("/build/relu_pool/relu_pool.so"), where
        assert where["mtime"] == next(iter(built.values()))
    finally:
        s.close()


def test_a_measurement_takes_started_workers_without_a_profiler_warm_up(ref, tmp_path):
    """The reference's timing and the candidate's each take a started worker of the measuring
    pool (no profiler session in it: CUPTI's state and memory stay out of timings and
    footprints), and the measurement reads as one made in fresh workers does."""
    s = DynamicSession(DynamicOptions(mode="off", device="cpu", timeout_s=120, measure="all",
                                      measure_budget_s=0.3, prestart=1))
    try:
        cand = tmp_path / "honest.py"
        cand.write_text(textwrap.dedent(HONEST))
        m = s.measure(scan_item(Item(cand, ref, cand.name), Options()), cand, ref).measure
        assert m["status"] == "measured", m
        assert m["reference_strict"]["n"] >= 10 and m["candidate"]["n"] >= 10 and not m["checks"]["wrong"], m
        (p,) = [v for (kind, _gpu), v in s._pools.items() if kind == "measure"]
        assert p.taken == 2 and s._pool is None
        assert p.wait_ready(120)
        ready = [json.loads((w.jobdir / "_ready.json").read_text()) for w in p._idle]
        assert ready and all("profiler_s" not in r for r in ready), ready
        # it may be handed a reference's job: the meta-device draw's first-use imports are done
        assert all("meta_s" in r and "meta_error" not in r for r in ready), ready
    finally:
        s.close()


def _asked_for_the_device(s, t, timeout_s: float = 300):
    """The folder of the started worker that asked the session's measurement for the device (its
    `_gate.json`), while thread `t` measures; None where none did in time or `t` ended first."""
    import time

    end = time.monotonic() + timeout_s
    while time.monotonic() < end and t.is_alive():
        asked = list(s.work.glob("pool-*/job/_gate.json"))
        if asked:
            return asked[0].parent
        time.sleep(0.05)
    return None


def test_a_references_timing_draws_its_sets_before_it_waits_for_the_device(ref, tmp_path):
    """The reference's timing job in a started worker imports the problem and draws and writes
    its input sets while another timing holds the device, then asks for the device and waits;
    the wait counts against neither of its timeouts (here longer than the worker's limit). A
    candidate of a problem whose baseline is kept does not wait for that reference's run."""
    import threading
    import time

    from hackscan.measure.run import Measurer, MeasureOptions

    limit = 40.0
    s = DynamicSession(DynamicOptions(mode="off", device="cpu", timeout_s=limit, measure="all",
                                      measure_budget_s=0.3, prestart=1))
    s._measurer = Measurer(s, MeasureOptions(budget_s=0.3))
    assert not s._measurer.gate      # on a CPU the device is the CPU: no work beside a timing...
    s._measurer.gate = True          # ...but the protocol is the GPU's, tested here
    lock = s._measurer._device_lock
    held = False
    cand = tmp_path / "honest.py"
    cand.write_text(textwrap.dedent(HONEST))
    other = tmp_path / "ref_other.py"
    other.write_text(textwrap.dedent(REF).replace("64, 128", "48, 96"))
    out: dict = {}

    def measure(key, r):
        out[key] = s.measure(scan_item(Item(cand, r, cand.name), Options()), cand, r).measure

    try:
        measure("first", other)    # its baseline is kept
        assert out["first"]["status"] == "measured", out["first"]
        lock.acquire()     # another worker's timing
        held = True
        t = threading.Thread(target=measure, args=("new", ref))
        t.start()
        job = _asked_for_the_device(s, t)
        assert job is not None, "the reference's worker never asked for the device"
        t_asked = time.monotonic()
        assert sorted(p.name for p in job.glob("in_pool*.pt")) == [f"in_pool{k}.pt" for k in range(4)]
        assert not (job / "result.json").exists() and t.is_alive()   # nothing timed yet
        # a candidate of the kept problem takes its baseline now, not after the new one's run
        t2 = threading.Thread(target=measure, args=("kept", other))
        t2.start()
        key = s.ref_key(other)
        while s._measurer._users.get(key, 0) < 1 and time.monotonic() < t_asked + limit:
            time.sleep(0.05)
        assert s._measurer._users.get(key, 0) == 1
        time.sleep(max(0.0, t_asked + limit + 5 - time.monotonic()))
        assert t.is_alive() and not (job / "result.json").exists()
        lock.release()
        held = False
        t.join(300)
        t2.join(300)
        for k in ("new", "kept"):
            m = out[k]
            assert m["status"] == "measured", m
            assert m["reference_strict"]["n"] >= 10 and not m["checks"]["wrong"], m
        assert out["new"]["phases_s"]["reference_gate_wait_s"] >= limit, out["new"]["phases_s"]
    finally:
        if held:
            lock.release()
        s.close()


def test_the_compiled_reference_compiles_before_it_waits_for_the_device(ref, tmp_path):
    """torch.compile's compilation (CPU work of seconds to minutes per problem) happens in the
    compiled reference's started worker before it asks for the device: while another timing
    holds the device lock the worker compiles and asks; it is timed once given the lock, and
    its wait is in neither of its timeouts."""
    import shutil
    import threading
    import time

    from hackscan.measure.run import Measurer, MeasureOptions

    if not shutil.which("c++"):
        pytest.skip("torch.compile on a CPU needs a C++ compiler")
    s = DynamicSession(DynamicOptions(mode="off", device="cpu", timeout_s=300, measure="all",
                                      measure_budget_s=0.3, measure_compile=True, prestart=2))
    s._measurer = Measurer(s, MeasureOptions(budget_s=0.3, compile_baseline=True))
    s._measurer.gate = True          # the GPU's protocol, tested on the CPU
    lock = s._measurer._device_lock
    cand = tmp_path / "honest.py"
    cand.write_text(textwrap.dedent(HONEST))
    out: dict = {}

    def measure():
        out["m"] = s.measure(scan_item(Item(cand, ref, cand.name), Options()), cand, ref).measure

    lock.acquire()   # another worker's timing
    held = True
    try:
        t = threading.Thread(target=measure)
        t.start()
        first = _asked_for_the_device(s, t)      # the strict (and TF32) reference's worker
        assert first is not None, "the strict reference's worker never asked for the device"
        lock.release()
        held = False
        end = time.monotonic() + 120
        while not lock.locked() and time.monotonic() < end:   # it takes the device...
            time.sleep(0.01)
        lock.acquire()                                        # ...and the next timing is another's again
        held = True
        second = None
        end = time.monotonic() + 300
        while second is None and time.monotonic() < end and t.is_alive():
            second = next((p.parent for p in s.work.glob("pool-*/job/_gate.json") if p.parent != first), None)
            time.sleep(0.05)
        assert second is not None, "the compiled reference's worker never asked for the device"
        assert not (second / "result.json").exists()
        time.sleep(2.0)
        lock.release()
        held = False
        t.join(300)
        m = out["m"]
        assert m["status"] == "measured", m
        assert m["reference_compiled"]["n"] >= 10 and m["speedup"]["vs_compiled"] > 0, m.get("reference_compiled")
        ph = m["phases_s"]
        assert ph["reference_compiled_compile_s"] > 0 and ph["reference_compiled_gate_wait_s"] >= 2.0, ph
    finally:
        if held:
            lock.release()
        s.close()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_references_sets_drawn_on_the_gpu_are_drawn_in_its_turn(ref, tmp_path):
    """Sets drawn on the GPU (here every set: the draw threshold set to one byte) are drawn only
    once the reference's worker has the device: it asks before any set is on disk."""
    import threading
    import time

    from hackscan.measure.run import Measurer, MeasureOptions

    s = DynamicSession(DynamicOptions(mode="off", device="cuda", timeout_s=120, measure="all",
                                      measure_budget_s=0.3, prestart=1))
    s._measurer = Measurer(s, MeasureOptions(budget_s=0.3))
    assert s._measurer.gate
    real = s._measurer._job
    s._measurer._job = lambda *a, **k: dict(real(*a, **k), device_draw_bytes=1)
    lock = s._measurer._device_lock
    lock.acquire()
    held = True
    try:
        cand = tmp_path / "honest.py"
        cand.write_text(textwrap.dedent(HONEST))
        out: dict = {}
        t = threading.Thread(target=lambda: out.update(m=s.measure(scan_item(Item(cand, ref, cand.name), Options()),
                                                                    cand, ref).measure))
        t.start()
        job = _asked_for_the_device(s, t)
        assert job is not None
        time.sleep(2)
        assert not list(job.glob("in_pool*.pt"))
        lock.release()
        held = False
        t.join(300)
        assert out["m"]["status"] == "measured", out["m"]
    finally:
        if held:
            lock.release()
        s.close()


def test_the_compiled_reference_takes_a_started_worker_too(ref, tmp_path):
    """--measure-compile: the reference under torch.compile runs in a worker of the measuring pool
    (its start outside the device lock, as the strict timing's), and is measured as before."""
    import shutil

    if not shutil.which("c++"):
        pytest.skip("torch.compile on a CPU needs a C++ compiler")
    s = DynamicSession(DynamicOptions(mode="off", device="cpu", timeout_s=300, measure="all",
                                      measure_budget_s=0.5, measure_compile=True, prestart=2))
    try:
        cand = tmp_path / "honest.py"
        cand.write_text(textwrap.dedent(HONEST))
        m = s.measure(scan_item(Item(cand, ref, cand.name), Options()), cand, ref).measure
        assert m["status"] == "measured", m
        assert m["reference_compiled"]["n"] >= 10 and m["speedup"]["vs_compiled"] > 0, m.get("reference_compiled")
        assert m["phases_s"].get("reference_compiled_prestarted") is True, m["phases_s"]
        (p,) = [v for (kind, _gpu), v in s._pools.items() if kind == "measure"]
        assert p.taken == 3     # the strict (and TF32) reference, the compiled one, the candidate
    finally:
        s.close()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_started_workers_profiled_call_sees_the_candidates_kernels_on_a_gpu(ref, tmp_path):
    """On a GPU the warm-up's profiler session must not leave the job's profiled call blind
    (one public report: an empty first session did): kernel attribution reads the same from a
    started worker as from a fresh one, for the main worker and the profiled call."""
    fresh = DynamicSession(DynamicOptions(mode="all", device="cuda", timeout_s=300, seed=21, prestart=0))
    pooled = DynamicSession(DynamicOptions(mode="all", device="cuda", timeout_s=300, seed=21, prestart=3))
    try:
        a = audit(fresh, tmp_path, "triton_gpu", TRITON_RELU, ref)
        assert pooled._pool is None
        audit(pooled, tmp_path, "triton_gpu_first", TRITON_RELU, ref)   # makes the pool
        assert pooled._pool.wait_ready(180)
        b = audit(pooled, tmp_path, "triton_gpu", TRITON_RELU, ref)
        assert "prestarted" in b.dynamic and b.dynamic["prestarted"]["profiler_kernels"] > 0
        assert summary(a) == summary(b) and b.verdict == "clean", (summary(a), summary(b))
        assert b.dynamic["probes"]["kernel-attribution"]["status"] == "passed", b.dynamic["probes"]["kernel-attribution"]
    finally:
        fresh.close()
        pooled.close()


def test_a_candidate_whose_entry_class_is_model_has_its_kernels_known(sessions, ref, tmp_path):
    # KernelBench-Hard's candidates define `Model`: the dynamic layer read their facts for
    # `ModelNew`, found none, and knew no kernel of theirs (no altered calls, own share 0%)
    fresh, _ = sessions
    cand = tmp_path / "hard_entry.py"
    cand.write_text(textwrap.dedent(TRITON_RELU.replace("class ModelNew(", "class Model(")))
    r = fresh.audit(scan_item(Item(cand, ref, cand.name), Options(entry="Model")), cand, ref)
    assert r.entry == "Model" and r.verdict == "clean", summary(r)
    assert r.dynamic["probes"]["forced-failure"]["status"] == "passed", summary(r)
