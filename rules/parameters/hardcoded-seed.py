from hackscan.rule import Rule
from hackscan.parse.trees import captures, text, walk

# the benchmark's own input generators, which a candidate file often carries along as shims
HARNESS_SHIMS = ("get_inputs", "get_init_inputs")

SEEDERS = ("torch.manual_seed", "torch.random.manual_seed", "torch.cuda.manual_seed",
           "torch.cuda.manual_seed_all", "torch.seed", "torch.random.seed", "torch.cuda.random.manual_seed")


class HardcodedSeed(Rule):
    """The candidate seeds the random generator or embeds large tables of numbers.

    What it flags
        `torch.manual_seed(...)` and its CUDA variants anywhere in the candidate, and numeric
        literal tables of 16 or more numbers (weights or outputs pasted into the source).

    Why it is a hack
        Benchmarks build both models after seeding (often seed 42). Re-seeding lets a
        candidate regenerate the reference's parameters or inputs and hard-code results that
        only hold for that seed; a literal table is the same trick done offline.

    Example
        torch.manual_seed(42)
        self.expected_weight = torch.randn(64, 64)   # equals the reference's init

    Legitimate look-alike
        Small constant tables (coefficients of a polynomial approximation) have fewer than
        16 entries. A seed inside the candidate file's own copy of `get_inputs` /
        `get_init_inputs` (the harness calls the reference's, never these) and a seed in
        `__init__` that the reference's `__init__` sets the same way (the candidate builds its
        weights exactly as the reference does) are not reported.

    Dynamic confirmation
        Re-initialise parameters with another seed and non-trivial values; draw inputs from
        a secret seed.

    Known gaps
        Seeds set through numpy or Python's `random` are reported by global-flag-write.
    """

    id = "hardcoded-seed"
    hack_type = "init-exploitation"
    severity = "medium"
    confidence = "high"
    summary = "the candidate re-seeds the RNG or embeds large numeric tables"
    needs = ("python",)
    probes = ("parameter-reinit", "secret-seed-inputs")

    def check(self, ctx):
        py = ctx.py
        mirrored = _reference_init_seeds(ctx.facts.reference)
        for c in py.calls:
            if c.resolved and c.callee in SEEDERS:
                top = c.func
                while top is not None and top.parent is not None:
                    top = top.parent
                if top is not None and top.cls is None and top.name in HARNESS_SHIMS:
                    continue
                if c.func is not None and c.func.name == "__init__" and _norm(c.node) in mirrored:
                    continue
                ctx.report(c.node, f"{c.callee} re-seeds the random generator inside the candidate")
        seen = set()
        for n in captures("python", "[(list) (tuple)] @seq", py.tree.root_node).get("seq", []):
            if n.named_child_count >= 16 and n.start_byte not in seen:
                nums = sum(1 for c in n.named_children if c.type in ("integer", "float", "unary_operator"))
                if nums >= 16:
                    for m in walk(n):
                        seen.add(m.start_byte)
                    ctx.report(n, f"a literal table of {nums} numbers is embedded in the source")


def _norm(node) -> str:
    return "".join(text(node).split())


def _reference_init_seeds(ref) -> set[str]:
    """The seed calls in the reference's constructors, as text without spaces."""
    if ref is None or getattr(ref, "py", None) is None:
        return set()
    return {_norm(c.node) for c in ref.py.calls
            if c.resolved and c.callee in SEEDERS and c.func is not None and c.func.name == "__init__"}
