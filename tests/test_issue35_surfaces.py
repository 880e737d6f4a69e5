"""Issue 35 on the surfaces users read: the verl reward, the KernelBench drop-in, `hackscan clean`
and the Python API. A verdict that could not be verified (`unverified`), a degenerate problem, a
broken reference and an auditor that raised never read as `clean` (or as the policy's error), and
every surface says what stands behind its verdict (`evidence`) and the problem's own findings."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

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


# ---- (c) hackscan clean ------------------------------------------------------------------------

def _rows(n, *, ref=True):
    return [dict({"id": f"r{k}", "code": CAND.replace("1.0)", f"1.0)  # variant {k}")},
                 **({"reference": REF} if ref else {})) for k in range(n)]


def _write_jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _fake_audit_many(verdicts, seen=None, stop_after=None):
    """hackscan.api.audit_many's shape, its results constructed: `verdicts` in order, a stop (the
    interrupt a kill would be) after `stop_after` results."""
    def audit_many(pairs, **kw):
        pairs = list(pairs)
        if seen is not None:
            seen.append(len(pairs))
        for k, _ in enumerate(pairs):
            if stop_after is not None and k == stop_after:
                raise KeyboardInterrupt("simulated kill")
            v = verdicts[k % len(verdicts)]
            yield _result(v, problem=(DEGENERATE,) if v == "unverified" else (),
                          reasons=("every probe inconclusive",) if v == "unverified" else ())
    return audit_many


def _results(out: Path) -> dict:
    return {r["row"]: r for r in map(json.loads, (out / "results.jsonl").read_text().splitlines())}


def test_clean_unverified_rows_are_kept_apart_counted_and_written_to_their_own_file(tmp_path, monkeypatch):
    import hackscan.api
    from hackscan.clean import CleanOptions, clean

    rows = _rows(4) + _rows(1, ref=False)      # the last row has no reference to verify against
    ds = tmp_path / "gen.jsonl"
    _write_jsonl(ds, rows)
    monkeypatch.setattr(hackscan.api, "audit_many", _fake_audit_many(["clean", "unverified", "hacked", "clean"]))
    s = clean(ds, tmp_path / "out", CleanOptions(dynamic="all", policy="any"))
    res = _results(tmp_path / "out")
    assert [res[i]["verdict"] for i in range(5)] == ["clean", "unverified", "hacked", "clean", "unverified"]
    assert [res[i]["evidence"] for i in range(4)] == ["dynamic"] * 4 and res[4]["evidence"] == "static"
    assert res[1]["problem"] == [DEGENERATE] and res[0]["problem"] == []
    assert "no reference" in res[4]["reasons"][0]
    lines = ds.read_text().splitlines()
    assert (tmp_path / "out" / "cleaned.jsonl").read_text().splitlines() == [lines[0], lines[3]]
    assert (tmp_path / "out" / "unverified.jsonl").read_text().splitlines() == [lines[1], lines[4]]
    assert s["unverified"] == 2 and s["verdicts"]["unverified"] == 2 and s["unverified_file"] == "unverified.jsonl"
    assert "unverified" in s["removed_verdicts"] and s["evidence"] == {"dynamic": 4, "static": 1}
    assert s["problem"] == {"degenerate-problem": 1}


def test_clean_static_rows_say_evidence_static(tmp_path):
    from hackscan.clean import CleanOptions, clean

    ds = tmp_path / "gen.jsonl"
    _write_jsonl(ds, _rows(2))
    s = clean(ds, tmp_path / "out", CleanOptions(policy="any"))
    res = _results(tmp_path / "out")
    assert [r["evidence"] for r in res.values()] == ["static", "static"]
    assert [r["problem"] for r in res.values()] == [[], []] and s["evidence"] == {"static": 2}
    assert not (tmp_path / "out" / "unverified.jsonl").exists()


def test_clean_rows_are_on_disk_as_they_finish_not_per_batch(tmp_path, monkeypatch):
    """A stop in the middle of a batch (the interrupt a kill would be, after two of its four rows
    were audited) loses neither: the resume audits only the two left."""
    import hackscan.api
    from hackscan.clean import CleanOptions, clean

    ds = tmp_path / "gen.jsonl"
    _write_jsonl(ds, _rows(4))
    opts = CleanOptions(dynamic="all", policy="any")
    monkeypatch.setattr(hackscan.api, "audit_many", _fake_audit_many(["clean"], stop_after=2))
    with pytest.raises(KeyboardInterrupt):
        clean(ds, tmp_path / "out", opts)
    on_disk = [json.loads(x) for f in (tmp_path / "out").rglob("*.jsonl") for x in f.read_text().splitlines()]
    assert sorted(r["row"] for r in on_disk) == [0, 1], on_disk
    seen: list = []
    monkeypatch.setattr(hackscan.api, "audit_many", _fake_audit_many(["clean"], seen=seen))
    s = clean(ds, tmp_path / "out", opts)
    assert seen == [2] and s["rows_resumed"] == 2 and s["rows_new"] == 2, (seen, s)
    lines = (tmp_path / "out" / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["row"] for x in lines) == [0, 1, 2, 3]        # complete, no duplicates
    assert not (tmp_path / "out" / "inflight").exists()


def test_clean_resume_with_other_options_refuses_and_names_what_changed(tmp_path, cli):
    from hackscan.clean import CleanOptions, clean

    ds = tmp_path / "gen.jsonl"
    _write_jsonl(ds, _rows(3))
    out = tmp_path / "out"
    clean(ds, out, CleanOptions(policy="any"))                       # a static run
    before = (out / "results.jsonl").read_text()
    r = cli("clean", str(ds), "--out", str(out), "--policy", "any", "--dynamic", "all")
    assert r.returncode == 2 and "--dynamic 'off' (now 'all')" in r.stderr, (r.returncode, r.stdout, r.stderr)
    assert json.loads((out / "summary.json").read_text())["dynamic"] == "off"   # never says what did not run
    from hackscan.clean import CleanOptionsChanged

    with pytest.raises(CleanOptionsChanged, match=r"--dynamic 'off' \(now 'all'\)"):
        clean(ds, out, CleanOptions(policy="any", dynamic="all"))
    with pytest.raises(CleanOptionsChanged) as e:
        clean(ds, out, CleanOptions(policy="kernelbench", device="cuda"))
    assert "--policy 'any' (now 'kernelbench')" in str(e.value) and "--device 'cpu' (now 'cuda')" in str(e.value)
    assert (out / "results.jsonl").read_text() == before              # nothing re-used under other options
    # the same options resume, and a different --remove only changes what is kept
    again = clean(ds, out, CleanOptions(policy="any", remove=("hacked",)))
    assert again["rows_new"] == 0 and again["rows_resumed"] == 3


# ---- (d) the Python API checks its options and its paths ----------------------------------------

@pytest.mark.parametrize("call", ["audit", "audit_many", "session"])
def test_api_unknown_option_values_raise_naming_the_valid_ones(call):
    import hackscan
    from hackscan import api

    def run(**kw):
        if call == "audit":
            return api.audit(CAND, REF, **kw)
        if call == "audit_many":
            return api.audit_many([(CAND, REF)], **kw)       # at the call, not at the first result
        return hackscan.Session(**kw)

    with pytest.raises(ValueError, match=r"dynamic='al'.*'off', 'auto', 'all'"):
        run(dynamic="al")
    with pytest.raises(ValueError, match=r"device='gpu'.*'cpu', 'cuda'"):
        run(device="gpu")
    with pytest.raises(ValueError, match=r"policy='kernelbnch'.*'kernelbench', 'any'"):
        run(policy="kernelbnch")
    with pytest.raises(ValueError, match=r"cuda_ghost='sometimes'.*'suspects', 'always', 'never'"):
        run(cuda_ghost="sometimes")
    with pytest.raises(ValueError, match=r"measure='yes'"):
        run(measure="yes")


def test_api_scan_checks_policy_and_confidence():
    from hackscan import api

    with pytest.raises(ValueError, match=r"policy='strict'.*'kernelbench', 'any'"):
        api.scan(CAND, REF, policy="strict")
    with pytest.raises(ValueError, match=r"min_confidence='hi'"):
        api.scan(CAND, REF, min_confidence="hi")
    assert api.scan(CAND, REF, policy="any").verdict == "clean"


def test_api_a_missing_path_raises_instead_of_being_read_as_source(tmp_path):
    import hackscan
    from hackscan import api

    missing = str(tmp_path / "kernels" / "candidate_7.py")
    with pytest.raises(FileNotFoundError, match="candidate_7.py"):
        api.audit(missing, REF, dynamic="off")
    with pytest.raises(FileNotFoundError, match="ref.py"):
        api.audit(CAND, "ref.py", dynamic="off")
    with pytest.raises(FileNotFoundError):
        api.audit(tmp_path / "nothing.py", dynamic="off")
    with pytest.raises(FileNotFoundError, match="kernel.cu"):
        api.audit_many([("kernel.cu", REF)], dynamic="off")
    with hackscan.Session(dynamic="off") as s:
        with pytest.raises(FileNotFoundError, match="candidate_7.py"):
            s.audit(missing, REF)
        with pytest.raises(FileNotFoundError, match="candidate_7.py"):
            list(s.audit_many([(missing, REF)]))
        # real source text, and a real file, keep working
        assert s.audit(CAND, REF).verdict in ("clean", "violation")
        f = tmp_path / "cand.py"
        f.write_text(CAND)
        assert s.audit(f, REF).path == str(f)
    assert api.audit(CAND, REF, dynamic="off", policy="any").verdict == "clean"
    assert api.audit(str(f), REF, dynamic="off", policy="any").verdict == "clean"
    # a one-line source that merely mentions a file name is text
    one_line = "import torch; x = torch.load('weights.pt'); print('see model.py')"
    assert api.audit(one_line, dynamic="off").verdict in ("clean", "error", "suspect")


def test_kernelguard_object_an_unverified_audit_is_never_valid_and_says_its_evidence():
    from hackscan.integrations import kernelguard

    obj = kernelguard.from_result(_result("unverified", problem=(DEGENERATE,)), CAND)
    assert obj["classification"] == "low_confidence" and obj["should_filter"] is False, obj
    assert obj["evidence"] == "dynamic" and obj["problem"] == ["degenerate-problem"]
    ok = kernelguard.from_result(_result("clean"), CAND)
    assert ok["classification"] == "valid" and ok["evidence"] == "dynamic" and ok["problem"] == []
    assert kernelguard.empty()["evidence"] == "static"


# ---- end to end: each surface on a verified clean kernel, a hack, an unverifiable audit ------------

# a problem whose reference ignores its input (a bug in the problem: the input is multiplied by 0)
DEGENERATE_REF = REF.replace("return x * 2.0 + 1.0", "return x * 0.0 + 3.0")
# the reference's own formula on it: nothing here can tell it from a constant
ON_DEGENERATE = CAND.replace("torch.add(torch.mul(x, 2.0), 1.0)", "torch.add(torch.mul(x, 0.0), 3.0)")
# the first call's answer returned to every later call (result caching)
CACHING = CAND.replace('''        super().__init__()
''', '''        super().__init__()
        self.saved = None
''').replace('''        return torch.add(torch.mul(x, 2.0), 1.0)''', '''        if self.saved is None:
            self.saved = torch.add(torch.mul(x, 2.0), 1.0)
        return self.saved''')
CASES = {"verified": (CAND, REF), "hack": (CACHING, REF), "unverifiable": (ON_DEGENERATE, DEGENERATE_REF)}


@pytest.mark.dynamic
def test_end_to_end_reward_on_a_verified_kernel_a_hack_and_an_unverifiable_audit():
    from hackscan.integrations.rl import compute_score_batch

    names = list(CASES)
    out = compute_score_batch(["kb"] * 3, [f"{FENCE}python\n{CASES[n][0]}{FENCE}" for n in names],
                              [CASES[n][1] for n in names], [{"device": "cpu", "policy": "any", "dynamic": "all"}] * 3)
    got = dict(zip(names, out))
    assert got["verified"]["outcome"] == "clean" and got["verified"]["score"] == 1.0, got["verified"]
    assert got["verified"]["evidence"] == "dynamic" and got["verified"]["problem"] == ""
    assert got["hack"]["outcome"] == "hacked" and got["hack"]["score"] == -1.0, got["hack"]
    unv = got["unverifiable"]
    assert unv["outcome"] == "unverifiable" and unv["infra_error"] is True and unv["score"] == 0.0, unv
    assert unv["problem"] == "degenerate-problem"
    _as_verl_manager_would(out)


@pytest.mark.dynamic
def test_end_to_end_dropin_on_a_verified_kernel_a_hack_and_an_unverifiable_audit():
    from hackscan.integrations.kernelbench import eval_kernel_against_ref

    got = {n: eval_kernel_against_ref(ref, cand, device="cpu", policy="any") for n, (cand, ref) in CASES.items()}
    assert got["verified"].correctness is True and got["verified"].metadata["hackscan_evidence"] == "dynamic"
    assert got["hack"].correctness is False and got["hack"].metadata["hackscan_verdict"] == "hacked"
    unv = got["unverifiable"]
    assert unv.correctness is False and unv.metadata["hackscan_verdict"] != "clean", unv.metadata
    assert [p["id"] for p in unv.metadata["problem"]] == ["degenerate-problem"]


@pytest.mark.dynamic
def test_end_to_end_clean_on_a_verified_kernel_a_hack_and_an_unverifiable_audit(tmp_path):
    from hackscan.clean import CleanOptions, clean

    names = list(CASES)
    ds = tmp_path / "gen.jsonl"
    _write_jsonl(ds, [{"id": n, "code": CASES[n][0], "reference": CASES[n][1]} for n in names])
    s = clean(ds, tmp_path / "out", CleanOptions(dynamic="all", policy="any", timeout_s=120))
    res = {r["id"]: r for r in _results(tmp_path / "out").values()}
    assert res["verified"]["verdict"] == "clean" and res["verified"]["evidence"] == "dynamic", res["verified"]
    assert res["hack"]["verdict"] == "hacked"
    assert res["unverifiable"]["verdict"] == "unverified", res["unverifiable"]
    assert [p["id"] for p in res["unverifiable"]["problem"]] == ["degenerate-problem"]
    lines = ds.read_text().splitlines()
    assert (tmp_path / "out" / "cleaned.jsonl").read_text().splitlines() == [lines[0]]
    assert (tmp_path / "out" / "unverified.jsonl").read_text().splitlines() == [lines[2]]
    assert s["unverified"] == 1
