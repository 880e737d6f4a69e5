"""A measurement's started worker warms the meta-device draw that a reference's input preparation
begins with (hackscan.dynamic.worker.prestart._warm_meta): the first such draw imports PyTorch's
symbolic-shapes machinery, which belongs in the warm-up, outside the device lock, not in the job."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("torch")

# a reference's generator as _prepare first runs it: every factory on the meta device
PROBE = textwrap.dedent("""
    import json, sys
    import torch
    from hackscan.dynamic.worker import prestart

    info = {}
    if sys.argv[1] == "warm":
        prestart._warm_meta(torch, info)
    before = set(sys.modules)
    with torch.device("meta"):
        x = [torch.randn(64, 4096), torch.randint(0, 10, (64,)), torch.rand(3, 5, dtype=torch.float16)]
    print(json.dumps({"new": sorted(set(sys.modules) - before), "info": info,
                      "shapes": [list(t.shape) for t in x], "meta": all(t.is_meta for t in x)}))
""")


def _run(mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_after_the_warm_up_a_references_meta_draw_imports_nothing():
    cold = _run("cold")
    if not cold["new"]:
        pytest.skip("this PyTorch's meta-device draw imports nothing on first use: nothing to warm")
    warm = _run("warm")
    assert "meta_error" not in warm["info"], warm
    assert warm["new"] == [], warm["new"][:20]
    # the draw itself is unchanged: the shapes, on the meta device
    assert warm["shapes"] == cold["shapes"] == [[64, 4096], [64], [3, 5]] and warm["meta"] and cold["meta"]
