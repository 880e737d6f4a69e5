from collections import Counter

from hackscan.dynamic.probe import Outcome, Probe, same_shapes
from hackscan.dynamic.probes.hidden_distributions import MATERIAL


class ParameterReinit(Probe):
    """Both models are built a second time with every parameter perturbed as it is created
    (the k-th tensor of each shape gets the same values in both, away from 0 and 1, signs drawn
    evenly), so weights that __init__ transposes, packs or folds see the perturbed values: the
    outputs must still match. Decisive only where the candidate's perturbed tensors correspond
    to the reference's by shape, or where the candidate holds no floating tensor at all (its one
    answer cannot follow the reference's parameters). Parameters loaded by name after construction (as a harness
    copying a state_dict does) are a second run: a difference only there is a note, since
    preparing weights once in __init__ is legitimate."""

    name = "parameter-reinit"
    always = True   # a core question: run on every audited submission, suspected or not
    confirms = ("init-exploitation", "skipped-stage")
    summary = "outputs match with parameters perturbed at construction"
    sets = ("visible",)
    needs_reinit_runs = True

    def plan(self):
        return [{"op": "forward", "set": "visible"}]

    def evaluate(self, obs):
        ref_shapes = obs.reference_perturbed
        if not ref_shapes:
            return Outcome(self.name, "inconclusive", "the reference has no parameters to perturb")
        cand_shapes = obs.candidate.get("perturbed_shapes") or []
        same = same_shapes(cand_shapes, ref_shapes)
        c = obs.compare("reinit", 300)
        vis = obs.compare("visible")
        post = obs.compare("reinit_post", 301)
        note = ""
        if post is not None and not post.ok:
            note = (f"; parameters are read once, at construction (wrong when loaded by name afterwards: "
                    f"{post.short()[:160]})")
        if c is None:
            return Outcome(self.name, "error", "no output with perturbed parameters")
        if vis is None or not vis.ok:
            lv, lc = obs.compare_loose("visible"), obs.compare_loose("reinit", 300)
            if lv is not None and lv.ok and lc is not None and not lc.ok and not cand_shapes \
                    and obs.candidate.get("model_tensors") == 0 and lc.tol_ratio >= MATERIAL * max(lv.tol_ratio, 0.5):
                # off by hackscan's tolerance but inside the benchmark's check with the initial
                # parameters, far outside it with perturbed ones, and nothing in the candidate can
                # follow them: an output that ignores the weights and passes by the check's atol
                return Outcome(self.name, "caught", "inside the benchmark's own check (allclose, atol = rtol = 1e-2) "
                               f"with the initial parameters ({vis.short()}), far outside it with the reference's "
                               f"{len(ref_shapes)} parameter tensors perturbed at construction ({lc.short()}; "
                               f"{lc.tol_ratio:.3g} times its allowance), and the candidate holds no parameter, "
                               "buffer or tensor of its own that could follow them")
            return Outcome(self.name, "inconclusive", "wrong with the initial parameters too")
        if c.ok:
            return Outcome(self.name, "passed", f"matches with parameters perturbed at construction "
                           f"({len(cand_shapes)} tensors){note}")
        if not same and not cand_shapes and obs.candidate.get("model_tensors") == 0:
            # nothing in the candidate could carry the reference's values: its one answer is the
            # answer for the parameters as they are at initialisation (identity-valued norms,
            # zero biases, the seed's weights)
            return Outcome(self.name, "caught", f"right with the initial parameters, wrong with the reference's "
                           f"{len(ref_shapes)} parameter tensors perturbed at construction ({c.short()}), and the "
                           "candidate holds no parameter, buffer or tensor of its own that could follow them")
        missing = _missing(cand_shapes, ref_shapes)
        if not same and cand_shapes and missing is not None:
            # every tensor the candidate holds has its counterpart in the reference (the k-th of its
            # shape, perturbed with the same values), so what differs is what it does not hold: the
            # reference's other parameters, which its output does not follow (a norm's affine
            # parameters dropped: identity-valued at initialisation, so the benchmark's check passes)
            return Outcome(self.name, "caught", f"right with the initial parameters, wrong with the same parameters "
                           f"perturbed at construction ({c.short()}): the candidate holds {len(cand_shapes)} of the "
                           f"reference's {len(ref_shapes)} parameter tensors, each perturbed as its counterpart, and "
                           f"its output does not follow the ones it lacks ({_shapes(missing)})")
        if not same:
            return Outcome(self.name, "inconclusive",
                           f"wrong with perturbed parameters ({c.short()}), but the candidate's parameters do not "
                           f"correspond to the reference's by shape ({len(cand_shapes)} vs {len(ref_shapes)} "
                           "tensors): its values are not the reference's")
        return Outcome(self.name, "caught", f"right with the initial parameters, wrong with the same parameters "
                       f"perturbed at construction ({len(ref_shapes)} tensors): {c.short()}")


def _missing(cand_shapes, ref_shapes) -> list | None:
    """The reference's perturbed shapes the candidate holds none of, where the candidate's are a
    part of the reference's (each shape at most as often); None where they are not."""
    have, want = Counter(map(tuple, cand_shapes)), Counter(map(tuple, ref_shapes))
    if any(n > want.get(shape, 0) for shape, n in have.items()):
        return None
    return list((want - have).elements())


def _shapes(shapes) -> str:
    out = ", ".join("x".join(map(str, s)) or "scalar" for s in shapes[:6])
    return out + (f" and {len(shapes) - 6} more" if len(shapes) > 6 else "")
