"""Source rewrites for probes, with libcst (concrete syntax, so the rest of the file is kept
byte for byte): replace every Triton kernel's body with a no-op (ghost replay) or with a raise
(forced failure). CUDA kernels, in a Python string or a .cu file, get a `return;` as their first
statement (the kernel is still launched, and does nothing)."""
from __future__ import annotations

import re

import libcst as cst

DISABLED = "hackscan: custom kernel disabled by a probe"


class _KernelBodies(cst.CSTTransformer):
    def __init__(self, names: set[str], mode: str):
        self.names, self.mode, self.count = names, mode, 0

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef) -> cst.FunctionDef:
        if original.name.value not in self.names:
            return updated
        self.count += 1
        if self.mode == "noop":
            stmt = cst.SimpleStatementLine([cst.Return()])
        else:
            stmt = cst.SimpleStatementLine([cst.Raise(exc=cst.Call(
                func=cst.Name("RuntimeError"), args=[cst.Arg(cst.SimpleString(repr(DISABLED)))]))])
        return updated.with_changes(body=cst.IndentedBlock(body=[stmt]))


def disable_kernels(source: str, kernel_names: set[str], mode: str) -> tuple[str, int]:
    """Return the source with the named kernels' bodies replaced ("noop" or "raise") and how
    many kernels were rewritten."""
    if mode not in ("noop", "raise"):
        raise ValueError(mode)
    module = cst.parse_module(source)
    t = _KernelBodies(kernel_names, mode)
    new = module.visit(t)
    return new.code, t.count


# a __global__ function's head up to its opening brace: qualifiers, __launch_bounds__(...),
# templates before it, the parameter list; no ';' (a declaration) and no braces in between
_CUDA_KERNEL_HEAD = re.compile(r"__global__\b[^;{}]*?\)\s*\{")


def disable_cuda_kernels(text: str) -> tuple[str, int]:
    """Every `__global__` kernel definition in `text` (C++/CUDA, or Python holding it in string
    literals) returns at once; the count of kernels rewritten."""
    count = 0

    def sub(m: re.Match) -> str:
        nonlocal count
        count += 1
        return m.group(0) + " return; "

    return _CUDA_KERNEL_HEAD.sub(sub, text), count


# identifiers that take parentheses in a kernel's head without being its name
_HEAD_ATTRIBUTES = {"__launch_bounds__", "__maxnreg__", "__cluster_dims__", "alignas", "decltype", "__declspec",
                    "__attribute__"}


def cuda_kernel_names(text: str) -> set[str]:
    """The names of every `__global__` kernel defined in `text` (C++/CUDA, or Python holding it in
    string literals, however the string reaches the compiler: a constant edited by `.replace`
    before `load_inline`, a template filled in at import): what a profiler reports them as."""
    names = set()
    for m in _CUDA_KERNEL_HEAD.finditer(text):
        for ident in re.findall(r"([A-Za-z_]\w*)\s*(?:<[^<>(){};]*>)?\s*\(", m.group(0)):
            if ident not in _HEAD_ATTRIBUTES:
                names.add(ident)
                break
    return names
