import re

from hackscan.rule import Rule
from hackscan.parse.trees import text, walk

# what reading an input's metadata looks like: its values stay unread
META_ATTRS = frozenset("shape device dtype ndim is_cuda layout requires_grad is_contiguous".split())
META_METHODS = frozenset("size dim numel stride element_size get_device is_contiguous nelement".split())
META_CALLS = frozenset("len isinstance type id".split())


class InputNeverRead(Rule):
    """An input of forward whose values the candidate never reads, where the reference's do.

    What it flags
        A parameter of the entry class's forward that forward uses only for its metadata
        (`x.shape`, `x.device`, `x.dtype`, `x.size()`, `len(x)`, `x is None`) or not at all,
        while the reference's forward reads the same input's values.

    Why it is a hack
        A result that does not depend on an input the function depends on is a closed form
        fitted to the benchmark's input distribution (the mean of a loss over uniform inputs, a
        constant, a formula of the other input alone): right on the test draws, wrong on others.

    Example
        def forward(self, predictions, targets):
            return predictions.mean() * 0 + 1.0 / 6.0    # targets never read

    Legitimate look-alike
        An input read anywhere in forward (handed to a kernel, a helper, a tuple of launch
        arguments, copied into a static buffer) counts as read; an input the reference itself
        ignores is not reported; forward taking `*args` is not analysed.

    Dynamic confirmation
        Sensitivity: the output does not change when only that input changes.

    Known gaps
        An input read only through `locals()`, `vars()` or frame inspection is reported.
    """

    id = "input-never-read"
    hack_type = "analytical-shortcut"
    severity = "high"
    confidence = "medium"
    summary = "forward never reads the values of an input the reference reads"
    languages = ("python",)
    needs = ("python",)
    probes = ("sensitivity", "hidden-distributions")

    def check(self, ctx):
        f = ctx.facts
        fwd = f.forward
        if fwd is None or _has_varargs(fwd.node):
            return
        ref_fwd = _reference_forward(f)
        ref_params = [p for p in ref_fwd.params if p != "self"] if ref_fwd is not None else None
        if ref_fwd is not None and _has_varargs(ref_fwd.node):
            return
        body = fwd.node.child_by_field_name("body")
        body_text = f.py.code_of(body) if body is not None else ""   # comments are the author's, not reads
        # most inputs are plainly read: a text search settles them without a walk of the tree
        unsure = [(i, p) for i, p in enumerate(p for p in fwd.params if p != "self")
                  if not _plainly_read(body_text, p)]
        if not unsure:
            return
        uses = _uses_map(fwd.node)
        ref_uses = _uses_map(ref_fwd.node) if ref_fwd is not None else None
        for i, p in unsure:
            if _reads_values(uses.get(p, [])):
                continue
            if ref_params is not None:
                if i >= len(ref_params) or not _reads_values(ref_uses.get(ref_params[i], [])):
                    continue   # the reference ignores it too
            ctx.report(_param_node(fwd.node, p) or fwd.node,
                       f"forward never reads the values of its input `{p}`" +
                       (" (only its shape, device or dtype)" if uses.get(p) else ""),
                       evidence={"input": p})


def _has_varargs(fn_node) -> bool:
    params = fn_node.child_by_field_name("parameters")
    return params is not None and any(c.type in ("list_splat_pattern", "dictionary_splat_pattern")
                                      for c in params.named_children)


def _param_node(fn_node, name):
    params = fn_node.child_by_field_name("parameters")
    if params is None:
        return None
    for c in params.named_children:
        ident = c if c.type == "identifier" else next((k for k in c.named_children if k.type == "identifier"), None)
        if ident is not None and text(ident) == name:
            return c
    return None


_META_AFTER = "|".join(sorted(META_ATTRS | META_METHODS))


def _plainly_read(body_text: str, name: str) -> bool:
    """A use of `name` that is not an attribute of something else and is followed by neither a
    metadata attribute nor `is None`: certainly a read of its values."""
    pat = rf"(?<![\w.]){re.escape(name)}\b(?!\s*\.\s*(?:{_META_AFTER})\b)(?!\s+is\b)(?!\s*=[^=])"
    for m in re.finditer(pat, body_text):
        before = body_text[max(0, m.start() - 12):m.start()]
        if re.search(r"\b(?:len|isinstance|type|id)\(\s*$", before):
            continue
        return True
    return False


def _uses_map(fn_node) -> dict:
    """Every identifier of a function's body by name (one walk per function)."""
    body = fn_node.child_by_field_name("body")
    found: dict = {}
    for n in (walk(body) if body is not None else ()):
        if n.type == "identifier":
            found.setdefault(text(n), []).append(n)
    return found


def _reads_values(uses: list) -> bool:
    """Whether these uses of a name read anything but its metadata."""
    for n in uses:
        parent = n.parent
        if parent is None:
            return True
        if parent.type == "attribute" and parent.child_by_field_name("object") == n:
            attr = text(parent.child_by_field_name("attribute"))
            if attr in META_ATTRS:
                continue
            call = parent.parent
            if attr in META_METHODS and call is not None and call.type == "call":
                continue
            return True
        if parent.type == "argument_list" and parent.parent is not None and parent.parent.type == "call":
            callee = text(parent.parent.child_by_field_name("function"))
            if callee in META_CALLS:
                continue
            return True
        if parent.type == "comparison_operator" and any(text(k) in ("is", "is not") for k in parent.children) and \
                any(k.type == "none" for k in parent.named_children):
            continue
        if parent.type in ("keyword_argument",) and parent.child_by_field_name("name") == n:
            continue
        return True
    return False


def _reference_forward(f):
    ref = f.reference
    if ref is None or ref.py is None:
        return None
    k = ref.py.classes.get("Model")
    if k is None:
        return None
    return k.methods.get("forward")
