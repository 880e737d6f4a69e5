from hackscan.facts.flow import CUSTOM, HEAVY, COMPUTE, REFERENCE
from hackscan.rule import Rule
from hackscan.ruletools import calls_in_node, raises_only


class FallbackInExceptHandler(Rule):
    """An exception handler computes the answer with PyTorch when the custom path fails.

    What it flags
        A `try` whose body runs a custom kernel and whose `except` handler (in forward, a
        helper, or around the extension build) computes with torch ops or the reference model
        instead of re-raising.

    Why it is a hack
        The candidate is only custom when the custom path works. When the kernel fails to
        compile or launch, the benchmark silently scores PyTorch's result as the candidate's.

    Example
        try:
            return ext.forward(x)
        except Exception:
            return torch.softmax(x, dim=-1)

    Legitimate look-alike
        A handler that re-raises with a clearer message, or that records that an optional
        build failed and raises later when the kernel is needed.

    Dynamic confirmation
        Force the custom path to fail (or record which branch ran): outputs must come from
        the custom kernel.

    Known gaps
        Fallbacks selected later through a flag set in the handler are reported by
        torch-fallback-branch.
    """

    id = "fallback-in-except-handler"
    hack_type = "guarded-fallback"
    severity = "high"
    confidence = "high"
    summary = "an except handler falls back to PyTorch compute"
    needs = ("flow",)
    probes = ("forced-failure",)

    def check(self, ctx):
        f = ctx.facts
        fl = f.flow
        for handler, func in f.py.excepts:
            body = next((c for c in handler.named_children if c.type == "block"), None)
            if body is None or raises_only(body):
                continue
            try_stmt = handler.parent
            try_body = try_stmt.child_by_field_name("body") if try_stmt is not None else None
            if try_body is None:
                continue
            try_kinds = {fl.kind(c) for c in calls_in_node(f, try_body)}
            try_custom = CUSTOM in try_kinds or any(
                fl.kind(c) == "local" and fl.launches_custom(fl.local_target(c)) for c in calls_in_node(f, try_body))
            if not try_custom and not any(e.call.node.start_byte >= try_body.start_byte and
                                          e.call.node.end_byte <= try_body.end_byte for e in f.py.extensions):
                continue
            fallback = [c for c in calls_in_node(f, body) if fl.kind(c) in (HEAVY, COMPUTE, REFERENCE)]
            if fallback:
                c = fallback[0]
                ctx.report(handler, f"when the custom path fails, the handler computes with {c.callee}",
                           related=[(c.node, "fallback computation", None)],
                           evidence={"fallback": c.callee})
