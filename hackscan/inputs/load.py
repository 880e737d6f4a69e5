"""Read one submission defensively and parse it into `Facts`. Every way a file can be
unreadable becomes a one-line reason; nothing here raises for bad input."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from hackscan.facts import Facts
from hackscan.facts import cuda as cuda_facts
from hackscan.facts import python as py_facts
from hackscan.facts import reference as ref_facts
from hackscan.parse.trees import first_error, parse_python

MAX_BYTES = 1_000_000


class BadInput(Exception):
    """The submission cannot be audited; str(e) is the one-line reason."""


@dataclass
class Loaded:
    facts: Facts
    lines: list[str]
    backend: str


def decode(data: bytes, what: str, max_bytes: int = MAX_BYTES) -> str:
    if len(data) > max_bytes:
        raise BadInput(f"{what} is {len(data):,} bytes, over the {max_bytes:,}-byte limit")
    if not data.strip():
        raise BadInput(f"{what} is empty")
    if b"\x00" in data[:8192]:
        raise BadInput(f"{what} looks binary (NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{what} is not UTF-8 (byte {e.start}: {e.reason})") from None


def parse_py(path: str, text: str, what: str):
    src = text.encode("utf-8")
    tree = parse_python(src)
    if tree.root_node.has_error:
        try:
            ast.parse(text, filename=path)
        except SyntaxError as e:
            raise BadInput(f"{what}: syntax error at line {e.lineno}: {e.msg}") from None
        except (ValueError, RecursionError, MemoryError) as e:
            raise BadInput(f"{what}: cannot be parsed ({type(e).__name__})") from None
        err = first_error(tree.root_node)
        where = err.start_point[0] + 1 if err is not None else "?"
        raise BadInput(f"{what}: the parser could not read line {where} (grammar ERROR node)")
    return py_facts.build(path, src, tree)


def backend_of(facts: Facts) -> str:
    if facts.py is None:
        return "cuda"
    if facts.py.extensions or facts._raw_cuda:
        return "cuda"
    if facts.py.triton_kernels:
        return "triton"
    return "torch"


NOT_A_KERNEL = "not a kernel file"   # `--kernels-only` skips what starts so


def load(path: str, candidate: str | bytes, reference: str | bytes | None = None, *,
         entry: str = "ModelNew", suffix: str = ".py", base_dir: Path | None = None,
         reference_path: str | None = None, max_bytes: int = MAX_BYTES) -> Loaded:
    data = candidate.encode("utf-8") if isinstance(candidate, str) else candidate
    text = decode(data, "file", max_bytes)
    ref = None
    if reference is not None:
        rdata = reference.encode("utf-8") if isinstance(reference, str) else reference
        try:
            rtext = decode(rdata, f"reference {reference_path or ''}".strip(), max_bytes)
            ref = ref_facts.build(parse_py(reference_path or "<reference>", rtext, "reference"))
        except BadInput as e:
            raise BadInput(str(e)) from None
    if suffix == ".py":
        py = parse_py(path, text, "file")
        if entry not in py.classes:
            if not (py.triton_kernels or py.extensions or "custom_kernel" in {f.name for f in py.funcs}):
                raise BadInput(f"{NOT_A_KERNEL}: no entry class {entry!r}, no Triton kernel, no extension built "
                               f"(use --entry NAME for another class)")
            raise BadInput(f"no entry class {entry!r} (a KernelBench candidate defines class {entry}; "
                           f"use --entry NAME for another)")
        facts = Facts(path, py, None, ref, entry, base_dir)
    else:
        unit = cuda_facts.build(Path(path).name, path, text, None, False)
        if not unit.funcs and unit.tree.root_node.has_error:
            err = first_error(unit.tree.root_node)
            where = err.start_point[0] + 1 if err is not None else "?"
            raise BadInput(f"file: the C++/CUDA parser could not read line {where}")
        facts = Facts(path, None, [unit], ref, entry, base_dir)
    return Loaded(facts, text.splitlines(), backend_of(facts))
