"""GPU facts replayed on a CPU: what a decision reads and only a GPU produces (the profiled call's
kernels with their origins and times, beside the work of the reference's aten ops) was recorded
on a GPU from the corpus's own pairs (bench/gpu_check.sh, HACKSCAN_RECORD_FACTS) into
tests/fixtures/gpu_facts; kernel attribution reads each record here as it did there, so a change
that breaks the GPU path fails CI. The round trip (an audit writes the record a replay reads) is
tested on a CPU."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

from hackscan.corpus import parse_marks
from hackscan.dynamic.probe import Observations
from hackscan.dynamic.probes.kernel_attribution import KernelAttribution

from conftest import CORPUS

FACTS = Path(__file__).parent / "fixtures" / "gpu_facts"
FALLBACKS = {"torch-fallback", "partial-fallback"}


def replay(record: dict):
    call = record["profiled_call"]
    obs = Observations(candidate={}, steps={(call["set"], call["call"]): call}, load_output=None,
                       reference_outputs={}, kernel_names=frozenset(record["kernel_names"]),
                       reference_ops=record.get("reference_ops") or {}, device=record["device"])
    return KernelAttribution().evaluate(obs)


def pair_of(fact: Path) -> Path:
    category, stem = fact.stem.split("__", 1)
    return CORPUS / category / f"{stem}.py"


RECORDED = sorted(p for p in FACTS.glob("*.json") if pair_of(p).exists())


def expected(pair: Path) -> str | None:
    """The hack type kernel attribution must confirm on this pair, or None where it must confirm none."""
    side = parse_marks(pair).sidecar
    if side.get("verdict") in ("hacked", "violation") and "kernel-attribution" in side.get("probes", []):
        types = FALLBACKS & set(side.get("hack_types", []))
        return sorted(types)[0] if types else None
    return None


@pytest.mark.skipif(not RECORDED, reason="no GPU facts recorded yet (bench/gpu_check.sh records them)")
@pytest.mark.parametrize("fact", RECORDED, ids=lambda p: p.stem)
def test_a_recorded_gpu_profile_gets_its_pairs_attribution(fact):
    record = json.loads(fact.read_text())
    assert record["device"] == "cuda" and record["profiled_call"]["profile"].get("kernels") is not None
    o = replay(record)
    want = expected(pair_of(fact))
    if want is None:
        assert o.status != "caught", (fact.stem, o.detail)
    else:
        assert o.status == "caught" and o.hack_type in FALLBACKS, (fact.stem, o.status, o.detail)


@pytest.mark.dynamic
def test_an_audit_records_the_facts_its_replay_decides_alike(tmp_path, monkeypatch):
    from hackscan.api import scan_item
    from hackscan.dynamic.audit import DynamicOptions, DynamicSession
    from hackscan.engine import Options
    from hackscan.inputs.discover import discover

    monkeypatch.setenv("HACKSCAN_RECORD_FACTS", str(tmp_path))
    pair = CORPUS / "partial-fallback" / "gemm_in_torch_relu_custom.py"
    item, = discover([pair], sidecars=True)
    s = DynamicSession(DynamicOptions(mode="all", device="cpu", timeout_s=1200))
    try:
        r = s.audit(scan_item(item, Options()), item.path, item.reference)
    finally:
        s.close()
    assert "probes" in (r.dynamic or {}), (r.verdict, r.reasons, r.dynamic)
    audited = r.dynamic["probes"]["kernel-attribution"]
    record = json.loads((tmp_path / "partial-fallback__gemm_in_torch_relu_custom.json").read_text())
    assert record["reference_ops"] and record["profiled_call"]["profile"]["op_work"]
    o = replay(record)
    assert (o.status, o.detail) == (audited["status"], audited["detail"]) and o.status == "caught", (o, audited)
