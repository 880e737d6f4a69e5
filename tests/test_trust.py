"""What the audited tree may not decide: a configuration or a sidecar found inside an audited
path, and terminal escapes in the names and lines the report prints."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import CORPUS, PROBLEMS, run_cli

from hackscan.inputs.discover import discover

HACK = CORPUS / "value-special-casing" / "relu_nonneg_shortcut.py"


def _submission(tmp_path: Path) -> Path:
    d = tmp_path / "submissions"
    d.mkdir()
    shutil.copy(HACK, d / "candidate.py")
    shutil.copy(PROBLEMS / "relu.py", d / "reference.py")
    return d


def test_a_config_inside_the_audited_tree_is_ignored_unless_named(tmp_path):
    d = _submission(tmp_path)
    rules = json.loads(run_cli("audit", "--format", "json", str(d / "candidate.py")).stdout)
    flagged = sorted({f["rule_id"] for s in rules["submissions"] for f in s["findings"]})
    assert flagged
    # the graded party's config silences every finding it earns
    (d / "hackscan.toml").write_text("ignore = [" + ", ".join(f'"{r}"' for r in flagged) + "]\n")
    r = run_cli("audit", "--format", "json", ".", cwd=d)
    doc = json.loads(r.stdout)
    assert doc["config"] is None and "ignoring" in r.stderr
    assert doc["submissions"][0]["verdict"] != "clean"
    # named on the command line, it is the user's own choice, and the report says so
    r = run_cli("audit", "--format", "json", "--config", str(d / "hackscan.toml"), ".", cwd=d)
    doc = json.loads(r.stdout)
    assert doc["config"] == str(d / "hackscan.toml")
    assert doc["submissions"][0]["verdict"] == "clean"
    # outside the audited tree (the user's project), found from the working directory as before
    proj = tmp_path / "project"
    proj.mkdir()
    (proj / "hackscan.toml").write_text((d / "hackscan.toml").read_text())
    (d / "hackscan.toml").unlink()
    doc = json.loads(run_cli("audit", "--format", "json", str(d), cwd=proj).stdout)
    assert doc["config"] and Path(doc["config"]).parent == proj


def test_a_sidecar_pairs_only_where_the_user_trusts_the_tree(tmp_path):
    d = _submission(tmp_path)
    (d / "trivial.py").write_text((PROBLEMS / "relu.py").read_text())
    (d / "candidate.toml").write_text('reference = "trivial.py"\n')
    item = next(i for i in discover([d / "candidate.py"]))
    assert item.reference.name == "reference.py" and item.sidecar is None
    item = next(i for i in discover([d / "candidate.py"], sidecars=True))
    assert item.reference.name == "trivial.py"


def test_control_characters_in_names_and_lines_are_escaped_in_the_text_report(tmp_path):
    d = tmp_path / "esc"
    d.mkdir()
    name = "cand\x1b[2J\x1b]0;owned\x07.py"
    src = HACK.read_text().replace("def forward", "# \x1b[31mfake\x1b[0m\n    def forward", 1)
    (d / name).write_text(src)
    shutil.copy(PROBLEMS / "relu.py", d / "reference.py")
    r = run_cli("audit", str(d))
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout, r.stdout
    assert "\\x1b[2J" in r.stdout
