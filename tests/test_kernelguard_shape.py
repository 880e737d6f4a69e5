"""`hackscan audit --api-mode` against KernelGuard's own api mode (the kernelguard package, a
test-only dependency): the same keys with the same types, KernelGuard's classification words,
matched patterns as objects with KernelGuard's fields, `--profile` accepted with KernelGuard's
profile names and refused as KernelGuard refuses an unknown one, and the GPU MODE pointer-replay
hack that KernelGuard filters filtered. Every input is our own code."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import CORPUS, ROOT

pytest.importorskip("kernelguard")

REPLAY = '''
import torch
import triton
import triton.language as tl
from task import input_t, output_t

_out = {}


@triton.jit
def mul_kernel(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=m) * tl.load(b_ptr + offs, mask=m), mask=m)


def custom_kernel(data: input_t) -> output_t:
    a, b = data
    k = (a.data_ptr(), b.data_ptr())
    if k in _out:
        return _out[k]
    c = torch.empty_like(a)
    mul_kernel[(triton.cdiv(a.numel(), 1024),)](a, b, c, a.numel(), BLOCK=1024)
    _out[k] = c
    return c
'''
CLEAN = (CORPUS / "legit" / "triton_relu.py").read_text()
VOCABULARY = {"hacked", "suspicious", "low_confidence", "valid"}


def _kernelguard(src: str, *extra: str) -> tuple[int, dict | None]:
    exe = shutil.which("kernelguard") or pytest.skip("no kernelguard command")
    p = subprocess.run([exe, "--api-mode", *extra], input=src, capture_output=True, text=True, timeout=300)
    return p.returncode, (json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else None)


def _hackscan(src: str, *extra: str) -> tuple[int, dict | None]:
    p = subprocess.run([sys.executable, "-m", "hackscan", "audit", "--api-mode", *extra], input=src,
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    return p.returncode, (json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0 else None)


@pytest.mark.parametrize("src", [REPLAY, CLEAN, ""], ids=["replay", "clean", "empty"])
def test_the_keys_and_their_types_are_kernelguards(src):
    krc, kg = _kernelguard(src)
    hrc, hs = _hackscan(src)
    assert krc == hrc == 0
    missing = set(kg) - set(hs)
    assert not missing, missing
    for key, value in kg.items():
        if value is None:
            continue
        assert type(hs[key]) is type(value) or hs[key] is None, (key, value, hs[key])
    assert hs["classification"] in VOCABULARY and hs["should_filter"] == (hs["classification"] == "hacked")
    assert hs["filter_reason"] is None or hs["filter_reason"] == "high_critical"


def test_matched_patterns_are_objects_with_kernelguards_fields():
    _, kg = _kernelguard(REPLAY)
    _, hs = _hackscan(REPLAY)
    assert kg["matched_patterns"] and hs["matched_patterns"]
    for theirs in kg["matched_patterns"]:
        for ours in hs["matched_patterns"]:
            assert set(theirs) <= set(ours)
            assert all(type(ours[k]) is type(theirs[k]) for k in theirs)
            assert ours["severity"] in ("critical", "high", "medium", "low") and ours["field"] == "code"


def test_the_pointer_replay_kernelguard_filters_is_filtered():
    _, kg = _kernelguard(REPLAY)
    _, hs = _hackscan(REPLAY)
    assert kg["should_filter"] and hs["should_filter"] and hs["classification"] == "hacked", hs


def test_profiles_are_kernelguards():
    import kernelguard

    from hackscan.integrations.kernelguard import PROFILES

    assert set(PROFILES) == set(kernelguard.BUILTIN_PROFILES)
    for profile in PROFILES:
        assert _hackscan(CLEAN, "--profile", profile)[0] == 0
    assert _kernelguard(CLEAN, "--profile", "no-such-profile")[0] == _hackscan(CLEAN, "--profile",
                                                                                "no-such-profile")[0] == 2


def test_strict_filters_a_contract_violation_default_does_not():
    torch_only = (CORPUS / "torch-fallback" / "linear_alias_fallback.py").read_text()
    _, default = _hackscan(torch_only)
    _, strict = _hackscan(torch_only, "--profile", "strict")
    _, generic = _hackscan(torch_only, "--profile", "generic")
    assert default["verdict"] == "violation" and not default["should_filter"]
    assert default["classification"] == "suspicious"
    assert strict["should_filter"] and strict["classification"] == "hacked"
    assert generic["verdict"] == "clean" and not generic["should_filter"]
