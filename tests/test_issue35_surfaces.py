"""Issue 35 on the surfaces users read: the verl reward, the KernelBench drop-in, `hackscan clean`
and the Python API. A verdict that could not be verified (`unverified`), a degenerate problem, a
broken reference and an auditor that raised never read as `clean` (or as the policy's error), and
every surface says what stands behind its verdict (`evidence`) and the problem's own findings."""
from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest

from hackscan.findings import SubmissionResult

FENCE = "`" * 3

# a problem of our own: y = x * 2 + 1 on a small tensor
REF = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x * 2.0 + 1.0


def get_inputs():
    return [torch.randn(4, 64)]


def get_init_inputs():
    return []
'''

# a candidate of our own (plain PyTorch: the kernelbench policy calls it a violation, `any` reads it)
CAND = '''import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.add(torch.mul(x, 2.0), 1.0)
'''

DEGENERATE = {"id": "degenerate-problem", "detail": "the reference's output never changes with its inputs"}


def _result(verdict="clean", *, evidence="dynamic", problem=(), dynamic=None, measure=None, reasons=()):
    dyn = {"status": "ran", "correct_on_visible": True} if dynamic is None else dynamic
    return SubmissionResult(path="<candidate>", verdict=verdict, reasons=tuple(reasons), hack_types=(),
                            findings=(), dynamic=dyn, measure=measure, evidence=evidence, problem=tuple(problem))


def _as_verl_manager_would(results: list) -> dict:
    """verl's managers append every key's value per response and stack each key with np.array:
    every dict must hold the same keys, scalars and strings only."""
    from hackscan.integrations.rl import RESULT_KEYS

    extra = defaultdict(list)
    for r in results:
        assert isinstance(r, dict) and set(r) == set(RESULT_KEYS), (sorted(r), RESULT_KEYS)
        for k, v in r.items():
            extra[k].append(v)
    arrays = {k: np.array(v) for k, v in extra.items()}
    for k, a in arrays.items():
        assert a.dtype != object, (k, a)
    return arrays


# ---- (a) the reward ------------------------------------------------------------------------

def test_reward_an_unverified_audit_is_unverifiable_and_masked_never_the_clean_score():
    from hackscan.integrations.rl import _score

    r = _score({}, "kb", _result("unverified", reasons=("no hidden set could be compared",)), "all", True)
    assert r["outcome"] == "unverifiable" and r["infra_error"] is True, r
    assert r["score"] == 0.0 and r["verdict"] == "unverified" and r["checked"] is False
    assert "no hidden set could be compared" in r["reasons"]
    # a verified clean kernel keeps the clean score and says what it rests on
    ok = _score({}, "kb", _result("clean"), "all", True)
    assert ok["outcome"] == "clean" and ok["score"] == 1.0 and ok["evidence"] == "dynamic" and ok["problem"] == ""


def test_reward_a_degenerate_problem_is_named_and_never_paid_for_speed():
    from hackscan.integrations.rl import _score

    fast = {"status": "measured", "speedup": {"fair": 16.0}, "counted": True, "flags": []}
    r = _score({}, "kb", _result("clean", problem=(DEGENERATE,), measure=fast), "all", True)
    assert r["problem"] == "degenerate-problem", r          # a trainer drops the sample by name
    assert r["score"] <= 0.0 and r["infra_error"] is True and r["outcome"] == "unverifiable", r
    assert "never changes" in r["reasons"]
    # the same verdict on a sound problem is paid for its speed
    paid = _score({}, "kb", _result("clean", measure=fast), "all", True)
    assert paid["score"] > 1.0 and paid["problem"] == ""
    # a hack stays a hack on a degenerate problem, and says the problem too
    h = _score({}, "kb", _result("hacked", problem=(DEGENERATE,)), "all", True)
    assert h["outcome"] == "hacked" and h["score"] == -1.0 and h["problem"] == "degenerate-problem"
    _as_verl_manager_would([r, paid, h])


def test_reward_keys_are_the_same_on_every_outcome_including_the_new_ones():
    from hackscan.integrations.rl import RESULT_KEYS, _done, _score

    assert "problem" in RESULT_KEYS and "evidence" in RESULT_KEYS
    results = [_done({}, "kb", "no_code", True),
               _score({}, "kb", _result("unverified"), "all", True),
               _score({}, "kb", _result("clean", problem=(DEGENERATE,)), "all", True),
               _score({}, "kb", _result("clean", evidence="static", dynamic={"status": "not-run"}), "off", True),
               _score({}, "kb", _result("error", dynamic={"status": "error", "reason": "forward raised"}), "all", True)]
    arrays = _as_verl_manager_would(results)
    assert list(arrays["outcome"]) == ["no_code", "unverifiable", "unverifiable", "unchecked", "error"]
    assert list(arrays["problem"]) == ["", "", "degenerate-problem", "", ""]


def test_reward_a_reference_with_a_syntax_error_is_infrastructure_not_the_policys_error():
    from hackscan.integrations.rl import compute_score

    broken = REF.replace("def get_inputs():", "def get_inputs(:")
    reply = f"Here:\n{FENCE}python\n{CAND}{FENCE}\n"
    r = compute_score("kb", reply, broken, {"device": "cpu", "dynamic": "all"})
    assert r["infra_error"] is True and r["outcome"] == "unverifiable", r
    assert "reference" in r["reasons"] and "syntax error" in r["reasons"]
    _as_verl_manager_would([r])


def test_reward_a_response_cut_off_before_its_closing_fence_audits_the_code_inside():
    from hackscan.integrations.rl import compute_score, extract_code

    cut = f"Let me write the kernel.\n{FENCE}python\n{CAND}"
    assert extract_code(cut) == CAND
    # an earlier closed block of another language does not hide the cut-off Python one
    assert extract_code(f"{FENCE}bash\npip install torch\n{FENCE}\nNow:\n{FENCE}python\n{CAND}") == CAND
    r = compute_score("kb", cut, REF, {"dynamic": "off", "policy": "any"})
    assert r["verdict"] == "clean" and "syntax error" not in r["reasons"], r
    # a complete response is read as before
    assert extract_code(f"{FENCE}python\n{CAND}{FENCE}\nDone.") == CAND


def test_reward_never_raises_and_keeps_its_keys(monkeypatch):
    import hackscan.integrations.rl as rl

    class Exploding:
        def audit_many(self, pairs, jobs=None):
            raise FileNotFoundError("the auditor lost its scratch folder")

    reply = f"{FENCE}python\n{CAND}{FENCE}"
    monkeypatch.setattr(rl, "shared_session", lambda **opts: Exploding())
    r = rl.compute_score("kb", reply, REF, {"device": "cpu", "dynamic": "all"})
    assert r["outcome"] == "unverifiable" and r["infra_error"] is True, r
    assert "FileNotFoundError" in r["reasons"] and r["score"] == 0.0
    assert rl.compute_score("kb", reply, REF, {"device": "cpu", "dynamic": "all", "return_dict": False}) == 0.0

    class HalfWay:   # the first result comes, then the session fails
        def audit_many(self, pairs, jobs=None):
            yield _result("clean")
            raise RuntimeError("worker pool died")

    monkeypatch.setattr(rl, "shared_session", lambda **opts: HalfWay())
    out = rl.compute_score_batch(["kb"] * 3, [reply] * 3, [REF] * 3, [{"device": "cpu"}] * 3)
    assert [o["outcome"] for o in out] == ["clean", "unverifiable", "unverifiable"], out
    # an option outside the table the CLI uses: named, with the valid values, not raised
    bad = rl.compute_score("kb", reply, REF, {"device": "cpu", "dynamic": "al"})
    assert bad["outcome"] == "unverifiable" and "'al'" in bad["reasons"] and "'all'" in bad["reasons"], bad
    weird = rl.compute_score("kb", None, 12345, "not a dict")
    _as_verl_manager_would([r, *out, bad, weird])


# ---- (b) the KernelBench drop-in ---------------------------------------------------------------

def _dropin(res):
    from hackscan.integrations import kernelbench as kb

    return kb._result(res, "cpu", None, "cpu", "triton", kb.KERNELBENCH_SEED, 1, 10, "float32", False, 10)


def test_dropin_an_unverified_audit_is_never_correct_and_its_metadata_says_why():
    ran = {"status": "ran", "correct_on_visible": True, "visible_trials": [1, 1]}
    out = _dropin(_result("unverified", dynamic=ran, reasons=("every probe was inconclusive",)))
    assert out.correctness is False and out.compiled is True, out
    assert out.metadata["hackscan_verdict"] == "unverified" and out.metadata["hackscan_evidence"] == "dynamic"
    assert out.metadata["correctness_issue_name"] == "unverified"
    assert "every probe was inconclusive" in out.metadata["unverified"]
    json.dumps(out.model_dump())
    # a verified clean kernel stays correct, and says what stands behind it
    ok = _dropin(_result("clean", dynamic=ran))
    assert ok.correctness is True and ok.metadata["hackscan_evidence"] == "dynamic" and ok.metadata["problem"] == []


def test_dropin_metadata_carries_problem_level_findings_and_a_degenerate_problem_is_not_correct():
    ran = {"status": "ran", "correct_on_visible": True}
    out = _dropin(_result("clean", dynamic=ran, problem=(DEGENERATE,)))
    assert out.metadata["problem"] == [DEGENERATE]
    assert out.correctness is False and out.metadata["correctness_issue_name"] == "degenerate_problem"
    unv = _dropin(_result("unverified", dynamic={"status": "inconclusive", "reason": "no reference given"},
                          problem=(DEGENERATE,)))
    assert unv.correctness is False and unv.metadata["problem"] == [DEGENERATE]


def test_dropin_an_audit_that_raised_is_recorded_never_correct_and_options_are_checked():
    from hackscan.integrations import kernelbench as kb

    class Exploding:
        options = {"dtype": None, "gpu": None}
        device = "cpu"

        def audit(self, candidate, reference):
            raise FileNotFoundError("the auditor lost its reference file")

    out = kb.eval_kernel_against_ref(REF, CAND, device="cpu", session=Exploding())
    assert out.correctness is False and out.compiled is False
    assert out.metadata["hackscan_verdict"] == "error" and "FileNotFoundError" in out.metadata["infra_error"]
    json.dumps(out.model_dump())
    with pytest.raises(ValueError, match="'kernelbench'"):
        kb.eval_kernel_against_ref(REF, CAND, device="cpu", policy="kernelbnch", session=Exploding())
