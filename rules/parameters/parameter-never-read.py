from hackscan.rule import Rule
from hackscan.parse.trees import text, walk

PARAM_CTORS = ("torch.nn.Parameter", "torch.nn.parameter.Parameter", "torch.nn.Linear", "torch.nn.Conv",
               "torch.nn.BatchNorm", "torch.nn.LayerNorm", "torch.nn.GroupNorm", "torch.nn.InstanceNorm",
               "torch.nn.Embedding", "torch.nn.ConvTranspose", "torch.nn.Bilinear", "torch.nn.PReLU",
               "torch.nn.RMSNorm")


class ParameterNeverRead(Rule):
    """A learnable parameter (or a layer holding one) is created but never used in forward.

    What it flags
        `self.X = nn.Parameter(...)`, `nn.Linear(...)`, `nn.Conv2d(...)`, norm layers and the like
        assigned in the entry class's `__init__` whose attribute is never read by forward, by
        a helper forward calls, or by any other method that prepares weights.

    Why it is a hack
        Freshly initialised parameters are often identity-valued: biases start at zero,
        norm scales at one. A kernel that ignores them is correct at init and wrong after
        training or on any re-initialisation.

    Example
        self.bias = nn.Parameter(torch.zeros(n))   # never added in forward

    Legitimate look-alike
        Weights transformed once in `__init__` or a preparation method (`self.w_t =
        self.weight.t().contiguous()`) are read there; buffers used only for state dicts are
        not parameters.

    Dynamic confirmation
        Re-initialise the parameters of both models with the same non-trivial values
        (non-zero bias, non-unit scale): outputs must still match.

    Known gaps
        Parameters read through `self.parameters()` or `named_parameters()` loops, or by
        name strings, are treated as read.
    """

    id = "parameter-never-read"
    hack_type = "init-exploitation"
    severity = "medium"
    confidence = "medium"
    summary = "a parameter is created in __init__ but forward never reads it"
    needs = ("flow",)
    probes = ("parameter-reinit",)

    def check(self, ctx):
        f = ctx.facts
        k = f.entry_class
        if k is None or f.forward is None:
            return
        src = ctx.py.code
        if b"parameters()" in src or b"state_dict" in src or b"named_parameters" in src or b"getattr(self" in src:
            return
        init = k.methods.get("__init__")
        readers = set(id(fn.node) for fn in f.forward_funcs)
        for name, fn in k.methods.items():
            if name not in ("forward", "__init__"):
                readers.add(id(fn.node))
        read_attrs = set()
        for fn in f.py.funcs:
            if id(fn.node) in readers or (init is not None and fn is init):
                for n in walk(fn.node):
                    if n.type == "attribute" and text(n.child_by_field_name("object")) == "self":
                        parent = n.parent
                        is_store = parent is not None and parent.type == "assignment" and \
                            parent.child_by_field_name("left") == n
                        if not is_store and (fn is not init or _read_in_init(n)):
                            read_attrs.add(text(n.child_by_field_name("attribute")))
        for attr, vals in k.init_attrs.items():
            ctor = None
            for v in vals:
                if v.type == "call":
                    r, _ = f.py.resolve(v.child_by_field_name("function"))
                    if r and r.startswith(PARAM_CTORS):
                        ctor = r
            if ctor and attr not in read_attrs:
                node = vals[0].parent if vals[0].parent is not None else vals[0]
                ctx.report(node, f"self.{attr} ({ctor.split('.')[-1]}) is never read by forward")


def _read_in_init(n):
    """self.X read inside __init__ to derive something else (not just initialised in place
    by nn.init.*, which leaves it identity-valued or random)."""
    p = n.parent
    while p is not None and p.type not in ("assignment", "block"):
        if p.type == "call" and text(p.child_by_field_name("function")).split(".")[-2:-1] == ["init"]:
            return False
        p = p.parent
    if p is not None and p.type == "assignment":
        left = p.child_by_field_name("left")
        return not (left.start_byte <= n.start_byte < left.end_byte)
    return True
