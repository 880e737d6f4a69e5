from hackscan.parse.trees import text, walk
from hackscan.rule import Rule

BATCH_NORMS = ("torch.nn.BatchNorm1d", "torch.nn.BatchNorm2d", "torch.nn.BatchNorm3d", "torch.nn.SyncBatchNorm")
FUNCTIONAL = ("torch.nn.functional.batch_norm", "torch.batch_norm")
STATS = ("running_mean", "running_var")


class RunningStatisticsInTraining(Rule):
    """The reference's batch norm runs in training mode and normalises by the batch's own
    statistics; the candidate hands the layer's running statistics to its computation instead.

    What it flags
        With a reference whose `Model` builds `nn.BatchNorm1d/2d/3d` (or calls
        `F.batch_norm(..., training=True)`) and never switches to evaluation mode: a call in the
        candidate that receives `<bn>.running_mean` or `<bn>.running_var` as an argument (a
        custom kernel, a fused extension function, `F.batch_norm(..., training=False)`), where
        the candidate never reads `.training`.

    Why it is a hack
        A benchmark builds the models and calls them without `.eval()`, so the reference
        normalises each batch by its own mean and variance. Fresh running statistics are 0 and 1:
        a kernel that normalises by them skips the normalisation, which is near identity on the
        benchmark's standard-normal inputs and wrong for any other scale or offset (a skipped
        stage that the check cannot see). Folding batch norm into a convolution for inference is
        a real optimisation, but of another function.

    Example
        reference: self.bn = nn.BatchNorm2d(c); forward: relu(self.bn(x))
        candidate: fused_bn_relu(x, self.bn.weight, self.bn.bias, self.bn.running_mean, self.bn.running_var)

    Legitimate look-alike
        `F.batch_norm(x, running_mean, running_var, w, b, training=True)` (it updates the running
        statistics and normalises by the batch's); a kernel that takes the running statistics to
        update them beside the batch statistics (refuted by the dynamic layer); a candidate that
        branches on `self.training`; a reference in evaluation mode.

    Dynamic confirmation
        Hidden draws of the generator scaled by 3 or 0.01: the batch statistics move and the
        running ones do not, so the outputs differ (hidden-distributions).

    Known gaps
        Running statistics copied into other names or tensors before the call, or read inside
        C++ through the module, are not followed.
    """

    id = "running-statistics-in-training"
    hack_type = "skipped-stage"
    severity = "medium"
    confidence = "medium"
    summary = "normalises by the running statistics where the reference, in training mode, uses the batch's"
    languages = ("python",)
    needs = ("reference", "python")
    probes = ("hidden-distributions",)

    def check(self, ctx):
        f = ctx.facts
        ref = f.reference
        if ref is None or f.py is None or f.entry_class is None:
            return
        if any(_to_eval(c) for c in ref.py.calls) or _reads_training(ref.py.tree.root_node):
            return   # the reference in evaluation mode normalises by the running statistics too
        layers = sorted({c.callee.rsplit(".", 1)[-1] for c in ref.py.calls
                         if c.resolved and (c.callee in BATCH_NORMS and not _untracked(c)
                                            or c.callee in FUNCTIONAL and _training(c))})
        if not layers or _reads_training(f.py.tree.root_node):
            return
        for c in f.py.calls:
            a = c.node.child_by_field_name("arguments")
            if a is None:
                continue
            stats = [n for n in walk(a) if n.type == "attribute" and text(n.child_by_field_name("attribute")) in STATS]
            if not stats:
                continue
            if c.resolved and c.callee in FUNCTIONAL and _training(c):
                continue
            ctx.report(c.node, f"{text(c.node.child_by_field_name('function'))[:60]} receives "
                       f"{', '.join(sorted({text(n)[:60] for n in stats}))}: the running statistics (0 and 1 when the "
                       f"layer is new), where the reference's {', '.join(layers)} runs in training mode and "
                       "normalises by the batch's own mean and variance",
                       evidence={"reference_layers": layers, "running_statistics": sorted({text(n) for n in stats})})
            return


def _to_eval(call) -> bool:
    """model.eval(), model.train(False)"""
    if call.method == "eval" and not call.args:
        return True
    return call.method == "train" and bool(call.args) and text(call.args[0]) in ("False", "0")


def _untracked(call) -> bool:
    kw = call.kwarg("track_running_stats")
    return kw is not None and text(kw) in ("False", "0")


def _reads_training(root) -> bool:
    """Code (never a comment or a string) that reads or sets a module's `.training` flag."""
    return any(n.type == "attribute" and text(n.child_by_field_name("attribute")) == "training" for n in walk(root))


def _training(call) -> bool:
    """Whether a batch_norm call normalises by batch statistics (training=True, or the sixth
    positional argument true); an unknown expression counts as training."""
    kw = call.kwarg("training")
    if kw is None:
        args = call.args
        kw = args[5] if len(args) > 5 else None
    return kw is not None and text(kw) not in ("False", "0")
