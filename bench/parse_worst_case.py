"""Static audit time on generated worst cases at the input size limit (issue 48, item 7).

Each case is a candidate built to stress one part of the static pass (the parser, the flow
graph, the rules' walks), generated at a quarter of the limit and just under it; the record gives
the seconds of `hackscan.api.audit(..., dynamic="off")` in this process for each, and the ratio
of the two (about 4 where the time is linear in the file; 16 where it is quadratic).

    python bench/parse_worst_case.py --out bench/results/parse-worst-case-DATE-cpu.json

The bound this records: every case at the limit audits in under BOUND_S on the 2-core CPU
machine (the record says whether it held); a file nested too deeply to analyse is a per-item
error, not a wait."""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hackscan.api import audit
from hackscan.inputs.load import MAX_BYTES

BOUND_S = 15.0

HEAD = ("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, x):\n        y = x + 1\n        if x is not None:\n            y = y * 2\n")
TAIL = "        return y\n"
KERNEL = ("import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
          "def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
          "    m = i < n\n    v = tl.load(x_ptr + i, mask=m)\n")


def _fill(head: str, line: str, tail: str, size: int) -> str:
    n = max(1, (size - len(head) - len(tail)) // len(line))
    return head + line * n + tail


def cases(size: int) -> dict[str, tuple[str, str]]:
    """name -> (suffix, source) of about `size` bytes."""
    return {
        # tree-sitter-python's scanner looks ahead over the comment lines after each newline
        "comment_lines_in_a_block": (".py", _fill(HEAD, "        # a comment line, padded to some length\n", TAIL, size)),
        # rebinding one name n times: every use reaches every definition
        "rebinding_chain_with_trailing_comments": (
            ".py", _fill(HEAD, "        y = y + 1  # a trailing comment, padded\n", TAIL, size)),
        "rebinding_chain": (".py", _fill(HEAD, "        y = torch.relu(y) + y * 2 - x\n", TAIL, size)),
        "blank_and_comment_lines": (".py", _fill(HEAD, "\n        # after a blank line\n", TAIL, size)),
        # `#` lines in a string: no comments (a CUDA source's preprocessor lines)
        "hash_lines_in_a_string": (".py", _fill(HEAD + "        s = '''\n", "#define X 1 // padded to some length\n",
                                                "'''\n" + TAIL, size)),
        "many_functions": (".py", _fill("import torch\n\n", "def f(x):\n    return torch.relu(x) + 1\n\n\n",
                                        "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
                                        "        return f(x)\n", size)),
        "long_expression_line": (".py", HEAD + "        y = y" + " + x" * ((size - 200) // 4) + "\n" + TAIL),
        "triton_kernel_body": (".py", _fill(KERNEL, "    v = v * 2 + tl.exp(v) - v\n",
                                            "    tl.store(y_ptr + i, v, mask=m)\n\n\nclass ModelNew(torch.nn.Module):\n"
                                            "    def forward(self, x):\n        y = torch.empty_like(x)\n"
                                            "        k[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)\n"
                                            "        return y\n", size)),
        "cuda_comment_lines": (".cu", _fill("#include <cuda_runtime.h>\n__global__ void k(float* x, int n) {\n"
                                            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) {\n",
                                            "    // a comment line, padded to some length\n", "    x[i] = 0.f;\n  }\n}\n",
                                            size)),
        "cuda_statements": (".cu", _fill("__global__ void k(float* x, int n) {\n"
                                         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  float v = x[i];\n",
                                         "  v = v * 2.f + __expf(v);\n", "  x[i] = v;\n}\n", size)),
    }


def _time(path: Path) -> tuple[float, str]:
    t0 = time.perf_counter()
    r = audit(path, dynamic="off")
    return time.perf_counter() - t0, r.verdict


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    big = MAX_BYTES - 10_000
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in cases(1000):
            if a.only and a.only not in name:
                continue
            rec = {"case": name}
            for label, size in (("quarter", big // 4), ("limit", big)):
                suffix, src = cases(size)[name]
                p = Path(tmp) / f"{name}_{label}{suffix}"
                p.write_text(src)
                audit(p, dynamic="off") if label == "quarter" else None    # warm: rules loaded, caches filled
                s, verdict = _time(p)
                rec[f"{label}_bytes"] = len(src.encode())
                rec[f"{label}_s"] = round(s, 3)
                rec[f"{label}_verdict"] = verdict
            rec["ratio"] = round(rec["limit_s"] / max(rec["quarter_s"], 1e-6), 2)
            rec["within_bound"] = rec["limit_s"] <= BOUND_S
            rows.append(rec)
            print(json.dumps(rec), flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    doc = {"benchmark": "parse_worst_case", "date": time.strftime("%Y-%m-%d"), "commit": commit,
           "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores, no GPU (CPU)",
           "command": "python bench/parse_worst_case.py" + (f" --only {a.only}" if a.only else ""),
           "bound_s": BOUND_S, "all_within_bound": all(r["within_bound"] for r in rows), "cases": rows}
    if a.out:
        a.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps({k: v for k, v in doc.items() if k != "cases"}))
    return 0 if doc["all_within_bound"] else 1


if __name__ == "__main__":
    sys.exit(main())
