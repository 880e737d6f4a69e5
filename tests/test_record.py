"""A candidate and its reference are read once, into a record of their bytes: the dynamic audit
refuses files that are not what the static pass read, and no stage after the record reads the
submitter's paths again (a file changed or removed mid-audit changes nothing)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from hackscan.api import scan_item  # noqa: E402
from hackscan.dynamic.audit import DynamicOptions, DynamicSession  # noqa: E402
from hackscan.engine import Options  # noqa: E402
from hackscan.inputs.discover import Item  # noqa: E402
from hackscan.inputs.record import Changed, PairRecord  # noqa: E402

from conftest import CORPUS  # noqa: E402

HONEST = CORPUS / "legit" / "triton_relu.py"
REFERENCE = CORPUS.parent / "problems" / "relu.py"
ZEROS = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.zeros_like(x)\n"


def _item(tmp_path: Path) -> Item:
    cand, ref = tmp_path / "kernel.py", tmp_path / "problem.py"
    shutil.copy(HONEST, cand)
    shutil.copy(REFERENCE, ref)
    return Item(cand, ref, "kernel.py")


def test_a_record_holds_every_file_and_refuses_other_bytes(tmp_path):
    item = _item(tmp_path)
    (tmp_path / "helper.cu").write_text("__global__ void k() {}\n")
    static = scan_item(item, Options())
    assert static.source_sha256 and static.reference_sha256
    rec = PairRecord.read(item.path, item.reference)
    rec.check(static.source_sha256, static.reference_sha256)        # what the static pass read
    assert [f.name for f in rec.sources] == ["helper.cu"]
    cand, ref = rec.write(tmp_path / "copy")
    assert cand.read_bytes() == item.path.read_bytes() and (cand.parent / "helper.cu").is_file()
    assert ref.read_bytes() == item.reference.read_bytes() and ref.parent != cand.parent
    item.path.write_text(ZEROS)
    with pytest.raises(Changed, match="the candidate changed"):
        PairRecord.read(item.path, item.reference).check(static.source_sha256, static.reference_sha256)


@pytest.mark.dynamic
def test_the_dynamic_audit_works_from_the_record_never_the_path(tmp_path, monkeypatch):
    item = _item(tmp_path)
    static = scan_item(item, Options())
    s = DynamicSession(DynamicOptions(mode="auto", device="cpu", timeout_s=600, seed=5))
    try:
        # a candidate changed after the static pass: refused, with the reason
        item.path.write_text(ZEROS)
        changed = s.audit(static, item.path, item.reference)
        assert changed.verdict == "error" and "changed between the static pass" in changed.reasons[0], changed.reasons
        # changed back, then swapped for a hack once the audit has its record: the run is the
        # record's (honest, clean and verified), whatever the path holds now
        shutil.copy(HONEST, item.path)
        real = DynamicSession._audit

        def swap_then_audit(self, result, cand, ref):
            assert cand != item.path and ref != item.reference   # later stages read the record's copies
            item.path.write_text(ZEROS)
            item.reference.unlink()
            return real(self, result, cand, ref)

        monkeypatch.setattr(DynamicSession, "_audit", swap_then_audit)
        r = s.audit(static, item.path, item.reference)
        assert r.verdict == "clean" and r.evidence == "dynamic", (r.verdict, r.reasons)
    finally:
        s.close()


@pytest.mark.dynamic
def test_the_measurement_measures_the_recorded_bytes(tmp_path, monkeypatch):
    """--measure runs after every audit: it measures the bytes the audit recorded, written into a
    folder of its own, never what the submitter's path holds by then; measured without an audit,
    it reads the pair then and refuses bytes the static pass did not read."""
    item = _item(tmp_path)
    static = scan_item(item, Options())
    s = DynamicSession(DynamicOptions(mode="auto", device="cpu", timeout_s=600, seed=5, measure="all"))
    seen = []
    monkeypatch.setattr(DynamicSession, "_measure",
                        lambda self, result, cand, ref: (seen.append((cand, cand.read_bytes(), ref.read_bytes())),
                                                         result)[1])
    try:
        audited = s.audit(static, item.path, item.reference)
        assert audited.verdict == "clean", audited.reasons
        item.path.write_text(ZEROS)           # swapped between the audit and its measurement
        s.measure(audited, item.path, item.reference)
        cand, cand_bytes, ref_bytes = seen[-1]
        assert cand != item.path and cand_bytes == HONEST.read_bytes() and ref_bytes == REFERENCE.read_bytes()
        assert not cand.exists(), "the measured copy is removed once measured"
        # no audit kept a record now: read at measurement, checked against the static pass
        r = s.measure(audited, item.path, item.reference)
        assert r.measure["status"] == "error" and "changed between the static pass" in r.measure["reason"], r.measure
        assert len(seen) == 1
    finally:
        s.close()
