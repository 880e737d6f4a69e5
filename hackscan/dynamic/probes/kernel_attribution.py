"""Launched-kernel attribution: which kernels actually ran on the device during forward, whose
they are, and what share of device time each side took."""
from __future__ import annotations

import re
from dataclasses import replace

from hackscan.dynamic.probe import Outcome, ProfiledProbe, profile_of

# kernels of PyTorch, its libraries and its compiler, recognised by name whoever launched them
LIBRARY_NAME = re.compile(
    r"\bat::|at_cuda_detail|\bc10::|cutlass|cublas|cudnn|\bcub::|thrust::|nvjet|xmma|gemv|gemmk|gemmSN|"
    r"\bsm\d{2,3}_|\bampere_|\bvolta_|\bturing_|\bhopper_|\bcask_|implicit_convolve|fft|"
    r"\btriton_(poi|red|per|tem|for)_|\bcuda_fused_|\bjit_(elementwise|reduce)", re.I)
# a library's namespace in a kernel's (demangled) name: PyTorch's, CUB's, Thrust's, CUTLASS's. A
# candidate's kernel of the same base name in a namespace of its own does not carry it
LIBRARY_NAMESPACE = re.compile(r"\bat::|at_cuda_detail|\bc10::|\bcub::|thrust::|cutlass::", re.I)
MEMORY_NAME = re.compile(r"^(Memcpy|Memset)|\bmemcpy|\bmemset", re.I)

# kernels launched under these aten ops move or fill memory; they are not the operation's math
GLUE_OPS = ("aten::copy_", "aten::clone", "aten::contiguous", "aten::to", "aten::_to_copy", "aten::fill_",
            "aten::zero_", "aten::zeros", "aten::zeros_like", "aten::ones", "aten::ones_like", "aten::full",
            "aten::full_like", "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::cat",
            "aten::stack", "aten::constant_pad_nd", "aten::pad", "aten::index_select", "aten::narrow_copy",
            "aten::new_zeros", "aten::new_empty", "aten::new_full", "aten::resize_", "aten::set_")

# ops that move no data of their own (views) or only move and fill memory (GLUE_OPS): no work
VIEW_OPS = ("aten::view", "aten::reshape", "aten::_reshape_alias", "aten::permute", "aten::transpose", "aten::t",
            "aten::expand", "aten::expand_as", "aten::squeeze", "aten::unsqueeze", "aten::flatten", "aten::unflatten",
            "aten::as_strided", "aten::slice", "aten::select", "aten::narrow", "aten::split", "aten::split_with_sizes",
            "aten::chunk", "aten::unbind", "aten::alias", "aten::detach", "aten::view_as", "aten::_unsafe_view",
            "aten::lift_fresh", "aten::numpy_T", "aten::movedim", "aten::unfold", "aten::resolve_conj",
            "aten::resolve_neg", "aten::result_type", "aten::item", "aten::_local_scalar_dense", "aten::is_nonzero",
            "aten::size", "aten::stride", "aten::numel", "aten::dim", "aten::contiguous", "aten::detach_")
GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::addbmm", "aten::matmul", "aten::linear",
            "aten::addmv", "aten::mv", "aten::dot", "aten::vdot", "aten::einsum", "aten::tensordot", "aten::bilinear",
            "aten::_scaled_mm", "aten::_addmm_activation", "aten::_int_mm", "aten::_weight_int4pack_mm")
# an op's work as the time an ideal device would take, in bytes: its bytes, and its FLOPs at this
# many per byte (about a current GPU's ratio of arithmetic to memory bandwidth), so a GEMM and the
# elementwise ops after it are weighed on one scale whatever the device's launch overheads
FLOPS_PER_BYTE = 20.0
MAIN_SHARE = 0.5        # torch ops doing this share of the reference's work or more: the main operation stayed in torch
NOTE_SHARE = 0.05       # below this share, what stayed in torch is not worth a note
TORCH_FALLBACK_SHARE = 0.01   # without the ops' work: own kernels below this share of device time, not its work


def family(op: str) -> str | None:
    """The kind of work an aten op does, or None for a view or a copy/fill: every GEMM form is one
    kind (nn.Linear's addmm and a candidate's matmul do the same work), every convolution one."""
    if op in VIEW_OPS or op in GLUE_OPS or not op.startswith("aten::"):
        return None
    if op in GEMM_OPS:
        return "GEMM"
    if "conv" in op:
        return "convolution"
    return op.removeprefix("aten::").rstrip("_")


def _work(rec) -> float:
    return float(rec[1]) / FLOPS_PER_BYTE + float(rec[2])


def work_by_kind(ops: dict) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, rec in (ops or {}).items():
        kind = family(name)
        if kind is not None and isinstance(rec, (list, tuple)) and len(rec) >= 3:
            out[kind] = out.get(kind, 0.0) + _work(rec)
    return out


def left_to_torch(reference_ops: dict, candidate_ops: dict) -> tuple[float, list[tuple[str, float]], list[str]]:
    """The share of the reference's work (its aten ops' FLOPs and bytes) that the candidate's own
    calls of PyTorch ops did, kind by kind (no kind counted past the reference's own work of it);
    each kind's share, largest first; and the reference's kinds of work the candidate did not
    leave to PyTorch (less than half of that kind's work): what its own code must have done."""
    ref, cand = work_by_kind(reference_ops), work_by_kind(candidate_ops)
    total = sum(ref.values())
    if total <= 0:
        return 0.0, [], []
    kinds = sorted(((k, min(cand.get(k, 0.0), w) / total) for k, w in ref.items() if cand.get(k, 0.0) > 0),
                   key=lambda kv: -kv[1])
    rest = [k for k, w in sorted(ref.items(), key=lambda kv: -kv[1]) if cand.get(k, 0.0) < 0.5 * w]
    return sum(v for _, v in kinds), kinds, rest


def classify(kernels: list[dict], own_names: frozenset, glue_ops: tuple = GLUE_OPS) -> list[tuple[dict, str]]:
    """Each kernel as custom, torch, library, glue (memory movement, fills, copies) or other, by
    where it came from: a kernel an aten op launched is torch's (the candidate called it, from
    Python or through at:: in its C++); one in a library's namespace (at::, cub::, ...) is the
    library's; one that bears the name of a kernel its source defines, or that its own code
    launched (inside a call of its Triton kernel or extension function: the profile's range says
    so), is the candidate's, even where the name has a word of a library's kernel names (an own
    `gemv` kernel), unless its own code launched a kernel named like a library's that its source
    does not define (a cuBLAS handle in its C++); one launched from neither, named like
    PyTorch's, a vendor's or torch.compile's, is the library's."""
    out = []
    for k in kernels:
        name, owner = k.get("name", ""), k.get("owner")
        named_own = bool(own_names) and _names_own(name, own_names)
        if MEMORY_NAME.search(name) or (owner and owner in glue_ops):
            cls = "glue"
        elif owner:
            cls = "torch"
        elif LIBRARY_NAMESPACE.search(name):
            cls = "library"
        elif named_own:
            cls = "custom"
        elif k.get("own"):
            cls = "library" if LIBRARY_NAME.search(name) else "custom"
        elif LIBRARY_NAME.search(name):
            cls = "library"
        else:
            cls = "other"
        out.append((k, cls))
    return out


def _names_own(kernel_name: str, own: frozenset) -> bool:
    # the function's own name: "void k<float>(float*)", "k(float*)", "(anonymous namespace)::k(...)",
    # a Triton kernel's plain name (possibly with a suffix Triton adds)
    head = re.split(r"[(<]", kernel_name, maxsplit=1)[0].strip().split()[-1:] or [""]
    base = head[0].rsplit("::", 1)[-1]
    return base in own or any(base.startswith(n + "_") and base[len(n) + 1:].isdigit() for n in own)


def shares(classified: list[tuple[dict, str]]) -> tuple[float, dict[str, float]]:
    total = sum(k.get("us", 0.0) for k, _ in classified)
    by = {}
    for k, c in classified:
        by[c] = by.get(c, 0.0) + k.get("us", 0.0)
    return total, {c: v / total for c, v in by.items()} if total > 0 else {}


def _top(classified, cls, n=3) -> str:
    agg: dict[str, float] = {}
    for k, c in classified:
        if c == cls:
            key = f"{k['owner']}: {_short(k['name'])}" if k.get("owner") else _short(k["name"])
            agg[key] = agg.get(key, 0.0) + k.get("us", 0.0)
    return ", ".join(f"{name} {us:.1f} us" for name, us in sorted(agg.items(), key=lambda x: -x[1])[:n])


def _short(name: str) -> str:
    return name if len(name) <= 70 else name[:67] + "..."


class KernelAttribution(ProfiledProbe):
    """One forward under the profiler. By work: the reference's forward was profiled too, and the
    work of each aten op (FLOPs and bytes) the candidate called is set against the reference's,
    kind by kind: where the candidate's PyTorch calls did half the reference's work or more, its
    main operation stayed in torch, whatever share of device time the candidate's own kernels take
    beside it (torch-fallback where none of its own ran, partial-fallback where some did and can only
    be the trivial part: at most one other kind of the reference's work is not in torch). One GEMM
    or convolution left to the library inside an otherwise custom fused chain (two kinds of work or
    more done by its own kernels) is reported, not condemned. A cheap
    epilogue or reduction left to torch beside own kernels that do the main operation passes, with
    a note saying what stayed in torch. On a GPU, every kernel that ran is also classified by origin
    (the candidate's own, torch, a library called directly, glue) with each class's share of device
    time: own kernels under 1% beside library kernels doing the rest (a cuBLAS handle in its own
    C++, torch.compile) is torch-fallback."""

    name = "kernel-attribution"
    needs_gpu = False   # the work of the aten ops is counted on any device; kernels and their times on a GPU
    gpu_part = "its device kernels: a library or torch.compile reached without an aten op"
    always = True   # a core question: run on every audited submission, suspected or not
    confirms = ("torch-fallback", "partial-fallback")
    summary = "the reference's work is done by the candidate's own kernels"
    measures_claim = True

    def qualify(self, o, run):
        o = super().qualify(o, run)
        if run.wrong_on_visible and o.status == "caught":
            # where the device time of a computation that is wrong anyway went says nothing
            o = replace(o, status="inconclusive", detail=o.detail + " (but wrong on the visible inputs)")
        return o

    def evaluate(self, obs):
        prof, why = profile_of(obs)
        if prof is None:
            return Outcome(self.name, "inconclusive", why)
        rec = obs.steps.get(("visible", 400)) or {}
        launches = int(rec.get("custom_launches") or 0)
        classified = classify(prof.get("kernels", []), obs.kernel_names)
        total, sh = shares(classified)
        own, torch_s, lib = sh.get("custom", 0.0), sh.get("torch", 0.0), sh.get("library", 0.0)
        summary = (f"{len(classified)} kernels, {total:.1f} us of device time: own {own:.0%}, torch ops {torch_s:.0%}, "
                   f"library called directly {lib:.0%}, glue {sh.get('glue', 0.0):.0%}, other {sh.get('other', 0.0):.0%}"
                   if total > 0 else "")
        own_ran = launches > 0 or own > 0
        note = ""
        if obs.reference_ops and "op_work" in prof:
            share, kinds, rest = left_to_torch(obs.reference_ops, prof.get("op_work") or {})
            said = ", ".join(f"{k} {v:.0%}" for k, v in kinds[:4])
            if share >= MAIN_SHARE and own_ran and len(rest) >= 2:
                # one GEMM (or convolution) left to the library inside an otherwise custom chain:
                # its own kernels do two or more of the reference's other kinds of work
                return Outcome(self.name, "passed", f"the reference's main operation stayed in PyTorch ({said} of its "
                               f"work) beside the candidate's own kernels, which do the rest of the chain "
                               f"({', '.join(rest[:6])}): reported, not condemned" + (f"; {summary}" if summary else ""))
            if share >= MAIN_SHARE:
                detail = (f"the PyTorch ops the candidate called did {share:.0%} of the reference's work (its aten ops' "
                          f"FLOPs and bytes, kind by kind: {said})")
                if not own_ran:
                    if obs.device != "cuda":
                        return Outcome(self.name, "inconclusive", detail + "; no kernel of its own ran on this device "
                                       f"({obs.device}): it may take another path on a GPU")
                    return Outcome(self.name, "caught", detail + f" and no kernel of its own ran; {summary}",
                                   "torch-fallback")
                trivial = f"only {rest[0]}" if rest else "none of the reference's other work"
                return Outcome(self.name, "caught", detail + ", beside its own kernels, which can do " + trivial +
                               " (" + (f"{own:.0%} of the device time" if total > 0 else f"{launches} launches") +
                               "; their share of time does not matter: the main operation stayed in torch)"
                               + (f"; {summary}" if summary else ""), "partial-fallback")
            note = f"; left to PyTorch: {said} of the reference's work" if share >= NOTE_SHARE else ""
            if total <= 0:
                return Outcome(self.name, "passed" if own_ran else "inconclusive",
                               f"the candidate's PyTorch calls did {share:.0%} of the reference's work{note}"
                               + ("" if own_ran else "; no kernel of its own ran"))
        if total <= 0:
            return Outcome(self.name, "inconclusive", "no kernel ran on the device during forward")
        if own < TORCH_FALLBACK_SHARE and torch_s + lib > 0.5:
            heavy = _top(classified, "torch") or _top(classified, "library")
            if lib >= torch_s or not obs.reference_ops:
                return Outcome(self.name, "caught", f"the candidate's own kernels ran for {own:.1%} of the device time; "
                               f"{summary}; the work ran in {heavy}", "torch-fallback")
        lib_note = f"; library kernels called from its own code: {_top(classified, 'library')}" if lib > 0 else ""
        if not obs.reference_ops and torch_s >= MAIN_SHARE:
            # microseconds alone condemn no partial fallback (launch overheads, an epilogue on a
            # small problem), nor clear one: the work decides, and the reference's is unknown
            return Outcome(self.name, "inconclusive", f"{summary}; torch ops took most of the device time and the "
                           "reference's work per op is unknown (its profiled call recorded none)")
        return Outcome(self.name, "passed", summary + note + lib_note)
