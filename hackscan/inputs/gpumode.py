"""GPU MODE submissions: a `submission.py` defining `custom_kernel(data)`, beside (or given) a
problem folder whose `reference.py` defines `ref_kernel(data)` and `generate_input(**args)`, with
the sizes in `task.yml` (`tests:` and `benchmarks:`, lists of argument mappings) and helper
modules (`task.py`, `utils.py`) that both sides import.

hackscan audits such a pair as the KernelBench pair it is equivalent to, without changing a line
of either file: a tail is appended to each source, so every finding keeps its line number.

- candidate + tail: `class ModelNew(nn.Module)` whose `forward(*data)` calls `custom_kernel`;
- reference + tail: `class Model` calling `ref_kernel`, `get_inputs()` calling `generate_input`
  with the spec's arguments (each integer a module-level name, so the other-shape probe can
  change it; `seed` taken from the seed the auditor gives torch before each set, so the hidden
  sets differ from the visible one and from each other), and
  `get_init_inputs()` returning nothing.

`data` travels as the list of its elements (so every probe sees and perturbs the tensors) and is
handed back to both kernels as the same tuple. Input positions the reference writes (output
buffers in `data`) are not held against the candidate (hackscan.dynamic.probes.input_integrity).
"""
from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
from pathlib import Path

from hackscan.inputs.siblings import HELPERS_LIST, sibling_sources

NOT_HELPERS = {"reference.py", "eval.py", "submission.py"}


def defines(text: str, *names: str) -> bool:
    return all(re.search(rf"^\s*def {n}\s*\(", text, re.M) for n in names)


def is_reference(text: str) -> bool:
    return defines(text, "ref_kernel", "generate_input")


def is_candidate(text: str, entry: str = "ModelNew") -> bool:
    return defines(text, "custom_kernel") and not re.search(rf"^\s*class {re.escape(entry)}\b", text, re.M)


CANDIDATE_TAIL = '''

# ---- appended by hackscan: the GPU MODE entry point as a KernelBench ModelNew ----
import torch as _hackscan_torch


class ModelNew(_hackscan_torch.nn.Module):
    def forward(self, *data):
        return custom_kernel(data[0] if len(data) == 1 else tuple(data))
'''


def candidate_source(text: str) -> str:
    return text.rstrip("\n") + "\n" + CANDIDATE_TAIL


def reference_source(text: str, args: dict) -> str:
    """The reference with a KernelBench tail; `args` are generate_input's keyword arguments."""
    ints = {k: v for k, v in args.items() if isinstance(v, int) and not isinstance(v, bool) and k != "seed"
            and k.isidentifier()}
    fixed = {k: v for k, v in args.items() if k not in ints}
    lines = ["", "", "# ---- appended by hackscan: the GPU MODE problem as a KernelBench Model ----",
             "import torch as _hackscan_torch", "", f"_hackscan_fixed = {fixed!r}"]
    lines += [f"_hackscan_arg_{k} = {v!r}" for k, v in ints.items()]
    call = ", ".join([f"{k}=_hackscan_arg_{k}" for k in ints])
    lines += ["", "", "class Model(_hackscan_torch.nn.Module):", "    def forward(self, *data):",
              "        return ref_kernel(data[0] if len(data) == 1 else tuple(data))", "", "",
              "def get_inputs():",
              f"    args = dict(_hackscan_fixed{', ' + call if call else ''})",
              "    if 'seed' in args:  # the auditor seeds torch before each input set: each set differs",
              "        args['seed'] = _hackscan_torch.initial_seed() % (2 ** 31 - 2) + 1",
              "    data = generate_input(**args)",
              "    return list(data) if isinstance(data, (tuple, list)) else [data]", "", "",
              "def get_init_inputs():", "    return []", ""]
    return text.rstrip("\n") + "\n" + "\n".join(lines)


def _flow_specs(text: str, key: str) -> list[dict]:
    """`key:` followed by `- {a: 1, b: 2}` lines, read without a YAML library."""
    out, on = [], False
    for line in text.splitlines():
        if re.match(rf"^{key}\s*:", line):
            on = True
            continue
        if on and re.match(r"^\S", line):
            break
        m = re.match(r"^\s*-\s*\{(.*)\}\s*$", line) if on else None
        if m:
            spec = {}
            for part in m.group(1).split(","):
                if ":" not in part:
                    continue
                k, v = (x.strip().strip("'\"") for x in part.split(":", 1))
                try:
                    spec[k] = json.loads(v.lower() if v in ("True", "False") else v)
                except ValueError:
                    spec[k] = v
            out.append(spec)
    return out


def task_specs(problem_dir: Path) -> dict[str, list[dict]]:
    """`tests` and `benchmarks` from task.yml (PyYAML where installed, else the flow-mapping lines
    GPU MODE's files use)."""
    for name in ("task.yml", "task.yaml"):
        p = problem_dir / name
        if p.is_file():
            text = p.read_text("utf-8", "replace")
            try:
                import yaml

                doc = yaml.safe_load(text) or {}
                return {k: [d for d in doc.get(k) or [] if isinstance(d, dict)] for k in ("tests", "benchmarks")}
            except ImportError:
                return {k: _flow_specs(text, k) for k in ("tests", "benchmarks")}
            except Exception:  # noqa: BLE001 - a broken task.yml: no sizes
                return {"tests": [], "benchmarks": []}
    return {"tests": [], "benchmarks": []}


def generate_input_defaults(text: str) -> dict | None:
    """{} when generate_input needs no argument (all have defaults), else None."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "generate_input":
            a = node.args
            required = len(a.args) - len(a.defaults) + sum(d is None for d in a.kw_defaults)
            return {} if required == 0 else None
    return None


def problem_args(ref_path: Path, device: str = "cpu") -> dict:
    """generate_input's arguments: the first test's on the CPU (small sizes), the first
    benchmark's on a GPU; the function's defaults where there is no task.yml."""
    specs = task_specs(ref_path.parent)
    order = ("tests", "benchmarks") if device == "cpu" else ("benchmarks", "tests")
    for k in order:
        if specs[k]:
            return dict(specs[k][0])
    d = generate_input_defaults(ref_path.read_text("utf-8", "replace"))
    if d is None:
        raise ValueError(f"{ref_path}: GPU MODE reference with no task.yml beside it to size generate_input")
    return d


def helper_modules(problem_dir: Path, exclude: tuple[Path, ...] = ()) -> list[Path]:
    """The problem's own modules both sides import (task.py, utils.py): every .py in its folder
    but the reference, the harness and submissions."""
    ex = {p.resolve() for p in exclude}
    out = []
    for p in sorted(problem_dir.glob("*.py")):
        if p.name in NOT_HELPERS or p.resolve() in ex or p.stat().st_size > 1_000_000:
            continue
        try:
            text = p.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if defines(text, "custom_kernel") or is_reference(text):
            continue
        out.append(p)
    return out


def is_pair(cand_path: Path, ref_path: Path | None, entry: str = "ModelNew") -> bool:
    if ref_path is None or cand_path.suffix != ".py":
        return False
    try:
        return is_candidate(cand_path.read_text("utf-8"), entry) and is_reference(ref_path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError):
        return False


def materialize(cand_path: Path, ref_path: Path, work: Path, device: str = "cpu") -> tuple[Path, Path]:
    """Adapted copies of both sources, each in its own folder with the helper modules beside it
    (listed in HELPERS_LIST, which the runner copies into each worker's folder). The reference
    itself is never copied beside the candidate."""
    ctext, rtext = cand_path.read_text("utf-8"), ref_path.read_text("utf-8")
    args = problem_args(ref_path, device)
    helpers = helper_modules(ref_path.parent, exclude=(cand_path,))
    key = hashlib.sha256(ctext.encode() + b"\0" + rtext.encode() + json.dumps(args, sort_keys=True).encode()
                         + device.encode()).hexdigest()[:16]
    base = work / f"gpumode-{key}"
    cdir, rdir = base / "candidate", base / "reference"
    for d in (cdir, rdir):
        d.mkdir(parents=True, exist_ok=True)
        for h in helpers:
            shutil.copy(h, d / h.name)
        (d / HELPERS_LIST).write_text("".join(h.name + "\n" for h in helpers))
    # C++/CUDA files the submission compiles from its own folder travel with it
    for sib in sibling_sources(cand_path):
        shutil.copy(sib, cdir / sib.name)
    c = cdir / cand_path.name
    c.write_text(candidate_source(ctext))
    r = rdir / "reference_gpumode.py"
    r.write_text(reference_source(rtext, args))
    return c, r


