"""Building the model: construction after the seed, parameters perturbed as they are made,
high-precision copies, the reference's state handed to the candidate, re-initialised parameters."""
from __future__ import annotations

import hashlib
import os

from .common import _CAST


class _Perturb:
    """Parameters perturbed as they are created, identically in the reference and the candidate:
    the k-th tensor of a given shape to be perturbed gets the same values in both processes
    (from the auditor's seed, the shape and k), so weights that __init__ transposes, packs or
    folds into buffers are prepared from the perturbed values. A Parameter that a module of the
    audited code registers is perturbed right then; a torch.nn module's parameters and floating
    buffers (running statistics) once it is attached to a parent (its own reset_parameters has
    run by then) or at the end of construction. Every value is away from 0 and 1 with signs drawn
    evenly, so identity-valued initialisations (unit scales, zero biases) are perturbed too;
    weights are scaled by 1/sqrt(fan-in) so deep networks stay finite.

    Code that registers an empty Parameter and then initialises it itself (nn.init.kaiming_uniform_,
    .uniform_(), .zero_(), as a hand-written nn.Linear does) would overwrite the perturbation
    before preparing its buffers from it: while construction runs, every initialiser applied to a
    perturbed tensor puts the same perturbed values back, so the candidate's weights still equal
    the reference's."""

    INIT_FUNCS = ("uniform_", "normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_", "xavier_uniform_",
                  "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "trunc_normal_", "orthogonal_", "sparse_")
    TENSOR_INITS = ("uniform_", "normal_", "zero_", "fill_", "random_", "bernoulli_", "exponential_", "cauchy_",
                    "log_normal_", "geometric_")

    def __init__(self, torch, seed):
        self.torch, self.seed = torch, seed
        self.done: set = set()
        self.spots: dict = {}    # (data pointer, shape) -> (k, name) of each perturbed tensor
        self.counts: dict = {}
        self.shapes: list = []
        self.saved: list = []

    @staticmethod
    def _torch_owned(m) -> bool:
        return type(m).__module__.startswith("torch.")

    def apply(self, t, name: str = "") -> None:
        torch = self.torch
        if not isinstance(t, torch.Tensor) or id(t) in self.done or t.is_meta or not t.numel() \
                or not t.is_floating_point():
            return
        self.done.add(id(t))
        shape = tuple(int(d) for d in t.shape)
        k = self.counts.get(shape, 0)
        self.counts[shape] = k + 1
        self.spots[(t.data_ptr(), shape)] = (k, name)
        self._write(t, shape, k, name)
        self.shapes.append(list(shape))

    def redo(self, t) -> None:
        """An initialiser ran on a tensor perturbed before: its perturbed values again."""
        torch = self.torch
        if not isinstance(t, torch.Tensor) or t.is_meta or not t.numel():
            return
        shape = tuple(int(d) for d in t.shape)
        spot = self.spots.get((t.data_ptr(), shape))
        if spot is not None:
            self._write(t, shape, *spot)

    def _write(self, t, shape, k, name) -> None:
        torch = self.torch
        key = hashlib.sha256(f"{self.seed}:{shape}:{k}".encode()).digest()
        g = torch.Generator().manual_seed(int.from_bytes(key[:7], "little"))
        sign = torch.randint(0, 2, shape, generator=g).float() * 2 - 1
        mag = torch.rand(shape, generator=g) * 0.5
        if len(shape) >= 2:
            fan_in = 1
            for d in shape[1:]:
                fan_in *= d
            new = sign * (mag + 0.75) / max(1.0, fan_in) ** 0.5
        else:
            new = sign * (mag + 0.25)
        if "running_var" in name:
            new = new.abs() + 0.5
        with torch.no_grad():
            t.copy_(new.to(t.device).to(t.dtype))

    def attach(self, mod) -> None:
        """A module attached to a parent: its torch.nn submodules are fully built now."""
        torch = self.torch
        if not isinstance(mod, torch.nn.Module):
            return
        for m in mod.modules():
            if self._torch_owned(m):
                for n, p in m.named_parameters(recurse=False):
                    self.apply(p, n)
                for n, b in m.named_buffers(recurse=False):
                    self.apply(b, n)

    def finish(self, model) -> None:
        torch = self.torch
        if isinstance(model, torch.nn.Module):
            self.attach(model)
            for n, p in model.named_parameters():
                self.apply(p, n.rsplit(".", 1)[-1])

    def __enter__(self):
        nn = self.torch.nn
        M = nn.Module
        perturb = self
        orig_setattr, orig_add, orig_regp = M.__setattr__, M.add_module, M.register_parameter
        orig_regm = getattr(M, "register_module", None)

        def setattr_(mself, name, value):
            orig_setattr(mself, name, value)
            if isinstance(value, M):
                perturb.attach(value)

        def add_module(mself, name, module):
            orig_add(mself, name, module)
            perturb.attach(module)

        def register_parameter(mself, name, param):
            orig_regp(mself, name, param)
            if param is not None and not perturb._torch_owned(mself):
                perturb.apply(param, name)

        self.saved = [(M, "__setattr__", orig_setattr), (M, "add_module", orig_add),
                      (M, "register_parameter", orig_regp)]
        M.__setattr__, M.add_module, M.register_parameter = setattr_, add_module, register_parameter
        if orig_regm is not None:
            def register_module(mself, name, module):
                orig_regm(mself, name, module)
                perturb.attach(module)
            self.saved.append((M, "register_module", orig_regm))
            M.register_module = register_module

        def after(orig):
            def run(tensor, *a, **kw):
                out = orig(tensor, *a, **kw)
                perturb.redo(tensor)
                return out
            return run

        for owner, names in ((nn.init, self.INIT_FUNCS), (self.torch.Tensor, self.TENSOR_INITS)):
            for fname in names:
                orig = getattr(owner, fname, None)
                if orig is not None:
                    self.saved.append((owner, fname, orig))
                    setattr(owner, fname, after(orig))
        return self

    def __exit__(self, *exc):
        for owner, name, orig in reversed(self.saved):
            setattr(owner, name, orig)
        self.saved = []
        return False


def _construct(torch, entry, init, seed, device, eval_mode, perturb_seed=None, result=None):
    """The model as the harness builds it; with perturb_seed, its parameters perturbed as they
    are created (_Perturb), the shapes perturbed reported in result['perturbed_shapes']."""
    torch.manual_seed(seed)
    if perturb_seed is None:
        model = entry(*init)
    else:
        with _Perturb(torch, perturb_seed) as pert:
            model = entry(*init)
        pert.finish(model)
        if result is not None:
            result["perturbed_shapes"] = pert.shapes
    if hasattr(model, "to"):
        cast = _CAST["dtype"]
        model = model.to(device) if cast is None else model.to(device=device, dtype=getattr(torch, cast))
    if hasattr(model, "eval") and eval_mode:
        model.eval()
    return model


def _model_tensors(torch, model) -> list:
    """The model's parameters, buffers and plain tensor attributes."""
    if not isinstance(model, torch.nn.Module):
        return []
    out = list(model.parameters()) + list(model.buffers())
    for sub in model.modules():
        out += [v for v in vars(sub).values() if isinstance(v, torch.Tensor)]
    return out


def _low_precision(dtypes) -> bool:
    """Whether a problem's dtypes (names without "torch.") include bf16, fp16 or an fp8."""
    return any(d in ("bfloat16", "float16") or d.startswith("float8") for d in dtypes)


def _high_precision(torch, model, native_dtypes):
    """The model for the high-precision reference: parameters, buffers and tensor attributes in
    fp64, or where that fails (fp8 matmuls, kernels without fp64) in fp32 when the problem is in
    a lower precision; None where neither applies."""
    import copy

    def convert(m, dt):
        m = copy.deepcopy(m)
        if hasattr(m, "to"):
            m = m.to(dt)
        if isinstance(m, torch.nn.Module):
            for sub in m.modules():
                for k, v in list(vars(sub).items()):
                    if isinstance(v, torch.Tensor) and v.is_floating_point() and not isinstance(v, torch.nn.Parameter):
                        object.__setattr__(sub, k, v.to(dt))
        return m

    out = [("fp64", torch.float64)]
    if _low_precision(native_dtypes):
        out.append(("fp32up", torch.float32))
    models = []
    for name, dt in out:
        try:
            models.append((name, dt, convert(model, dt)))
        except Exception:  # noqa: BLE001
            continue
    return models


def _save_state(torch, model, path, result) -> None:
    """The reference's state_dict, for candidates that expect a harness to copy it in (up to
    4 GiB; larger models keep their own initialisation)."""
    if not isinstance(model, torch.nn.Module):
        return
    sd = model.state_dict()
    size = sum(v.numel() * v.element_size() for v in sd.values() if isinstance(v, torch.Tensor))
    if not sd or size > (4 << 30):
        return
    torch.save({k: v.detach().cpu() for k, v in sd.items() if isinstance(v, torch.Tensor)}, path)
    result["state_saved"] = len(sd)


def _load_state(torch, model, path) -> int:
    """Copy tensors by name into the model's state_dict where name and shape match (any dtype:
    quantised weights are integer buffers); the number copied."""
    if not os.path.exists(path) or not isinstance(model, torch.nn.Module):
        return 0
    values = torch.load(path, weights_only=True)
    sd = model.state_dict()
    n = 0
    with torch.no_grad():
        for name, v in values.items():
            t = sd.get(name)
            if isinstance(t, torch.Tensor) and tuple(t.shape) == tuple(v.shape) and \
                    (t.dtype == v.dtype or (t.is_floating_point() and v.is_floating_point())):
                t.copy_(v.to(t.device, t.dtype))
                n += 1
    return n


def _load_params(torch, model, path, result):
    """Load re-initialised parameters by name (and shape); report how many matched."""
    values = torch.load(path, weights_only=True)
    sd = model.state_dict() if hasattr(model, "state_dict") else {}
    loaded = 0
    with torch.no_grad():
        for name, v in values.items():
            if name in sd and tuple(sd[name].shape) == tuple(v.shape) and sd[name].is_floating_point():
                sd[name].copy_(v.to(sd[name].device, sd[name].dtype))
                loaded += 1
    result["params_loaded"] = loaded
    result["params_offered"] = len(values)


def _reinit(torch, model, seed, path, result):
    """Reference only: give every floating parameter and buffer non-trivial values (biases away
    from 0, scales away from 1) from the auditor's seed, save them for the candidate. Signs are
    drawn evenly: mostly positive weights make every activation of non-negative inputs positive,
    and a ReLU or clamp after them would then look irrelevant (ghost replay would call a real
    kernel decoration)."""
    g = torch.Generator().manual_seed(seed)
    values = {}
    sd = model.state_dict() if hasattr(model, "state_dict") else {}
    with torch.no_grad():
        for name, p in sd.items():
            if not p.is_floating_point() or p.numel() == 0:
                continue
            sign = torch.randint(0, 2, p.shape, generator=g) * 2 - 1
            new = (sign * (torch.rand(p.shape, generator=g) * 0.5 + 0.25)).to(p.dtype)
            if "running_var" in name:
                new = new.abs() + 0.5
            p.copy_(new.to(p.device))
            values[name] = new
    torch.save(values, path)
    result["params_reinitialised"] = len(values)
