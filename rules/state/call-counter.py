from hackscan.rule import Rule
from hackscan.parse.trees import text, walk


# calls of one model an audit's probes are sure to make before a switch would show (the fresh
# calls, repeats and reloads of the main run); a counter compared with more is past them
BEYOND_AUDIT = 16


def _int(n) -> int | None:
    try:
        return int(text(n).replace("_", ""), 0)
    except ValueError:
        return None


ARITH_UPDATES = ("+=", "-=", "*=", "/=")


def _aug_op(node) -> str:
    op = node.child_by_field_name("operator") if node.type == "augmented_assignment" else None
    return text(op) if op is not None else ""


def _operand(value, name: str) -> bool:
    """Whether `name` is an operand of the arithmetic `value` computes (`0.9 * self.avg + x`, or
    either branch of a conditional of such), not a call on it (`self.wb.to(device)`: a move)."""
    stack = [value]
    while stack:
        n = stack.pop()
        if n.type in ("attribute", "identifier") and text(n) == name and n is not value:
            return True
        if n.type in ("binary_operator", "parenthesized_expression", "conditional_expression", "unary_operator"):
            stack.extend(n.named_children)
    return False


def _reads(value, name: str) -> bool:
    """Whether the expression `value` reads `name` (an attribute or a variable), as a whole name."""
    return any(n.type in ("attribute", "identifier") and text(n) == name for n in walk(value))


class CallCounter(Rule):
    """forward counts its calls and branches on the count.

    What it flags
        `self.n += 1` (or `self.n = self.n + 1`, a `global` counter, a C++ `static int`
        incremented in a host function) in forward or its helpers. Severity is high when a
        condition reads the counter.

    Why it is a hack
        Harnesses check correctness on the first calls and time the later ones. A counter
        tells the phases apart: honest while checked, a shortcut while timed.

    Example
        self.calls += 1
        if self.calls > 5:
            return self.last

    Legitimate look-alike
        Statistics kept for logging that no branch reads are reported at medium severity;
        autotuners that pick a config on the first call and keep every path correct read
        a config cache, not a counter.

    Dynamic confirmation
        Indistinguishable phases: outputs rechecked inside the timed loop, calls beyond the
        warm-up compared with the reference. A count compared with 16 or more (`if self.n >
        48`) switches after more calls than the probes are sure to make on one model: no probe
        settles it and the finding keeps the verdict `suspect` (an outside red team's kernel
        was honest for 48 calls, the audit made 35, and its passing probes cleared it).

        Any state forward updates from its own value on every call (a running average, a sum,
        a decayed level: `self.level = 0.98 * self.level + 0.02`) and a condition reads is
        flagged the same way, at high severity: it drifts with the number of calls, and a switch
        on it needs no integer counter (an outside red team's average crossed its threshold after
        about 63 calls, past the audit's). No probe settles it (the switch may come after any
        number of calls): the finding keeps the verdict `suspect`.

    Known gaps
        Counters kept in closures or in objects other than the module are not followed.
    """

    id = "call-counter"
    hack_type = "phase-detection"
    severity = "medium"
    confidence = "high"
    summary = "forward counts its calls"
    languages = ("python", "cuda")
    needs = ("flow", "cuda")
    probes = ("timed-recheck",)

    def check(self, ctx):
        f = ctx.facts
        if f.forward is not None:
            funcs = {fn.qualname for fn in f.forward_funcs}
            branch_reads = set()
            limits: dict[str, int] = {}     # counter -> the largest integer its conditions compare it with
            # the conditions of branches, and comparisons anywhere (a count compared into a
            # kernel's flag switches it as a branch does)
            tests = [b.condition for b in f.py.branches if b.func is not None and b.func.qualname in funcs]
            tests += [n for fn in f.forward_funcs for n in walk(fn.node) if n.type == "comparison_operator"]
            for cond in tests:
                if cond is not None:
                    names = {text(n) for n in walk(cond) if n.type in ("attribute", "identifier")}
                    branch_reads |= names
                    ints = [_int(n) for n in walk(cond) if n.type == "integer"]
                    top = max((i for i in ints if i is not None), default=None)
                    if top is not None:
                        for nm in names:
                            limits[nm] = max(limits.get(nm, top), top)
            globals_declared = {n for n, _, fn in f.py.globals_declared if fn is not None and fn.qualname in funcs}
            for a in f.py.assigns:
                if a.func is None or a.func.qualname not in funcs or a.value is None:
                    continue
                for t in a.targets:
                    tt = text(t)
                    stateful = tt.startswith("self.") or tt in globals_declared
                    if not stateful:
                        continue
                    incr = a.augmented and a.value.type == "integer" or (
                        not a.augmented and a.value.type == "binary_operator" and _reads(a.value, tt)
                        and any(c.type == "integer" for c in a.value.named_children))
                    # state that grows with every call whatever its type (a running average, a
                    # sum, a decayed level): a late switch needs no integer counter
                    grows = not incr and tt in branch_reads and (
                        a.augmented and _aug_op(a.node) in ARITH_UPDATES or not a.augmented and _operand(a.value, tt))
                    if grows:
                        ctx.report(a.node, f"forward updates {tt} from its own value on every call and a condition "
                                   "reads it: the state drifts with the number of calls, and a switch on it comes "
                                   "after however many calls it takes, no counter needed", severity="high",
                                   probes=())
                        continue
                    if incr:
                        hot = tt in branch_reads
                        late = limits.get(tt, 0) if hot else 0
                        if late >= BEYOND_AUDIT:
                            # a switch after more calls than an audit makes on one model: every
                            # probe saw the first phase only, so none of them settles it
                            ctx.report(a.node, f"forward counts its calls in {tt} and branches on the count past "
                                       f"{late} calls, more than an audit makes on one model: its probes see only "
                                       "the first phase", severity="high", probes=())
                            continue
                        ctx.report(a.node, f"forward counts its calls in {tt}" + (" and branches on the count" if hot else ""),
                                   severity="high" if hot else None)
        for u in f.cuda:
            statics = {}
            for node, fn in u.facts.statics:
                if fn is not None and fn.kind == "host":
                    for d in node.children_by_field_name("declarator"):
                        nm = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
                        statics[text(nm)] = node
            if not statics:
                continue
            for n in walk(u.facts.tree.root_node):
                if n.type == "update_expression" or (n.type == "assignment_expression" and text(n).split("+=")[0].strip() in statics):
                    arg = next((text(c) for c in n.named_children if c.type == "identifier"), None)
                    if arg in statics:
                        ctx.report(n, f"host code counts calls in static {arg}", unit=u)
