from hackscan.facts.flow import PARAM, CUSTOM, HEAVY, COMPUTE, SELF_ATTR, VIEWS
from hackscan.rule import Rule
from hackscan.parse.trees import text, walk
from hackscan.ruletools import POINTER_ATTRS, inside, no_return_skips_work

# calls that make a fresh buffer or a handle: what they return holds no result of a call
FRESH = ("torch.empty", "torch.zeros", "torch.ones", "torch.full", "torch.empty_like", "torch.zeros_like",
         "torch.ones_like", "torch.full_like", "torch.empty_strided", "torch.utils.cpp_extension.load_inline",
         "torch.utils.cpp_extension.load")
MUTATORS = ("append", "extend", "insert", "update", "setdefault", "__setitem__", "copy_", "fill_", "zero_",
            "add_", "mul_", "index_copy_", "scatter_", "put_")
FRESH_METHODS = ("new_empty", "new_zeros", "new_ones", "new_full", "from_tensor")


class StateWrittenInForward(Rule):
    """forward stores a value derived from its inputs on the module or in a global.

    What it flags
        Assignments in forward (or its helpers) to `self.X`, `self.X[key]`, a module-level
        dict or list, or a `global`, where the stored value derives from the inputs (or the
        key from their pointer, id, version or shape). Severity is high when forward also
        reads that state back in a condition.

    Why it is a hack
        Results cached across calls make repeated timing calls free and survive the
        correctness check when the harness reuses one input set (KernelBench times 100
        trials of one input).

    Example
        key = x.data_ptr()
        if key in self._cache:
            return self._cache[key]
        self._cache[key] = out = ext.softmax(x)

    Legitimate look-alike
        Weights prepared once from parameters (`self.w_t = self.weight.t().contiguous()`),
        whose value does not derive from the inputs. A workspace or handle made fresh and kept
        (`torch.empty(...)`, `torch.zeros_like(x)`, `load_inline(...)`, a TMA descriptor), where
        forward launches its kernels whatever that state holds, is not reported: the hack launches
        on the miss path only and returns the stored value on the hit path. Where every return of
        forward runs a launch or a graph replay on the current call (a weight or input packed once
        per version, TMA descriptors or a graph keyed on pointers), the store is reported at low
        severity. A launcher kept on the module (`functools.partial(kernel[grid], x, out)`) that
        binds the call's input and is rebound only under a condition is reported at medium
        severity whatever the returns do: calls that skip the rebinding launch on the first
        input's storage (a captured graph whose copy-in reads the first input is the same).

    Dynamic confirmation
        Fresh values per call, the same storage refilled in place, repeated calls, a last call
        in new storage while the old lives on: every output rechecked.

    Known gaps
        State kept inside the extension (C++ statics) is static-cache-in-extension's finding.
        The hit-path test is syntactic: a launch of any custom kernel before a return that hands
        back stored state (a dummy launch on the hit path) counts as work on the current call, and
        a stored value passed through PyTorch compute before it is returned is not read as
        stored; fresh-call consistency still catches both when they return stale values.
    """

    id = "state-written-in-forward"
    hack_type = "result-caching"
    severity = "medium"
    confidence = "medium"
    summary = "forward stores input-derived values on the module or in globals"
    needs = ("flow",)
    probes = ("fresh-call-consistency",)

    def check(self, ctx):
        f = ctx.facts
        if f.forward is None:
            return
        funcs = {fn.qualname: fn for fn in f.forward_funcs}
        module_names = set(f.py.module_bindings)
        globals_declared = {n for n, _, fn in f.py.globals_declared if fn is not None and fn.qualname in funcs}
        reads_state = set()
        for b in f.py.branches:
            if b.func is not None and b.func.qualname in funcs:
                for n in walk(b.condition):
                    if n.type == "attribute" and text(n.child_by_field_name("object")) == "self":
                        reads_state.add(text(n.child_by_field_name("attribute")))
                    if n.type == "identifier" and text(n) in module_names:
                        reads_state.add(text(n))
        # module attributes forward itself writes (assigned, appended to, copied into): state that
        # may hold the inputs, unlike the parameters and buffers construction made
        written_here = set()
        for a in f.py.assigns:
            if a.func is not None and a.func.qualname in funcs:
                written_here |= {n for t in a.targets for n in [self._state_name(t, set(), set())] if n}
        for c in f.py.calls:
            fnode = c.node.child_by_field_name("function")
            if c.func is not None and c.func.qualname in funcs and fnode is not None and fnode.type == "attribute" \
                    and c.method in MUTATORS:
                n = self._state_name(fnode.child_by_field_name("object"), set(), set())
                if n:
                    written_here.add(n)
        no_skip = no_return_skips_work(f)
        for a in f.py.assigns:
            if a.func is None or a.func.qualname not in funcs or a.value is None:
                continue
            for t in a.targets:
                name = self._state_name(t, module_names, globals_declared)
                if name is None:
                    continue
                origins = f.flow.origins(a.func, a.value)
                key_ptr = t.type == "subscript" and any(
                    text(n).rsplit(".", 1)[-1] in POINTER_ATTRS | {"id", "shape"} for n in walk(t) if n.type in ("attribute", "identifier"))
                kinds = {o.kind for o in origins}
                # input-derived: a forward input flows into it, or compute that reads no module
                # state; compute over the module's own parameters and buffers alone (a weight
                # repacked, folded or transposed once) is a preparation, not a result
                live = any(o.kind == SELF_ATTR and o.name in written_here for o in origins)
                # a helper's parameter is an input only where its callers pass one a tensor's
                # values reach (a size from x.shape, a device or a dtype are not)
                from_inputs = PARAM in kinds and (a.func is f.forward or bool(f.flow.input_params(a.func, a.value, f.forward)))
                derived = from_inputs or live or (bool(kinds & {CUSTOM, HEAVY, COMPUTE}) and SELF_ATTR not in kinds)
                if a.augmented and not key_ptr:
                    continue  # counters are call-counter's finding
                if not (derived or key_ptr):
                    continue
                hot = name in reads_state
                if not key_ptr and _fresh(f.py, a.value) and self._launches_whatever(f, a.func, name, funcs):
                    continue   # a workspace or handle: kernels launch on every call whatever it holds
                bound = self._input_bound_launcher(f, a)
                if bound:
                    # a launcher kept across calls with this call's input bound into it: a later call
                    # that does not rebind it launches on the first input's storage
                    ctx.report(a.node, f"forward keeps a launcher bound to its input {bound} in {text(t)[:60]} and "
                               "rebinds it only under a condition: later calls replay it on the first input's "
                               "storage", severity="medium", confidence="medium")
                    continue
                if no_skip:
                    # no return skips the kernels: the state is a key, a packed copy or a captured
                    # graph's buffer, not an answer handed back without work
                    ctx.report(a.node, f"forward stores an input-derived value in {text(t)[:60]}; no return of forward "
                               "hands back stored state without launching on the current call", severity="low",
                               confidence="low")
                    continue
                ctx.report(a.node, f"forward stores an input-derived value in {text(t)[:60]}" +
                           (" and branches on it" if hot else ""), severity="high" if hot else None,
                           confidence="high" if hot or key_ptr else None)
        for c in f.py.calls:
            if c.func is None or c.func.qualname not in funcs:
                continue
            fn = c.node.child_by_field_name("function")
            if fn is None or fn.type != "attribute" or c.method not in ("update", "setdefault", "__setitem__"):
                continue
            obj = fn.child_by_field_name("object")
            name = self._state_name(obj, module_names, globals_declared)
            if name is not None and any(o.kind in (PARAM, CUSTOM) for o in f.flow.origins(c.func, c.node)):
                if no_skip:
                    ctx.report(c.node, f"forward stores input-derived values in {text(obj)[:60]}; no return of "
                               "forward hands back stored state without launching on the current call", severity="low",
                               confidence="low")
                    continue
                ctx.report(c.node, f"forward stores input-derived values in {text(obj)[:60]}",
                           severity="high" if name in reads_state else None)

    @staticmethod
    def _input_bound_launcher(f, a) -> str | None:
        """The input a stored launcher binds (`functools.partial(kernel[grid], x, out)` assigned
        under a condition, so that calls where the condition fails replay it), or None."""
        pos = f.flow.partial_args(a.value)
        if not pos or len(pos) < 2 or not any(d[0] in ("launch", "extfn") for d in f.flow.denotes(pos[0], a.func)):
            return None
        if not any(b.func is a.func and inside(a.node, b.node) for b in f.py.branches):
            return None    # bound afresh on every call
        fn = a.func
        if fn is not f.forward:
            return None

        def is_input(node, depth=0) -> bool:
            """The input tensor itself or a view of it (`x`, `x.contiguous()`, `x.view(-1)`), not a
            size or a value computed from it."""
            if depth > 3 or node is None:
                return False
            if node.type == "identifier":
                if text(node) in fn.params and text(node) != "self":
                    return True
                return any(is_input(v, depth + 1) for v, owner in f.flow.bindings(text(node), fn) if owner is fn)
            if node.type == "call":
                callee = node.child_by_field_name("function")
                if callee is not None and callee.type == "attribute" and \
                        text(callee.child_by_field_name("attribute")) in VIEWS:
                    return is_input(callee.child_by_field_name("object"), depth + 1)
            return False

        for x in pos[1:]:
            if is_input(x):
                return text(x)
        return None

    @staticmethod
    def _launches_whatever(f, fn, name: str, funcs: dict) -> bool:
        """Whether a custom kernel launches on every call whatever `name` holds: in `fn` (the
        function storing the state) or any function forward reaches, outside every branch whose
        condition reads `name`, from a function that is itself reached outside such branches
        (a workspace made in an `_ensure()` helper and used by the launching method)."""
        scope = list(funcs.values())
        if fn not in scope:
            scope.append(fn)
        guards = []
        for b in f.py.branches:
            if b.func in scope and any(n.type in ("attribute", "identifier") and text(n).split(".")[-1] == name
                                       for n in walk(b.condition)):
                guards.append(b.node)

        def guarded(node):
            return any(inside(node, g) for g in guards)

        def reached_unguarded(g, depth=0):
            """g is forward itself (or the storing function), or called from a function in scope
            outside the guards, itself so reached."""
            if g is f.forward or g is fn:
                return True
            if depth > 4:
                return False
            return any(f.flow.local_target(c) is g and not guarded(c.node) and reached_unguarded(h, depth + 1)
                       for h in scope for c in f.py.calls_in(h))

        for g in scope:
            launches = [c for c in f.py.calls_in(g)
                        if f.flow.kind(c) == CUSTOM or (f.flow.kind(c) == "local" and f.flow.launches_custom(
                            f.flow.local_target(c)))]
            if any(not guarded(c.node) for c in launches) and reached_unguarded(g):
                return True
        return False

    @staticmethod
    def _state_name(t, module_names, globals_declared):
        base = t
        while base is not None and base.type == "subscript":
            base = base.child_by_field_name("value")
        if base is None:
            return None
        if base.type == "attribute" and text(base.child_by_field_name("object")) == "self":
            return text(base.child_by_field_name("attribute"))
        if base.type == "identifier" and (text(base) in globals_declared or
                                          (t.type == "subscript" and text(base) in module_names)):
            return text(base)
        return None


def _fresh(py, value) -> bool:
    """A value made fresh: an allocation, a compiled handle, a descriptor (or a tuple of them, or
    a choice between them)."""
    if value is None:
        return False
    if value.type in ("tuple", "list", "parenthesized_expression"):
        kids = [k for k in value.named_children if k.type != "comment"]
        return bool(kids) and all(_fresh(py, k) for k in kids)
    if value.type == "conditional_expression":
        kids = value.named_children
        return len(kids) == 3 and _fresh(py, kids[0]) and (_fresh(py, kids[2]) or kids[2].type == "none")
    if value.type != "call":
        return False
    fn = value.child_by_field_name("function")
    if fn is None:
        return False
    res, _ = py.resolve(fn)
    return res in FRESH or fn.type == "attribute" and text(fn.child_by_field_name("attribute")) in FRESH_METHODS
