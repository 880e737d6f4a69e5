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
MEMORY_NAME = re.compile(r"^(Memcpy|Memset)|\bmemcpy|\bmemset", re.I)

# kernels launched under these aten ops move or fill memory; they are not the operation's math
GLUE_OPS = ("aten::copy_", "aten::clone", "aten::contiguous", "aten::to", "aten::_to_copy", "aten::fill_",
            "aten::zero_", "aten::zeros", "aten::zeros_like", "aten::ones", "aten::ones_like", "aten::full",
            "aten::full_like", "aten::empty", "aten::empty_like", "aten::empty_strided", "aten::cat",
            "aten::stack", "aten::constant_pad_nd", "aten::pad", "aten::index_select", "aten::narrow_copy",
            "aten::new_zeros", "aten::new_empty", "aten::new_full", "aten::resize_", "aten::set_")

TORCH_FALLBACK_SHARE = 0.01   # the candidate's own kernels below this share of device time: not its work
PARTIAL_TORCH_SHARE = 0.5     # torch ops called by the candidate at or above this share ...
PARTIAL_CUSTOM_SHARE = 0.25   # ... beside own kernels below this share: the heavy op stayed in torch


def classify(kernels: list[dict], own_names: frozenset, glue_ops: tuple = GLUE_OPS) -> list[tuple[dict, str]]:
    """Each kernel as custom (defined in the candidate's source), torch (launched by an aten op
    the candidate called: Python or at:: in its C++), library (PyTorch/vendor/compiler kernel the
    candidate reached without an aten op: a cuBLAS handle in its C++, torch.compile), glue (memory
    movement, fills, copies) or other."""
    out = []
    for k in kernels:
        name, owner = k.get("name", ""), k.get("owner")
        if MEMORY_NAME.search(name) or (owner and owner in glue_ops):
            cls = "glue"
        elif owner:
            cls = "torch"
        elif LIBRARY_NAME.search(name):
            cls = "library"
        elif own_names and _names_own(name, own_names):
            cls = "custom"
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
    """One forward under torch.profiler on the GPU: every kernel that ran, classified as the
    candidate's own (its Triton or CUDA kernels, by the names its source defines), torch (launched
    by an aten op it called, from Python or through at:: in its C++), library (PyTorch, vendor or
    torch.compile kernels reached without an aten op, such as a cuBLAS handle in its own C++) or
    glue (copies, fills), with each class's share of device time. Own kernels below 1% of the
    device time: the work is torch's (torch-fallback). Torch ops at 50% or more beside own kernels
    under 25%: the heavy op stayed in torch (partial-fallback). A library GEMM called from the
    candidate's own C++ inside an otherwise custom chain is reported, not condemned."""

    name = "kernel-attribution"
    always = True   # a core question: run on every audited submission, suspected or not
    confirms = ("torch-fallback", "partial-fallback")
    summary = "device time is spent in the candidate's own kernels"
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
        classified = classify(prof.get("kernels", []), obs.kernel_names)
        total, sh = shares(classified)
        if total <= 0:
            return Outcome(self.name, "inconclusive", "no kernel ran on the device during forward")
        own, torch_s, lib = sh.get("custom", 0.0), sh.get("torch", 0.0), sh.get("library", 0.0)
        summary = (f"{len(classified)} kernels, {total:.1f} us of device time: own {own:.0%}, torch ops {torch_s:.0%}, "
                   f"library called directly {lib:.0%}, glue {sh.get('glue', 0.0):.0%}, other {sh.get('other', 0.0):.0%}")
        if own < TORCH_FALLBACK_SHARE and torch_s + lib > 0.5:
            heavy = _top(classified, "torch") or _top(classified, "library")
            return Outcome(self.name, "caught", f"the candidate's own kernels ran for {own:.1%} of the device time; "
                           f"{summary}; the work ran in {heavy}", "torch-fallback")
        if torch_s >= PARTIAL_TORCH_SHARE and own < PARTIAL_CUSTOM_SHARE:
            return Outcome(self.name, "caught", f"torch ops called by the candidate took {torch_s:.0%} of the device "
                           f"time beside its own kernels' {own:.0%}: {_top(classified, 'torch')}; {summary}",
                           "partial-fallback")
        note = f"; library kernels called from its own code: {_top(classified, 'library')}" if lib > 0 else ""
        return Outcome(self.name, "passed", summary + note)
