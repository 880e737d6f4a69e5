"""The verl-shaped reward: one key set for every outcome, what verl's reward managers do with it,
keyword arguments, infrastructure failures apart from wrong kernels, the batch entry point."""
from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import numpy as np

from hackscan.integrations.rl import RESULT_KEYS, compute_score, compute_score_batch

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus" / "synthetic"
REF = (ROOT / "corpus" / "problems" / "relu.py").read_text()
FENCE = "`" * 3


def _reply(path: str) -> str:
    return f"Here it is.\n{FENCE}python\n{(CORPUS / path).read_text()}{FENCE}\n"


BATCH = [("kernelbench", "I will not write that.", REF),
         ("kernelbench", _reply("legit/triton_relu.py"), REF),
         ("kernelbench", _reply("result-caching/softmax_ptr_cache.py"), REF),
         ("kernelbench", _reply("torch-fallback/" + sorted(p.name for p in (CORPUS / "torch-fallback").glob("*.py"))[0]), REF)]


def _as_verl_manager_would(results: list) -> dict:
    """What verl's reward managers do with the dicts (reproduced, not imported: verl 0.9.1 needs
    transformers, ray, peft, wandb and more, too much for the test extras): NaiveRewardManager reads
    `score["score"]` (releases before 0.4 read `reward`), appends every key's value per response
    to `reward_extra_info`, and the trainer stores `np.array(v)` per key beside the batch."""
    extra = defaultdict(list)
    for r in results:
        assert isinstance(r, dict) and "reward" in r and "score" in r
        assert r["reward"] == r["score"]
        for k, v in r.items():
            extra[k].append(v)
    arrays = {k: np.array(v) for k, v in extra.items()}
    for k, a in arrays.items():
        assert len(a) == len(results), k
        assert a.dtype != object, (k, a)
    return arrays


def test_every_outcome_has_the_same_scalar_keys_and_stacks_as_verl_stacks_them():
    # the extra_info keys NaiveRewardManager adds to every call
    results = [compute_score(data_source=ds, solution_str=s, ground_truth=gt,
                             extra_info={"dynamic": "off", "num_turns": None, "rollout_reward_scores": {}})
               for ds, s, gt in BATCH]
    assert [set(r) for r in results] == [set(RESULT_KEYS)] * len(results)
    arrays = _as_verl_manager_would(results)
    assert list(arrays["outcome"][:2]) == ["no_code", "unchecked"]
    assert arrays["score"][0] == -1.0 and arrays["outcome"][2] in ("hacked", "unchecked")


def test_keyword_arguments_are_read_as_extra_info():
    r = compute_score("kernelbench", BATCH[1][1], REF, None, dynamic="off", scores={"unchecked": 0.25})
    assert r["outcome"] == "unchecked" and r["score"] == 0.25
    # extra_info wins where both name a key
    r = compute_score("kernelbench", BATCH[1][1], REF, {"dynamic": "off", "scores": {"unchecked": 0.5}},
                      scores={"unchecked": 0.25})
    assert r["score"] == 0.5
    assert compute_score("kernelbench", BATCH[1][1], REF, None, dynamic="off", return_dict=False) == 0.0


def test_the_batch_entry_point_gives_what_single_calls_give():
    single = [compute_score(ds, s, gt, {"dynamic": "off"}) for ds, s, gt in BATCH]
    batch = compute_score_batch([b[0] for b in BATCH], [b[1] for b in BATCH], [b[2] for b in BATCH],
                                [{"dynamic": "off"}] * len(BATCH))
    assert len(batch) == len(single)
    for a, b in zip(single, batch):
        assert {k: v for k, v in a.items() if k != "speedup"} == {k: v for k, v in b.items() if k != "speedup"}
        assert math.isnan(a["speedup"]) and math.isnan(b["speedup"])


BROKEN_REF = REF.replace("def get_inputs():", "def get_inputs():\n    raise RuntimeError('the dataset row is broken')")


def test_a_reference_that_cannot_run_is_an_infrastructure_failure_not_a_wrong_kernel():
    assert BROKEN_REF != REF
    r = compute_score("kernelbench", BATCH[1][1], BROKEN_REF, {"device": "cpu", "dynamic": "all"})
    assert r["outcome"] == "unverifiable" and r["infra_error"] is True, r
    assert r["score"] == 0.0 and "reference" in r["reasons"]
    _as_verl_manager_would([r, compute_score("kernelbench", "no code", REF, {"dynamic": "off"})])


def test_a_candidate_whose_visible_outputs_could_not_be_compared_is_not_scored_as_wrong():
    """Full-size problems on a shared disk: where no output on the visible inputs could be kept,
    `correct_on_visible` is false for want of a comparison, not for a wrong answer. The reward
    says unverifiable (masked by `infra_error`), never incorrect; where outputs were compared and
    wrong, it stays incorrect."""
    from types import SimpleNamespace

    from hackscan.integrations.rl import _score

    def res(**dyn):
        return SimpleNamespace(verdict="clean", hack_types=(), reasons=(), measure=None,
                               dynamic={"status": "ran", "correct_on_visible": False, **dyn})

    r = _score({}, "kernelbench", res(visible_compared=False), "all", True)
    assert r["outcome"] == "unverifiable" and r["infra_error"] is True and r["score"] == 0.0, r
    r = _score({}, "kernelbench", res(visible_compared=True), "all", True)
    assert r["outcome"] == "incorrect" and r["infra_error"] is False, r
