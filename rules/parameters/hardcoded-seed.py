from hackscan.rule import Rule
from hackscan.parse.trees import captures, walk

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
        16 entries; deterministic test code belongs in tests, not in a candidate.

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
        for c in py.calls:
            if c.resolved and c.callee in SEEDERS:
                ctx.report(c.node, f"{c.callee} re-seeds the random generator inside the candidate")
        seen = set()
        for n in captures("python", "[(list) (tuple)] @seq", py.tree.root_node).get("seq", []):
            if n.named_child_count >= 16 and n.start_byte not in seen:
                nums = sum(1 for c in n.named_children if c.type in ("integer", "float", "unary_operator"))
                if nums >= 16:
                    for m in walk(n):
                        seen.add(m.start_byte)
                    ctx.report(n, f"a literal table of {nums} numbers is embedded in the source")
