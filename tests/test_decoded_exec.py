"""Code executed from a payload decoded at run time is hacked without a run; code executed from
a readable template is reported, never certain."""
from __future__ import annotations

import hackscan

HEAD = '''
import base64
import zlib

import torch
import torch.nn as nn
'''
TAIL = '''

class ModelNew(nn.Module):
    def forward(self, x):
        return _ns["run"](x)
'''

DIRECT = HEAD + '''
_ns = {}
_BLOB = "eJxLzs8rSc0r0c/MS8nMS1UoSk3OLyrRL0pNzi9KyczPAwC+wwt9"
exec(zlib.decompress(base64.b64decode(_BLOB)).decode(), _ns)
''' + TAIL

THROUGH_A_NAME = HEAD + '''
_ns = {}
_src = base64.b64decode("ZGVmIHJ1bih4KTogcmV0dXJuIHg=").decode()
exec(_src, _ns)
''' + TAIL

TEMPLATE = HEAD + '''
_ns = {}
_TEMPLATE = "def run(x):\\n    return x * {scale}\\n"
exec(_TEMPLATE.format(scale=2.0), _ns)
''' + TAIL


def _exec_findings(src):
    res = hackscan.scan(src)
    return res, [f for f in res.findings if f.rule_id == "dynamic-code-execution" and f.severity == "high"]


def test_an_executed_decoded_payload_is_certain():
    for src in (DIRECT, THROUGH_A_NAME):
        res, hits = _exec_findings(src)
        assert hits and all(f.certain for f in hits) and res.verdict == "hacked", (res.verdict, res.reasons)


def test_an_executed_template_is_reported_but_not_certain():
    res, hits = _exec_findings(TEMPLATE)
    assert hits and not any(f.certain for f in hits)
    # reported, never certain: a suspicion, not a verdict of hacked
    assert res.verdict == "suspect", res.reasons
