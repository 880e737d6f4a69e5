from hackscan.rule import Rule
from hackscan.parse.trees import text
from hackscan.facts.flow import PARAM


class ResultBank(Rule):
    """forward queues inputs or outputs across calls (one launch serves several calls).

    What it flags
        Appending to a list or deque kept on the module or in a global (`self.pending.append(x)`,
        `self.bank.extend(...)`) in forward or its helpers, and `len(...)` of such state in a
        condition.

    Why it is a hack
        Batching calls lets one launch serve many: later calls return tensors that are still
        being written, or results computed on an earlier call, and per-call time shrinks.

    Example
        self.pending.append(x)
        if len(self.pending) == 8:
            self.results = ext.batched(torch.stack(self.pending))
        return self.results[len(self.pending) - 1]

    Legitimate look-alike
        Lists built and consumed within one call (local variables) are not state.

    Dynamic confirmation
        Per-call synchronised timing; outputs fingerprinted at return and after a device
        synchronisation.

    Known gaps
        Banks kept in C++ statics are static-cache-in-extension's finding.
    """

    id = "result-bank"
    hack_type = "cross-call-batching"
    severity = "high"
    confidence = "medium"
    summary = "forward queues work or results across calls"
    needs = ("flow",)
    probes = ("per-call-timing", "fresh-call-consistency")

    def check(self, ctx):
        f = ctx.facts
        if f.forward is None:
            return
        funcs = {fn.qualname for fn in f.forward_funcs}
        module_names = set(f.py.module_bindings)
        for c in f.py.calls:
            if c.func is None or c.func.qualname not in funcs:
                continue
            if c.method not in ("append", "extend", "appendleft", "put", "put_nowait", "insert"):
                continue
            fn = c.node.child_by_field_name("function")
            obj = fn.child_by_field_name("object") if fn is not None and fn.type == "attribute" else None
            if obj is None:
                continue
            o = text(obj)
            if not (o.startswith("self.") or o in module_names):
                continue
            if not any(x.kind == PARAM for a in c.args for x in f.flow.origins(c.func, a)) and \
                    not any(True for a in c.args):
                continue
            ctx.report(c.node, f"forward keeps work from earlier calls in {o}")
