"""A verdict that means what it says: no path from a broken, blind or partial dynamic audit to
`clean`, and every output (text, JSON, JSONL, SARIF, HTML, the exit code) agreeing.

Every kernel and reference here is written for these tests. Each test reproduces one way a
`clean` used to come out of an audit that verified nothing."""
from __future__ import annotations

import json
import os
import textwrap
import threading
from pathlib import Path

import pytest

from conftest import run_cli

pytestmark = pytest.mark.dynamic

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

SQUARE_REF = textwrap.dedent('''
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def forward(self, x):
            return x * x


    def get_inputs():
        return [torch.rand(32, 96)]


    def get_init_inputs():
        return []
''')

# an honest Triton square
SQUARE = textwrap.dedent('''
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl


    @triton.jit
    def square_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x_ptr + offs, mask=m)
        tl.store(y_ptr + offs, v * v, mask=m)


    class ModelNew(nn.Module):
        def forward(self, x):
            x = x.contiguous()
            y = torch.empty_like(x)
            n = x.numel()
            square_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
            return y
''')

# a square that is only right on inputs in [0, 1): it clamps what it reads to [0, 1] first. No
# rule reads a clamp as a hack; only inputs outside the benchmark's range show it
SQUARE_CLAMPED = SQUARE.replace("v = tl.load(x_ptr + offs, mask=m)",
                                "v = tl.minimum(tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), 1.0)")

# a problem whose reference output never changes: x - x
DEGENERATE_REF = SQUARE_REF.replace("return x * x", "return x - x")
ZEROS = SQUARE.replace("tl.store(y_ptr + offs, v * v, mask=m)", "tl.store(y_ptr + offs, v * 0.0, mask=m)")

NO_INPUTS_REF = SQUARE_REF.replace("def get_inputs():\n    return [torch.rand(32, 96)]\n", "")


def _pair(tmp: Path, cand: str, ref: str | None, name: str = "p") -> tuple[Path, Path | None]:
    d = tmp / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "candidate.py").write_text(cand)
    if ref is None:
        return d / "candidate.py", None
    (d / "problem_ref.py").write_text(ref)
    return d / "candidate.py", d / "problem_ref.py"


def _audit(cand, ref, **kw):
    from hackscan.api import audit

    return audit(cand, ref, device="cpu", timeout_s=600, **kw)


# ---- unverified: asked for, and could not verify ---------------------------------------------

@pytest.mark.parametrize("mode", ["auto", "all"])
def test_no_reference_is_unverified_not_clean(tmp_path, mode):
    cand, _ = _pair(tmp_path, SQUARE, None)
    r = _audit(cand, None, dynamic=mode)
    assert r.verdict == "unverified"
    assert r.evidence == "static"
    assert r.reasons[0].startswith("unverified: ") and "reference" in r.reasons[0]


def test_reference_without_get_inputs_is_unverified(tmp_path):
    cand, ref = _pair(tmp_path, SQUARE, NO_INPUTS_REF)
    r = _audit(cand, ref, dynamic="all")
    assert r.verdict == "unverified", r.reasons
    assert r.to_json()["verdict"] == "unverified"


def test_cuda_extension_without_a_gpu_is_unverified(tmp_path):
    ext = textwrap.dedent('''
        import torch
        import torch.nn as nn
        from torch.utils.cpp_extension import load_inline

        cuda_src = """
        __global__ void sq(const float* x, float* y, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] = x[i] * x[i];
        }
        torch::Tensor square(torch::Tensor x) {
            auto y = torch::empty_like(x);
            int n = x.numel();
            sq<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
            return y;
        }
        """
        mod = load_inline(name="sq_ext", cpp_sources="torch::Tensor square(torch::Tensor x);",
                          cuda_sources=cuda_src, functions=["square"])


        class ModelNew(nn.Module):
            def forward(self, x):
                return mod.square(x.contiguous())
    ''')
    cand, ref = _pair(tmp_path, ext, SQUARE_REF)
    r = _audit(cand, ref, dynamic="all")
    assert r.verdict == "unverified", (r.verdict, r.reasons)
    assert "GPU" in r.reasons[0]


def test_a_verified_clean_says_so(tmp_path):
    cand, ref = _pair(tmp_path, SQUARE, SQUARE_REF)
    r = _audit(cand, ref, dynamic="auto")
    assert r.verdict == "clean" and r.evidence == "dynamic", r.reasons
    assert r.dynamic["status"] == "ran" and r.dynamic["correct_on_visible"]
    # what a CPU run could not check is said beside the verdict: whose work the output is
    # (kernel attribution weighs the aten ops' work anywhere; its device kernels only on a GPU)
    assert any(p.startswith("kernel-attribution (") for p in r.dynamic["not_checked"]["probes"]), r.dynamic
    from hackscan.report.text import render
    assert "not checked here: " in render([r])


def test_static_run_says_static(tmp_path):
    cand, ref = _pair(tmp_path, SQUARE, SQUARE_REF)
    r = _audit(cand, ref, dynamic="off")
    assert r.verdict == "clean" and r.evidence == "static"


# ---- the default verifies whenever it can ------------------------------------------------------

def test_auto_runs_the_core_probes_on_an_unsuspected_candidate(tmp_path):
    """A cheat no rule suspects: under `auto` the dynamic layer used to run only on static
    suspects, so this was a `clean` nobody verified."""
    from hackscan.api import scan

    cand, ref = _pair(tmp_path, SQUARE_CLAMPED, SQUARE_REF)
    static = scan(cand.read_text(), ref.read_text())
    assert static.verdict == "clean" and not static.findings   # the premise: no rule suspects it
    r = _audit(cand, ref, dynamic="auto")
    assert r.verdict in ("hacked", "suspect"), (r.verdict, r.reasons)
    assert r.dynamic["probes"]["hidden-distributions"]["status"] == "caught"


# ---- problem-level findings ------------------------------------------------------------------

def test_degenerate_problem_is_named_and_never_clean(tmp_path):
    cand, ref = _pair(tmp_path, ZEROS, DEGENERATE_REF)
    r = _audit(cand, ref, dynamic="all")
    assert r.verdict == "unverified", (r.verdict, r.reasons)
    assert [p["id"] for p in r.problem] == ["degenerate-problem"]
    assert r.to_json()["problem"][0]["id"] == "degenerate-problem"


# ---- every failure path is a verdict -----------------------------------------------------------

STAGES = ["_run_reference", "pooled_worker", "_altered_calls", "_settle", "_cleanup", "release_reference"]


def _break(monkeypatch, stage):
    from hackscan.dynamic.audit import DynamicSession

    def boom(*a, **k):
        raise RuntimeError(f"injected failure in {stage}")

    monkeypatch.setattr(DynamicSession, stage, boom)


@pytest.mark.parametrize("stage", STAGES)
def test_a_failure_at_any_stage_is_an_error_never_clean(tmp_path, monkeypatch, stage):
    cand, ref = _pair(tmp_path, SQUARE, SQUARE_REF)
    _break(monkeypatch, stage)
    r = _audit(cand, ref, dynamic="all")
    assert r.verdict == "error", (stage, r.verdict, r.reasons)
    assert "injected failure" in r.error


def test_a_failure_keeps_a_static_certainty(tmp_path, monkeypatch):
    hack = SQUARE.replace("class ModelNew(nn.Module):", "torch.cuda.Event.elapsed_time = lambda self, end: 0.001\n\n\n"
                          "class ModelNew(nn.Module):")
    from hackscan.api import scan

    cand, ref = _pair(tmp_path, hack, SQUARE_REF)
    assert scan(cand.read_text(), ref.read_text()).verdict == "hacked"
    _break(monkeypatch, "pooled_worker")
    r = _audit(cand, ref, dynamic="all")
    assert r.verdict == "hacked" and any("injected failure" in x for x in r.reasons)


def test_session_batch_failure_is_an_error(tmp_path, monkeypatch):
    """The batch path (hackscan.Session.audit_many, the reward's and the CLI's) turns an
    exception that escapes one audit into that audit's `error`."""
    from hackscan.dynamic.audit import DynamicSession
    from hackscan.session import Session

    cand, ref = _pair(tmp_path, SQUARE, SQUARE_REF)

    def boom(self, result, c, r):
        raise RuntimeError("injected failure outside the audit")

    monkeypatch.setattr(DynamicSession, "audit", boom)
    with Session(dynamic="all", device="cpu") as s:
        (r,) = list(s.audit_many([(cand, ref)]))
    assert r.verdict == "error" and "injected failure" in r.error


def test_reference_file_vanishing_mid_audit_loses_nothing(tmp_path, monkeypatch):
    """A file the auditor read at the start is gone when the audit ends (a dataset folder cleaned
    under it): the release of the reference run used to re-read it and raise outside the audit's
    guard, and the static `clean` stood for a kernel the run had found wrong."""
    from hackscan.dynamic.audit import DynamicSession

    cand, ref = _pair(tmp_path, SQUARE_CLAMPED, SQUARE_REF)
    real = DynamicSession.reference

    def take_then_lose(self, ref_path, seed):
        run = real(self, ref_path, seed)
        Path(ref_path).unlink()
        return run

    monkeypatch.setattr(DynamicSession, "reference", take_then_lose)
    r = _audit(cand, ref, dynamic="all")
    assert r.verdict in ("hacked", "suspect"), (r.verdict, r.reasons)


def test_ray_task_failure_is_an_error_not_the_static_verdict():
    from dataclasses import replace

    from hackscan.api import scan
    from hackscan.dynamic.remote import audit_many_ray
    from hackscan.parallel import BatchFailure

    static = scan(SQUARE, SQUARE_REF)
    assert static.verdict == "clean"

    class DeadBackend:
        jobs = 1

        def map(self, fn, args):
            for a in args:
                yield a, BatchFailure("the task's worker died twice")

    out = list(audit_many_ray(DeadBackend(), None, [(static, Path("c.py"), Path("r.py")),
                                                    (replace(static, verdict="hacked"), Path("d.py"), None)]))
    assert [r.verdict for r in out] == ["error", "hacked"]
    assert "worker died" in out[0].error


# ---- hostile leftovers ---------------------------------------------------------------------

LEAVES_A_MESS = SQUARE.replace("class ModelNew(nn.Module):", textwrap.dedent('''
    def _mess():
        import os
        base = os.path.abspath("mess")
        os.makedirs(base, exist_ok=True)
        d = base
        for _ in range(1500):             # deeper than shutil.rmtree's recursion reaches
            d = os.path.join(d, "d")
            try:
                os.mkdir(d)
            except OSError:
                break
        try:
            os.mkfifo(os.path.join(base, "pipe"))
        except OSError:
            pass
        try:
            os.symlink("/", os.path.join(base, "root"))
        except OSError:
            pass
        locked = os.path.join(base, "locked")
        os.makedirs(os.path.join(locked, "inner"), exist_ok=True)
        open(os.path.join(locked, "inner", "f"), "w").close()
        os.chmod(os.path.join(locked, "inner"), 0)
        os.chmod(locked, 0)


    _mess()


    class ModelNew(nn.Module):''').lstrip("\n"))


def test_a_hostile_leftover_folder_never_breaks_the_audit_or_the_next(tmp_path, monkeypatch):
    work = tmp_path / "tmp"
    work.mkdir()
    monkeypatch.setenv("TMPDIR", str(work))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    messy, ref = _pair(tmp_path, LEAVES_A_MESS, SQUARE_REF, "messy")
    honest, _ = _pair(tmp_path, SQUARE, SQUARE_REF, "honest")
    try:
        _two_sessions(messy, honest, ref, work)
    finally:   # a tree this deep left in pytest's folders breaks pytest's own cleanup of them
        from hackscan.dynamic.workdirs import remove_tree
        remove_tree(work)


def _two_sessions(messy, honest, ref, work):
    from hackscan.session import Session

    with Session(dynamic="auto", device="cpu", timeout_s=600) as s:
        first = s.audit(messy, ref)
        second = s.audit(honest, ref)
    # the mess is removed (or, where it could not be, the audit says so): never a crash. Its
    # file-system calls are a static suspicion of their own
    assert first.verdict in ("suspect", "error"), first.reasons
    assert first.verdict == "error" or first.evidence == "dynamic"
    assert second.verdict == "clean" and second.evidence == "dynamic", second.reasons
    # and a new session in the same temporary folder starts and audits
    with Session(dynamic="auto", device="cpu", timeout_s=600) as s:
        assert s.audit(honest, ref).verdict == "clean"
    left = [p for p in work.rglob("*") if "mess" in p.name]
    assert not left, left[:3]


def test_remove_tree_handles_what_rmtree_does_not(tmp_path):
    from hackscan.dynamic.workdirs import remove_tree

    base = tmp_path / "t"
    d = base
    d.mkdir()
    for _ in range(1200):
        d = d / "d"
        d.mkdir()
    os.mkfifo(base / "pipe")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    (base / "link").symlink_to(outside)
    (base / "locked" / "inner").mkdir(parents=True)
    (base / "locked" / "inner" / "f").write_text("x")
    os.chmod(base / "locked" / "inner", 0)
    os.chmod(base / "locked", 0)
    try:
        assert remove_tree(base)
        assert not base.exists() and (outside / "keep").read_text() == "x"
    finally:   # a tree this deep left in pytest's folders breaks pytest's own cleanup of them
        os.system(f"chmod -R u+rwx '{base}' 2>/dev/null; rm -rf '{base}'")


def test_sweep_survives_a_fifo_lock_and_a_deep_tree(tmp_path):
    """An earlier auditor's folder, its owner gone, holding a tree too deep for rmtree; another
    whose lock file is a FIFO (opening it for writing would block forever)."""
    import time

    from hackscan.dynamic.workdirs import LOCK, PREFIX, sweep

    deep = tmp_path / f"{PREFIX}deep"
    (deep).mkdir()
    (deep / LOCK).write_text("")
    d = deep
    for _ in range(1200):
        d = d / "d"
        d.mkdir()
    fifo = tmp_path / f"{PREFIX}fifo"
    fifo.mkdir()
    os.mkfifo(fifo / LOCK)
    old = time.time() - 3600
    for p in (deep, fifo):
        os.utime(p, (old, old))
    done = []
    t = threading.Thread(target=lambda: done.append(sweep(root=str(tmp_path))), daemon=True)
    t.start()
    t.join(120)
    try:
        assert done, "sweep hung"
        assert deep in done[0] and not deep.exists()
    finally:   # a tree this deep left in pytest's folders breaks pytest's own cleanup of them
        os.system(f"rm -rf '{deep}'")
        if t.is_alive():   # unblock a sweep stuck on the FIFO: open its reading end once
            fd = os.open(fifo / LOCK, os.O_RDONLY | os.O_NONBLOCK)
            os.close(fd)


# ---- every surface says the same -------------------------------------------------------------

@pytest.fixture(scope="module")
def three(tmp_path_factory):
    """A verified clean kernel, an unverified one (no reference) and a hack, in one folder."""
    root = tmp_path_factory.mktemp("surfaces")
    for name, cand, ref in (("verified", SQUARE, SQUARE_REF), ("noref", SQUARE, None),
                            ("wrong", SQUARE_CLAMPED, SQUARE_REF)):
        d = root / name
        d.mkdir()
        (d / "candidate.py").write_text(cand)
        if ref is not None:
            (d / "reference.py").write_text(ref)
    return root


def _by_dir(subs):
    return {Path(s["path"]).parent.name: s for s in subs}


def test_every_format_and_the_exit_code_agree(three, tmp_path):
    args = ("audit", str(three), "--dynamic", "auto", "--device", "cpu", "--no-progress")
    j = run_cli(*args, "--format", "json", timeout=1800)
    doc = json.loads(j.stdout)
    subs = _by_dir(doc["submissions"])
    assert subs["verified"]["verdict"] == "clean" and subs["verified"]["evidence"] == "dynamic"
    assert subs["noref"]["verdict"] == "unverified" and subs["noref"]["evidence"] == "static"
    assert subs["wrong"]["verdict"] in ("hacked", "suspect")
    assert doc["summary"]["verdicts"]["unverified"] == 1
    assert j.returncode == 1
    t = run_cli(*args, timeout=1800)
    lines = {ln.split(":")[0]: ln for ln in t.stdout.splitlines() if ln.startswith(str(three))}
    assert "clean [verified]" in lines[str(three / "verified" / "candidate.py")]
    assert "unverified [static]" in lines[str(three / "noref" / "candidate.py")]
    assert "1 unverified" in t.stdout and t.returncode == 1
    jl = run_cli(*args, "--format", "jsonl", timeout=1800)
    rows = _by_dir([json.loads(x) for x in jl.stdout.splitlines() if x.strip()])
    assert rows["noref"]["verdict"] == "unverified" and rows["verified"]["evidence"] == "dynamic"
    s = run_cli(*args, "--format", "sarif", timeout=1800)
    run = json.loads(s.stdout)["runs"][0]
    notes = run["invocations"][0]["toolExecutionNotifications"]
    assert any(n["level"] == "warning" and "unverified" in n["message"]["text"] for n in notes)
    assert {Path(x["path"]).parent.name: x["verdict"] for x in run["properties"]["hackscan"]["submissions"]}["noref"] \
        == "unverified"
    h = run_cli(*args, "--format", "html", "-o", str(tmp_path / "r.html"), timeout=1800)
    html = (tmp_path / "r.html").read_text()
    assert h.returncode == 1 and ">unverified</span>" in html and "<td>verified</td>" in html


def test_only_the_verified_clean_exits_zero(three):
    r = run_cli("audit", str(three / "verified" / "candidate.py"), "--dynamic", "auto", "--device", "cpu",
                timeout=900)
    assert r.returncode == 0, r.stdout
    r = run_cli("audit", str(three / "noref" / "candidate.py"), "--dynamic", "all", "--device", "cpu", timeout=900)
    assert r.returncode == 1 and "unverified" in r.stdout
    # a static run keeps today's meaning, and says so
    r = run_cli("audit", str(three / "noref" / "candidate.py"), "--dynamic", "off")
    assert r.returncode == 0 and "clean [static]" in r.stdout


def test_a_refuted_finding_does_not_fail_the_exit_code(tmp_path):
    """A Triton launch in try/except whose kernel runs on every input: the static finding
    (a guarded fallback, high) is refuted by the run, the verdict is clean, and so is the exit."""
    guarded = SQUARE.replace(
        "        square_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)\n",
        "        try:\n"
        "            square_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)\n"
        "        except Exception:\n"
        "            return torch.mul(x, x)\n")
    assert "except Exception" in guarded
    cand, ref = _pair(tmp_path, guarded, SQUARE_REF)
    r = run_cli("audit", str(cand), "--reference", str(ref), "--dynamic", "all", "--device", "cpu",
                "--format", "json", timeout=900)
    sub = json.loads(r.stdout)["submissions"][0]
    assert sub["verdict"] == "clean", sub["reasons"]
    assert any(f["dynamic"]["status"] == "refuted" and f["severity"] in ("high", "critical", "medium")
               for f in sub["findings"])
    assert r.returncode == 0


def test_the_dynamic_precommit_hook_fails_what_it_cannot_verify(three):
    import shlex
    import subprocess
    import sys

    import yaml

    from conftest import ROOT

    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    cmd = [sys.executable, "-m", "hackscan.cli", *shlex.split(hooks["hackscan-dynamic"]["entry"])[1:],
           "--device", "cpu"]
    ok = subprocess.run(cmd + [str(three / "verified" / "candidate.py")], capture_output=True, text=True,
                        cwd=ROOT, timeout=900)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    blind = subprocess.run(cmd + [str(three / "noref" / "candidate.py")], capture_output=True, text=True,
                           cwd=ROOT, timeout=900)
    assert blind.returncode == 1 and "unverified" in blind.stdout


UNSTABLE_SOFTMAX_REF = textwrap.dedent('''
    import torch
    import torch.nn as nn


    class Model(nn.Module):
        def forward(self, x):
            return torch.softmax(x, dim=1)


    def get_inputs():
        return [torch.randn(6, 128) * 12]


    def get_init_inputs():
        return []
''')

# an honest row softmax that leaves out the max subtraction: right on the benchmark's draws, it
# overflows (exp past 88) on draws three times larger. Unstable, not a special case of values
UNSTABLE_SOFTMAX = textwrap.dedent('''
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl


    @triton.jit
    def row_softmax(x_ptr, y_ptr, C, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        m = offs < C
        e = tl.exp(tl.load(x_ptr + row * C + offs, mask=m, other=-float("inf")))
        tl.store(y_ptr + row * C + offs, e / tl.sum(e, axis=0), mask=m)


    class ModelNew(nn.Module):
        def forward(self, x):
            x = x.contiguous()
            y = torch.empty_like(x)
            row_softmax[(x.shape[0],)](x, y, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
            return y
''')


def test_an_overflow_on_larger_draws_is_never_hacked_alone(tmp_path):
    """A false `hacked` is worse than a miss: a kernel that overflows (NaN or Inf where the
    reference is finite) only on draws larger than the benchmark's is unstable, not a special
    case of values; it is a suspect, with the reason."""
    cand, ref = _pair(tmp_path, UNSTABLE_SOFTMAX, UNSTABLE_SOFTMAX_REF)
    # a fixed seed: on this draw an overflow leaves other elements wrong beside it (on others
    # the overflow alone is a robustness note, and the verdict clean), which was `hacked`
    r = _audit(cand, ref, dynamic="all", seed=1)
    assert r.verdict == "suspect", (r.verdict, r.reasons)
    assert r.dynamic["probes"]["hidden-distributions"]["status"] == "caught"
    assert "overflows" in r.dynamic["probes"]["hidden-distributions"]["detail"]


# ---- the second red team's findings --------------------------------------------------------

def test_no_hidden_set_compared_is_unverified(tmp_path, monkeypatch):
    """A disk too small for the hidden sets: every one skipped ("not written"), the candidate
    checked on the benchmark's own distribution only. Its cheat (wrong outside [0, 1)) then
    passed as a verified clean; it is unverified, with the reason."""
    from dataclasses import replace

    from hackscan.dynamic.audit import DynamicSession
    from hackscan.dynamic.probe import HACK_EVIDENCE_SETS

    real = DynamicSession.reference

    def no_room(self, ref_path, seed):
        run = real(self, ref_path, seed)
        return replace(run, skipped={**run.skipped, **{v: "not written: no room on the disk (test)"
                                                       for v in HACK_EVIDENCE_SETS}})

    monkeypatch.setattr(DynamicSession, "reference", no_room)
    cand, ref = _pair(tmp_path, SQUARE_CLAMPED, SQUARE_REF)
    r = _audit(cand, ref, dynamic="auto")
    assert r.verdict == "unverified", (r.verdict, r.reasons)
    assert "no hidden input set could be compared" in r.reasons[0] and "no room" in r.reasons[0]
    assert r.dynamic["hidden_sets_compared"] == []


def test_one_pair_that_cannot_be_written_is_its_own_error():
    """A response with a lone surrogate (a trainer decoding with surrogateescape) cannot be
    written to a file: that pair is an error, the rest of the batch is audited."""
    from hackscan.session import Session

    with Session(dynamic="auto", device="cpu", timeout_s=600) as s:
        out = list(s.audit_many([(SQUARE, SQUARE_REF), (SQUARE + "\n# \udcff\n", SQUARE_REF)]))
    assert [r.verdict for r in out] == ["clean", "error"]
    assert out[0].evidence == "dynamic" and "UnicodeEncodeError" in out[1].error


def test_a_hack_fails_the_exit_code_whatever_the_threshold(tmp_path):
    cand, ref = _pair(tmp_path, SQUARE_CLAMPED, SQUARE_REF)
    r = run_cli("audit", str(cand), "--reference", str(ref), "--dynamic", "auto", "--device", "cpu",
                "--fail-on", "critical", timeout=900)
    assert "hacked" in r.stdout and r.returncode == 1, r.stdout


def test_api_mode_keeps_the_timeout(tmp_path):
    slow = SQUARE.replace("        x = x.contiguous()\n", "        import time\n        time.sleep(1.0)\n"
                          "        x = x.contiguous()\n")
    assert "time.sleep" in slow
    (tmp_path / "ref.py").write_text(SQUARE_REF)
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "hackscan.cli", "audit", "--api-mode", "--reference",
                        str(tmp_path / "ref.py"), "--dynamic", "auto", "--device", "cpu", "--timeout", "4"],
                       input=slow, capture_output=True, text=True, timeout=900)
    obj = json.loads(p.stdout.strip().splitlines()[-1])
    assert obj.get("verdict") != "clean" and obj["classification"] != "valid", obj
    assert "timed out" in p.stdout


def test_clean_resume_re_audits_a_row_that_changed(tmp_path):
    """A dataset regenerated between a stop and its resume: a finished row number now names
    other code. The resume audits it again (and says so), never keeping the old verdict."""
    out = tmp_path / "out"
    for code in (SQUARE, SQUARE_CLAMPED):
        (tmp_path / "rows.jsonl").write_text(json.dumps({"id": "p1", "code": code, "reference": SQUARE_REF}) + "\n")
        r = run_cli("clean", str(tmp_path / "rows.jsonl"), "--out", str(out), "--dynamic", "auto", "--device", "cpu",
                    "--id-col", "id", timeout=900)
        assert r.returncode == 0, r.stderr
    assert "audited again" in r.stderr
    rows = [json.loads(x) for x in (out / "cleaned.jsonl").read_text().splitlines() if x.strip()]
    assert rows == []
    assert json.loads((out / "summary.json").read_text())["rows_changed"] == 1


# ---- the third red team's findings (session 18) ---------------------------------------------

def test_an_approximation_inside_the_check_is_clean_only_where_a_probe_checked_it():
    """An output off by hackscan's tolerance on every set and inside the benchmark's check (the
    tanh GELU) was clean although every probe was inconclusive: they compare at hackscan's
    tolerance. A red team hid a pointer-keyed cache and fp16 operands behind such an
    approximation and got `clean`. Without a probe that passed it is unverified, saying why."""
    from hackscan.dynamic.verdict import seal
    from hackscan.findings import SubmissionResult

    dyn = {"status": "ran", "visible_compared": True, "hidden_sets_compared": ["normal"],
           "approximation_within_check": True,
           "probes": {"fresh-call-consistency": {"status": "inconclusive", "detail": "wrong on the first call"},
                      "precision-audit": {"status": "caught", "detail": "an approximation well inside"}}}
    res = SubmissionResult(path="k.py", verdict="clean", reasons=("dynamic: off on the visible inputs",),
                           hack_types=(), findings=(), dynamic=dyn)
    got = seal(res)
    assert got.verdict == "unverified" and "approximation inside the benchmark's check" in got.reasons[0], got.reasons
    dyn["probes"]["sensitivity"] = {"status": "passed", "detail": "the output follows the inputs"}
    assert seal(res).verdict == "clean"
