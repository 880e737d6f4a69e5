"""The names of the candidate's own CUDA kernels, read from its text: what a profiler reports them
as (kernel attribution), wherever the source sits (a `.cu` file, a Python string, a template)."""
from __future__ import annotations

import re

# a __global__ function's head up to its opening brace: qualifiers, __launch_bounds__(...),
# templates before it, the parameter list; no ';' (a declaration) and no braces in between
_CUDA_KERNEL_HEAD = re.compile(r"__global__\b[^;{}]*?\)\s*\{")


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
