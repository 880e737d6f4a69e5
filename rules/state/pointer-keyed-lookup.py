from hackscan.rule import Rule
from hackscan.parse.trees import text, walk
from hackscan.ruletools import no_return_skips_work, skipping_returns

KEYS = ("data_ptr", "_version", "untyped_storage", "storage", "_cdata", "unsafe_get_storage")


class PointerKeyedLookup(Rule):
    """forward compares or keys on a tensor's pointer, id or version.

    What it flags
        `x.data_ptr()`, `id(x)`, `x._version`, `x.untyped_storage().data_ptr()` used inside a
        condition, a comparison, a dict key or a stored attribute in forward or its helpers;
        in C++, `data_ptr()` compared with a stored pointer.

    Why it is a hack
        The identity of an input buffer says nothing about its values: a harness that
        refills the same tensor in place, or reuses one input set for every timing trial,
        gets the cached answer of another call.

    Example
        if x.data_ptr() == self._last_ptr:
            return self._last_out

    Certain (hacked without a run) where a return of forward hands back, without launching any
    work, a value looked up in a container under a key built from an input's pointer or id: the
    output of an earlier call replayed for whatever values the buffer holds now.

    Legitimate look-alike
        Passing `x.data_ptr()` as an argument to a kernel launch (raw pointers into ctypes or
        a custom launcher, also inside an argument list or tuple) is not a lookup. A key that guards only preparation (a TMA descriptor,
        a graph captured on those buffers, a weight packed once per version) while every return of
        forward launches or replays on the current call is reported at low severity.

    Dynamic confirmation
        Fresh-call consistency: same storage refilled with new values, then repeated calls.

    Known gaps
        Keys built from a content sample (`x[0, 0].item()`) are value-dependent-branch's
        finding.
        The hit-path test is syntactic: a launch of any custom kernel before a return that hands
        back stored state (a dummy launch on the hit path) counts as work on the current call, and
        a stored value passed through PyTorch compute before it is returned is not read as
        stored; fresh-call consistency still catches both when they return stale values.
    """

    id = "pointer-keyed-lookup"
    hack_type = "result-caching"
    severity = "high"
    confidence = "high"
    summary = "forward keys or branches on a tensor pointer, id or version"
    languages = ("python", "cuda")
    needs = ("flow", "cuda")
    probes = ("fresh-call-consistency",)

    def check(self, ctx):
        f = ctx.facts
        if f.forward is not None:
            funcs = {fn.qualname for fn in f.forward_funcs}
            # no return skips the kernels: the pointer keys a descriptor, a graph or a packed copy
            # that the launch on this call reads, not an answer
            no_skip = no_return_skips_work(f)
            low = {"severity": "low", "confidence": "low"} if no_skip else {}
            tail = "; no return of forward hands back stored state without launching on the current call" \
                if no_skip else ""
            replay = not no_skip and self._replays_by_pointer(f)
            if replay:
                tail = "; forward returns the output stored under this key without computing (output replay)"
            how = dict(low, certain=True) if replay else low
            for c in f.py.calls:
                if c.func is None or c.func.qualname not in funcs:
                    continue
                is_key = c.method in KEYS or (c.callee == "id" and c.args)
                if not is_key:
                    continue
                if self._passed_to_call(c.node):
                    continue
                ctx.report(c.node, f"{text(c.node)[:60]} identifies the input buffer, not its values{tail}", **how)
            for b in f.py.branches:
                if b.func is not None and b.func.qualname in funcs:
                    for n in walk(b.condition):
                        if n.type == "attribute" and text(n.child_by_field_name("attribute")) == "_version":
                            ctx.report(n, f"forward branches on a tensor's version counter{tail}", **low)
        for u in f.cuda:
            for node, cond, fn in u.facts.ifs:
                if fn is not None and "data_ptr" in text(cond) and ("==" in text(cond) or "!=" in text(cond)):
                    ctx.report(cond, "host code compares a tensor's data pointer with a stored one", unit=u)

    @classmethod
    def _replays_by_pointer(cls, f) -> bool:
        """A return of forward that skips the work hands back `store[key]` or `store.get(key)`
        (directly or through a local) where the key holds an input's pointer or id."""
        for r in skipping_returns(f) or ():
            value = r.named_children[0]
            for lookup in cls._lookups(f, value, r):
                if cls._pointer_in(f, lookup, r):
                    return True
        return False

    @staticmethod
    def _lookups(f, value, at):
        """The keys of the container lookups a returned value is (or a local bound to one is)."""
        nodes = [value]
        if value.type == "identifier":
            bound = f.py.lookup(text(value), at)
            if bound is not None:
                nodes.append(bound)
        keys = []
        for n in nodes:
            if n.type == "subscript":
                keys.extend(n.children_by_field_name("subscript"))
            elif n.type == "call":
                fn = n.child_by_field_name("function")
                args = n.child_by_field_name("arguments")
                if fn is not None and fn.type == "attribute" and text(fn.child_by_field_name("attribute")) == "get" \
                        and args is not None and args.named_children:
                    keys.append(args.named_children[0])
        return keys

    @classmethod
    def _pointer_in(cls, f, key, at, depth: int = 0) -> bool:
        for n in walk(key):
            if n.type == "call":
                fn = n.child_by_field_name("function")
                name = text(fn.child_by_field_name("attribute")) if fn is not None and fn.type == "attribute" \
                    else (text(fn) if fn is not None else "")
                if name in KEYS or name == "id":
                    return True
            elif n.type == "attribute" and text(n.child_by_field_name("attribute")) == "_version":
                return True
            elif n.type == "identifier" and depth < 2:
                bound = f.py.lookup(text(n), at)
                if bound is not None and bound is not key and cls._pointer_in(f, bound, at, depth + 1):
                    return True
        return False

    @staticmethod
    def _passed_to_call(node):
        p = node.parent
        # a pointer inside a list or tuple of launch arguments (`args=[x.data_ptr(), ...]`) is
        # passed to that call as much as a bare argument is
        while p is not None and p.type in ("list", "tuple", "keyword_argument", "parenthesized_expression"):
            if p.type in ("list", "tuple") and p.parent is not None and p.parent.type in (
                    "assignment", "subscript", "expression_statement"):
                return False       # a key or a stored tuple, not launch arguments
            p = p.parent
        if p is None:
            return False
        if p.type == "argument_list":
            gp = p.parent
            fn = gp.child_by_field_name("function") if gp is not None else None
            name = text(fn) if fn is not None else ""
            return name not in ("hash", "str", "tuple", "int") and not name.endswith((".get", "setdefault"))
        return False
