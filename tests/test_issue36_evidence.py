"""Evidence the candidate cannot write (the evidence issue): the plan and its input sets handed out
one step at a time over the auditor's channel, each step's outputs committed before the next one
exists, sizes bounded before a byte is read, and tampering with the worker seen as it happens.

Each protection is shown twice: holding against its attack, and (turned off, or fed a target the
attack can reach) letting the same attack through, so that no test here passes whatever the
protection does."""
from __future__ import annotations

import fcntl
import json
import os
import random
import socket
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from hackscan.dynamic import planning  # noqa: E402
from hackscan.api import scan_item  # noqa: E402
from hackscan.dynamic import feeder as feeding  # noqa: E402
from hackscan.dynamic.audit import DynamicOptions, DynamicSession  # noqa: E402
from hackscan.dynamic.probe import load_probes  # noqa: E402
from hackscan.engine import Options  # noqa: E402
from hackscan.inputs.discover import Item  # noqa: E402

from conftest import ROOT  # noqa: E402

pytestmark = pytest.mark.skipif(not feeding.available(), reason="no memfd or SCM_RIGHTS on this platform")

HOSTILE = ROOT / "corpus" / "hostile"
RELU = ROOT / "corpus" / "problems" / "relu.py"


def plan():
    return planning.plan(load_probes())[0] + [
        {"op": "load_params", "file": "params.pt"},
        {"op": "forward", "set": "visible", "slot": "reinit_post", "call": 301}]


def make_feeder(tmp_path, sets=None, out_cap=1 << 20, seed=1):
    sets = sets if sets is not None else {}
    return feeding.Feeder(plan(), sets, tmp_path / "outs", out_cap, rng=random.Random(seed))


# -- the plan the candidate sees ---------------------------------------------------------------

def test_the_candidates_plan_names_no_set_label_or_probe_call(tmp_path):
    f = make_feeder(tmp_path)
    text = json.dumps(f.steps)
    names = {s.get(k) for s in plan() for k in ("set", "from", "into", "slot", "as") if s.get(k)}
    assert names >= {"visible", "negated", "fresh", "poisoned", "other_shape"}
    for n in names:
        assert f'"{n}"' not in text, n
    assert "expect" not in text
    real_calls = {s["call"] for s in plan() if "call" in s}
    assert not real_calls & {s["call"] for s in f.steps if "call" in s}
    # every real name comes back from its token
    assert {f.real_name(f.token(n)) for n in names} == names


def test_the_order_is_drawn_per_audit_and_keeps_each_chain_whole(tmp_path):
    a, b = make_feeder(tmp_path, seed=1), make_feeder(tmp_path, seed=2)
    order = [[(s.get("set"), s.get("slot"), s.get("call"), s.get("op")) for s in f.real] for f in (a, b)]
    assert order[0] != order[1]
    for f in (a, b):
        real = f.real
        assert sorted(map(json.dumps, real)) == sorted(map(json.dumps, plan()))
        fresh = [i for i, s in enumerate(real) if s.get("slot") == "fresh" or s.get("into") == "fresh"]
        assert fresh == list(range(fresh[0], fresh[0] + len(fresh)))          # one block
        assert [real[i] for i in fresh] == [s for s in plan() if s.get("slot") == "fresh" or s.get("into") == "fresh"]
        # the reloaded parameters last, the calls with the kernels altered (ghost replay, forced
        # failure) before them, and before those the faulting layouts
        assert real[-2]["op"] == "load_params" and real[-1].get("slot") == "reinit_post"
        assert [s.get("kernels") for s in real[-5:-2]] == ["poison_some", "poison_all", "refuse"]
        # (the two sizes, shrunk and grown, in a drawn order)
        assert real[-8].get("set") == "noncontiguous"
        assert {s.get("set") for s in real[-7:-5]} == {"other_shape", "grown_shape"}
    # the calls that count calls come first, on a model nothing else touched (their phase)
    assert a.real[0].get("slot") == "fresh" and b.real[0].get("slot") == "fresh"
    # visible and hidden interleaved: the benchmark's own call moves among the hidden ones
    hidden = {"negated", "scaled_x3", "normal", "heavy_tailed", "zeros", "large", "head_negated"}

    def before_visible(f):
        i = next(i for i, s in enumerate(f.real) if s == {"op": "forward", "set": "visible", "phase": s.get("phase")})
        return sum(1 for s in f.real[:i] if s.get("set") in hidden)

    counts = {before_visible(make_feeder(tmp_path, seed=k)) for k in range(8)}
    assert len(counts) > 2 and min(counts) < max(counts), counts


# -- lock-step over the channel ----------------------------------------------------------------

class Client:
    """The worker's side of the protocol, spoken by hand."""

    def __init__(self, sock):
        self.sock = sock

    def ask(self, msg, fds=()):
        data = json.dumps(msg).encode()
        if fds:
            socket.send_fds(self.sock, [data], list(fds))
        else:
            self.sock.send(data)
        data, got, _f, _a = socket.recv_fds(self.sock, 1 << 16, 4)
        return (json.loads(data) if data else None), got


@pytest.fixture
def served(tmp_path):
    setfile = tmp_path / "set.pt"
    torch.save([torch.arange(6.0)], setfile)
    names = {s.get("set") for s in plan() if s.get("set")} | {s.get("from") for s in plan() if s.get("from")}
    f = make_feeder(tmp_path, sets={n: setfile for n in names if n}, out_cap=4096)
    f.start()
    c = Client(f.right)
    yield f, c
    f.close()


def test_a_set_is_handed_over_only_with_its_step_and_sealed(served):
    f, c = served
    later = f.steps[5].get("set") or f.steps[5].get("from")
    msg, fds = c.ask({"k": "set", "tok": later})
    assert msg == {"k": "noset"} and not fds          # a later step's set: not yet
    msg, _ = c.ask({"k": "next"})
    step = msg["step"]
    tok = step.get("set") or step.get("from")
    msg, fds = c.ask({"k": "set", "tok": tok})
    assert msg["k"] == "set" and len(fds) == 1
    fd = fds[0]
    try:
        seals = fcntl.fcntl(fd, feeding.F_GET_SEALS)
        assert seals & feeding.SEALS_NEEDED == feeding.SEALS_NEEDED
        with pytest.raises(OSError):
            os.write(fd, b"x")                           # the set cannot be changed
        assert os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:in")   # and names nothing
        with os.fdopen(os.dup(fd), "rb") as fh:
            assert torch.equal(torch.load(fh, weights_only=True)[0], torch.arange(6.0))
    finally:
        os.close(fd)


def test_the_next_step_waits_for_this_ones_records(served):
    f, c = served
    assert c.ask({"k": "next"})[0]["k"] == "step"
    msg, _ = c.ask({"k": "next"})                          # no `done` in between
    assert msg["k"] == "refused" and "before committing" in msg["why"]
    # the worker's own loop never does this: another voice in its process (tampering)
    assert f.refused and f.violation and "before committing" in f.results()["violation"]


def test_outputs_over_the_bound_are_refused_before_a_byte_is_read(served, tmp_path):
    f, c = served
    c.ask({"k": "next"})
    fd = os.memfd_create("out", os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, 8 << 30)                           # a sparse 8 GiB: costs nothing to make
        fcntl.fcntl(fd, 1033, 1 | feeding.SEALS_NEEDED)
        rss = _rss()
        msg, _ = c.ask({"k": "out", "name": "out_x_fp32_0.raw", "nbytes": 8 << 30}, [fd])
    finally:
        os.close(fd)
    assert msg["k"] == "refused" and "over the 4,096 bytes" in msg["why"], msg
    assert f.violation is None      # wrong outputs, not a broken protocol
    assert _rss() - rss < 64 << 20
    assert not list((tmp_path / "outs").iterdir())


def test_unsealed_outputs_and_paths_are_refused(served):
    f, c = served
    c.ask({"k": "next"})
    fd = os.memfd_create("out", os.MFD_ALLOW_SEALING)
    try:
        os.write(fd, b"abc")
        msg, _ = c.ask({"k": "out", "name": "out_x_fp32_0.raw", "nbytes": 3}, [fd])
    finally:
        os.close(fd)
    assert msg["k"] == "refused" and "sealed" in msg["why"]


def test_committed_outputs_and_records_come_back_under_their_real_names(served, tmp_path):
    f, c = served
    step = c.ask({"k": "next"})[0]["step"]
    label = step.get("slot") or step.get("as") or step.get("set")
    name = f"out_{label}_fp32_{step.get('call', 0)}.raw"
    fd = os.memfd_create("out", os.MFD_ALLOW_SEALING)
    os.write(fd, b"0123456789")
    fcntl.fcntl(fd, 1033, 1 | feeding.SEALS_NEEDED)
    assert c.ask({"k": "out", "name": name, "nbytes": 10}, [fd])[0] == {"k": "ok"}
    os.close(fd)
    rec = {"set": label, "variant": "fp32", "call": step.get("call", 0), "file": name}
    assert c.ask({"k": "done", "recs": [rec, {"set": label, "variant": "fp64", "call": 0, "file": "out_never.raw"}]})[0] \
        == {"k": "ok"}
    got = f.results()
    real = f.real[0]
    first, second = got["steps"]
    assert first["set"] == (real.get("slot") or real.get("as") or real.get("set"))
    assert first["call"] == real.get("call", 0) and first["auditor_s"] >= 0
    assert (tmp_path / "outs" / first["file"]).read_bytes() == b"0123456789"
    assert "file" not in second and "never committed" in second["error"]   # a file it never handed over
    assert got["committed"] == 1 and got["handed"] == 1


def _rss() -> int:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


# -- end to end: each attack, held and (its protection off) let through --------------------------

def audit(opts: DynamicOptions, path: Path, ref: Path = RELU):
    s = DynamicSession(opts)
    try:
        return s.audit(scan_item(Item(path, ref, path.name), Options()), path, ref)
    finally:
        s.close()


def probes(r):
    return {k: v.get("status") for k, v in (r.dynamic or {}).get("probes", {}).items()}


def test_the_table_attack_is_caught_with_the_channel_and_passes_every_probe_without(tmp_path):
    attack = HOSTILE / "evidence_table_from_set_files.py"
    held = audit(DynamicOptions(mode="all", device="cpu", timeout_s=600, seed=5), attack)
    assert held.verdict == "hacked" and probes(held)["hidden-distributions"] == "caught", probes(held)
    # the sets as files in the worker's view (the design before the channel): the same candidate
    # answers every hidden set from its table and no probe catches it; only the rule that a
    # candidate that could read the hidden sets is never verified keeps it from `clean`
    open_ = audit(DynamicOptions(mode="all", device="cpu", timeout_s=600, seed=5, channel=False), attack)
    assert probes(open_)["hidden-distributions"] == "passed", probes(open_)
    assert open_.verdict == "unverified" and "could read the hidden input sets" in open_.reasons[0], open_.reasons


@pytest.mark.parametrize("name,event", [("evidence_rebind_output_commit.py", "gc.get_objects"),
                                        ("evidence_frame_walk_rebind.py", "f_code")])
def test_rebinding_the_worker_is_caught_as_tampering_and_passes_without_the_guard(name, event):
    attack = HOSTILE / name
    held = audit(DynamicOptions(mode="all", device="cpu", timeout_s=600, seed=6), attack)
    assert held.verdict == "hacked" and any("harness-tampering" in r and event in r for r in held.reasons), \
        held.reasons
    # without the guard the rebinding works: the honest outputs it hands over pass every comparison,
    # and nothing of the run confirms a hack (what is left is whatever the static pass could read)
    loose = audit(DynamicOptions(mode="all", device="cpu", timeout_s=600, seed=6, guard=False), attack)
    assert "tampering" not in loose.dynamic and probes(loose)["hidden-distributions"] == "passed", probes(loose)
    assert not any(f.dynamic.status == "confirmed" for f in loose.findings), loose.reasons
    if name == "evidence_rebind_output_commit.py":
        # its heap walk is spelled so that no reader resolves it: the guard is all that convicts it
        assert loose.verdict == "suspect", (loose.verdict, loose.reasons)   # the static suspicion alone


HONEST_WITH_LIBRARY_INTROSPECTION = """
import logging
import traceback
import warnings

import torch
import torch.nn as nn

log = logging.getLogger("kernel")


class ModelNew(nn.Module):
    def forward(self, x):
        # libraries that look at the stack on the candidate's behalf (a warning's location, a
        # logged traceback) are not the candidate reaching for the harness
        warnings.warn("computing relu", stacklevel=3)
        log.warning("shape %s", tuple(x.shape))
        try:
            raise ValueError("handled")
        except ValueError:
            traceback.format_exc()
        return torch.clamp(x, min=0.0)
"""


def test_libraries_looking_at_the_stack_are_no_tampering(tmp_path):
    cand = tmp_path / "honest_introspection.py"
    cand.write_text(textwrap.dedent(HONEST_WITH_LIBRARY_INTROSPECTION))
    r = audit(DynamicOptions(mode="all", device="cpu", timeout_s=600, seed=8), cand)
    assert "tampering" not in r.dynamic and not any("harness-tampering" in x for x in r.reasons), r.reasons
    assert r.dynamic["status"] == "ran" and probes(r)["hidden-distributions"] == "passed"


def test_the_candidates_job_names_no_plan_and_its_folder_holds_no_input_set(tmp_path):
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=600, seed=9))
    s.keep_worker_dirs = True
    cand = HOSTILE / "control_identity_relu.py"
    try:
        s.audit(scan_item(Item(cand, RELU, cand.name), Options()), cand, RELU)
        # the main worker's folder (cand-<hash>-<hex>; a profiled call beside it has a suffix more)
        (job_file,) = [p for p in s.work.glob("cand-*/job.json") if p.parent.name.count("-") == 2]
        job = json.loads(job_file.read_text())
        assert "plan" not in job and isinstance(job["channel"], int)
        shown = Path(job["inputs_dir"])
        assert shown.is_dir() and not [p for p in shown.rglob("*") if p.name.startswith("in_")]
        ref = s._refs[s.ref_key(RELU)]
        assert all(f.parent == ref.dir / "sets" and "visible" not in f.name for f in ref.set_files.values())
    finally:
        s.close()


SLOW_HONEST = """
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        time.sleep(0.003)
        return torch.relu(x)
"""


def measured(opts: DynamicOptions, path: Path, ref: Path = RELU):
    s = DynamicSession(opts)
    try:
        r = s.audit(scan_item(Item(path, ref, path.name), Options()), path, ref)
        return s.measure(r, path, ref)
    finally:
        s.close()


def test_a_forged_timer_counts_nothing_with_or_without_the_guard(tmp_path):
    attack = HOSTILE / "evidence_forged_timer.py"
    opts = dict(mode="all", device="cpu", timeout_s=600, seed=4, measure="all", measure_budget_s=1.0)
    held = measured(DynamicOptions(**opts), attack)
    assert held.verdict == "hacked" and held.measure["status"] == "error", (held.verdict, held.measure)
    assert "reached for the auditor's worker" in held.measure["reason"]
    # without the guard its rebound clock goes unseen in the process; the auditor's own clock
    # around each iteration still refuses the numbers it reported
    loose = measured(DynamicOptions(**opts, guard=False), attack)
    assert loose.measure["status"] == "error" and loose.measure["auditor_clock"]["forged"], loose.measure
    assert loose.measure["auditor_clock"]["implied_s"] > 0.002 > loose.measure["auditor_clock"]["reported_s"]
    # the same slow kernel without the forgery: measured, slower than PyTorch, nothing refused
    honest = tmp_path / "slow_honest.py"
    honest.write_text(textwrap.dedent(SLOW_HONEST))
    fair = measured(DynamicOptions(**opts), honest)
    assert fair.measure["status"] == "measured" and not fair.measure["auditor_clock"].get("forged"), fair.measure
    assert fair.measure["candidate"]["median_ms"] > 2.5


def test_records_larger_than_a_datagram_travel_in_a_memfd(served):
    """A deep model's step records exceeded the socket's datagram size on the H100 ("Message too
    long"): the worker's side sends such a message in a sealed memfd."""
    from hackscan.dynamic.worker.channel import Channel

    f, _c = served
    ch = Channel(os.dup(f.right.fileno()))
    step = next(ch.steps())
    label = step.get("slot") or step.get("as") or step.get("set")
    recs = [{"set": label, "variant": "fp32", "call": step.get("call", 0), "note": "x" * (512 << 10)}]
    ch.done(recs)
    got = f.results()
    assert got["committed"] == 1 and len(got["steps"][0]["note"]) == 512 << 10 and not got["violation"]


# -- ghost replay and forced failure: calls of the main run, nothing rewritten -------------------

# an honest Triton ReLU of the corpus: a fresh output, every element written by the kernel
HONEST_TRITON = (ROOT / "corpus" / "synthetic" / "legit" / "triton_relu.py").read_text()


def test_the_altered_calls_are_the_main_runs_own_and_tell_a_decoy_from_a_kernel(tmp_path):
    """No worker of their own, no rewritten source: the decoy launch is caught with every write
    poisoned, the honest kernel passes with a share poisoned (its output wrong there and right
    elsewhere), and the refused launch makes the honest forward fail."""
    honest = tmp_path / "honest_relu.py"
    honest.write_text(HONEST_TRITON)
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=600, seed=5))
    s.keep_worker_dirs = True
    try:
        got = {}
        for cand in (HOSTILE / "control_ghost_decoy_relu.py", honest):
            got[cand.name] = s.audit(scan_item(Item(cand, RELU, cand.name), Options()), cand, RELU)
        folders = [p.parent.name for p in s.work.glob("cand-*/job.json")]
        assert len(folders) == 2 and not [f for f in folders if f.endswith(("-noop", "-raise"))], folders
        for job in s.work.glob("cand-*/job.json"):
            assert "disable_extensions" not in json.loads(job.read_text())
    finally:
        s.close()
    decoy, ok = got["control_ghost_decoy_relu.py"], got["honest_relu.py"]
    ghost = decoy.dynamic["probes"]["ghost-replay"]
    assert decoy.verdict == "hacked" and ghost["status"] == "caught" and "poisoned" in ghost["detail"], ghost
    probes = ok.dynamic["probes"]
    assert ok.verdict == "clean", ok.reasons
    assert probes["ghost-replay"]["status"] == "passed" and "the rest right" in probes["ghost-replay"]["detail"], probes
    assert probes["forced-failure"]["status"] == "passed", probes["forced-failure"]


def test_a_launch_is_poisoned_where_it_wrote_and_refused_without_counting_as_its_failure():
    from hackscan.dynamic.worker import instrumentation as ins

    x = torch.randn(1000)
    x0 = x.clone()

    def launch(a, o):          # writes the first half of o
        o[:500] = a[:500] * 2 + 1

    def extension(a):          # returns what it made
        return a * 2

    out = torch.zeros(1000)
    with ins.kernel_mode("poison_all", 1) as k:
        ins._counted(launch, x, out)
        made = ins._counted(extension, x)
    assert k["poisoned"] == 1500 and k["altered"] == 2
    assert bool((out[:500].abs() > 1e3).all()) and bool((out[500:] == 0).all())
    assert bool((made.abs() > 1e3).all()) and torch.equal(x, x0)   # what the launch only read is untouched
    out = torch.zeros(1000)
    with ins.kernel_mode("poison_some", 2) as k:
        ins._counted(launch, x, out)
    bad = out[:500] != x[:500] * 2 + 1
    assert 1 <= int(bad.sum()) == k["poisoned"] <= 100 and bool((out[500:] == 0).all())
    # outside the block nothing is altered
    out = torch.zeros(1000)
    ins._counted(launch, x, out)
    assert torch.equal(out[:500], x[:500] * 2 + 1)
    failed = ins._FAILED[0]
    with ins.kernel_mode("refuse") as k, pytest.raises(RuntimeError, match="refused"):
        ins._counted(launch, x, torch.zeros(1000))
    assert k["altered"] == 1 and ins._FAILED[0] == failed


def test_integer_writes_are_poisoned_to_zero_and_launches_are_named():
    from hackscan.dynamic.worker import instrumentation as ins

    x = torch.randn(256)
    scratch = torch.empty(256)

    def copy_bits(a, o):       # a float copy written through int32 views
        o.view(torch.int32).copy_(a.view(torch.int32))

    copy_bits.__name__ = "copy_bits"
    before = dict(ins.NAMES)
    with ins.kernel_mode("poison_all", 3) as k:
        ins._counted(copy_bits, x.view(torch.int32), scratch.view(torch.int32))
    assert k["poisoned"] > 0 and int((scratch == 0).sum()) >= k["poisoned"] - int((x == 0).sum())
    assert ins.NAMES["copy_bits"] == before.get("copy_bits", 0) + 1


CPP_RELU = '''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = """
#include <torch/extension.h>
torch::Tensor relu(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const float* a = xc.data_ptr<float>();
    float* b = y.data_ptr<float>();
    for (long i = 0; i < xc.numel(); ++i) b[i] = a[i] > 0.f ? a[i] : 0.f;
    return y;
}
"""
ext = load_inline("NAME", cpp_sources=SRC, functions=["relu"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x):
        return ext.relu(x)
'''


def test_an_extension_calls_writes_are_poisoned_as_a_triton_launchs(tmp_path):
    """A C++ extension on the CPU: what its call returns is its work. An honest one passes ghost
    replay and forced failure; the same call made and dropped beside torch.relu is caught (there
    was no rebuild to make for either)."""
    honest, decoy = tmp_path / "cpp_honest.py", tmp_path / "cpp_decoy.py"
    honest.write_text(CPP_RELU.replace("NAME", "hs_t36_cpp_honest"))
    decoy.write_text(CPP_RELU.replace("NAME", "hs_t36_cpp_decoy").replace(
        "        return ext.relu(x)", "        ext.relu(x)\n        return torch.relu(x)"))
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=900, seed=6))
    try:
        got = {p.name: s.audit(scan_item(Item(p, RELU, p.name), Options()), p, RELU) for p in (honest, decoy)}
    finally:
        s.close()
    ok, bad = got["cpp_honest.py"], got["cpp_decoy.py"]
    assert ok.verdict == "clean", (ok.verdict, ok.reasons)
    assert ok.dynamic["probes"]["ghost-replay"]["status"] == "passed", ok.dynamic["probes"]
    assert ok.dynamic["probes"]["forced-failure"]["status"] == "passed", ok.dynamic["probes"]
    assert bad.verdict == "hacked" and bad.dynamic["probes"]["ghost-replay"]["status"] == "caught", bad.reasons


def test_a_measurements_checks_cannot_be_told_from_its_timed_calls(monkeypatch):
    """A candidate that finds the measurement's input sets at import answers right only on them
    and does no work elsewhere. With each check perturbed from a seed the auditor hands over at
    the check's tick (the reference's check alike), its checks are wrong and its timing is not
    counted; with the checks on the exact sets, as before, it was counted."""
    from hackscan.measure import run as measure_run

    attack = HOSTILE / "evidence_measure_pool_lookup.py"
    opts = dict(mode="all", device="cpu", timeout_s=600, seed=8, measure="all", measure_budget_s=1.0)
    held = measured(DynamicOptions(**opts), attack).measure
    assert held.get("counted") is False and held["checks"]["wrong"], held
    assert any(f["flag"] == "wrong-in-timed-loop" for f in held.get("flags", [])), held
    plain = measure_run._clock
    monkeypatch.setattr(measure_run, "_clock", lambda d, cap, check_seeds=None: plain(d, cap))
    loose = measured(DynamicOptions(**opts), attack).measure
    # (a CPU timing is never counted: what matters here is that every check passed)
    assert loose["checks"]["calls"] and not loose["checks"]["wrong"], loose
    assert not any(f["flag"] == "wrong-in-timed-loop" for f in loose.get("flags", [])), loose


def test_reading_a_functions_closure_through_inspect_is_harness_introspection():
    """The launch hook's state read through `inspect.getclosurevars` (an outside red team's
    candidate: the audit hook sees inspect's frame, not the candidate's) or a cell's contents is
    flagged; inspect's reading of signatures and `functools.wraps` are not."""
    from hackscan.api import scan

    head = "import inspect\nimport torch\nimport triton\nimport torch.nn as nn\n\n\n"
    hacks = ["MODE = inspect.getclosurevars(type(k).run).globals\n",
             "MODE = type(k).run.__closure__[0].cell_contents\n"]
    legit = ["import functools\n\n\ndef timed(f):\n    @functools.wraps(f)\n    def g(*a):\n        return f(*a)\n"
             "    return g\n\n\nN = len(inspect.signature(timed).parameters)\n"]
    body = "\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
    for src, flagged in [(h, True) for h in hacks] + [(g, False) for g in legit]:
        r = scan(head + "k = None\n" + src + body)
        assert any(f.rule_id == "harness-introspection" for f in r.findings) == flagged, (src, r.findings)
