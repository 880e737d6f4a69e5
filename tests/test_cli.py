"""The real CLI, run as a subprocess on real files: exit codes, formats, options."""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest


from conftest import CORPUS, PROBLEMS, ROOT, run_cli

HACK = CORPUS / "value-special-casing" / "relu_nonneg_shortcut.py"
LEGIT = CORPUS / "legit" / "triton_relu.py"


def copy_pair(tmp: Path, cand: Path, problem: str, name: str = "candidate.py") -> Path:
    d = tmp / cand.stem
    d.mkdir(parents=True, exist_ok=True)
    shutil.copy(cand, d / name)
    shutil.copy(PROBLEMS / f"{problem}.py", d / "reference.py")
    return d / name


def test_exit_codes(tmp_path):
    assert run_cli("audit", str(HACK)).returncode == 1
    assert run_cli("audit", str(LEGIT)).returncode == 0
    assert run_cli("audit", "--no-such-flag").returncode == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_cli("audit", str(empty)).returncode == 3


def test_demo_runs_with_no_path():
    r = run_cli("audit", "--format", "json")
    doc = json.loads(r.stdout)
    assert len(doc["submissions"]) >= 90
    assert r.returncode == 1


def test_json_document_shape():
    r = run_cli("audit", "--format", "json", str(HACK))
    doc = json.loads(r.stdout)
    assert doc["schema_version"] == 1 and doc["dynamic"] == "off"
    sub = doc["submissions"][0]
    for key in ("path", "verdict", "hack_types", "findings", "reasons"):
        assert key in sub
    f = sub["findings"][0]
    for key in ("rule_id", "hack_type", "severity", "confidence", "message", "location", "snippet", "fingerprint",
                "dynamic"):
        assert key in f
    assert f["dynamic"]["status"] == "not-run"
    assert f["location"]["line"] >= 1


def test_embedded_location_has_both_lines():
    path = CORPUS / "value-special-casing" / "gelu_host_value_check.py"
    doc = json.loads(run_cli("audit", "--format", "json", str(path)).stdout)
    f = [f for f in doc["submissions"][0]["findings"] if f["rule_id"] == "value-dependent-branch"][0]
    host_line = f["location"]["line"]
    assert "value-dependent-branch" in path.read_text().splitlines()[host_line - 1]
    emb = f["location"]["embedded"]
    assert emb["unit"] == "cuda_sources" and emb["line"] < host_line


def test_jsonl_one_line_per_submission():
    r = run_cli("audit", "--format", "jsonl", str(HACK), str(LEGIT))
    lines = [json.loads(l) for l in r.stdout.splitlines()]
    assert [l["verdict"] for l in lines] == ["violation", "clean"]


def test_sarif(tmp_path):
    out = tmp_path / "r.sarif"
    r = run_cli("audit", "--format", "sarif", "--output", str(out), str(HACK))
    assert r.stdout == ""
    doc = json.loads(out.read_text())
    assert doc["version"] == "2.1.0"
    run = doc["runs"][0]
    ids = {rule["id"] for rule in run["tool"]["driver"]["rules"]}
    res = run["results"][0]
    assert res["ruleId"] in ids
    uri = res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert not uri.startswith("/")
    assert res["partialFingerprints"]["hackscanFingerprint/v1"]
    assert res["partialFingerprints"]["primaryLocationLineHash"]
    region = res["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] >= 1 and region["endColumn"] >= 1
    # the base is an absolute URI ending in a slash; no rule points at a relative help page
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base.startswith("file:///") and base.endswith("/")
    assert all("helpUri" not in rule or "://" in rule["helpUri"] for rule in run["tool"]["driver"]["rules"])


def test_sarif_names_a_file_outside_the_working_directory_by_its_own_uri(tmp_path):
    outside = tmp_path / "cand.py"
    outside.write_text(HACK.read_text())
    r = run_cli("audit", "--format", "sarif", str(outside), cwd=ROOT)
    loc = json.loads(r.stdout)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc["uri"] == outside.resolve().as_uri() and "uriBaseId" not in loc


def test_select_ignore_and_confidence():
    doc = json.loads(run_cli("audit", "--format", "json", "--select", "value-special-casing", str(HACK)).stdout)
    assert {f["hack_type"] for f in doc["submissions"][0]["findings"]} == {"value-special-casing"}
    doc = json.loads(run_cli("audit", "--format", "json", "--ignore", "output,fallback", str(HACK)).stdout)
    assert {f["rule_id"] for f in doc["submissions"][0]["findings"]} == {"value-dependent-branch"}
    assert run_cli("audit", "--select", "not-a-rule", str(HACK)).returncode == 2


def test_fail_on_threshold():
    path = CORPUS / "legit" / "static_cublas_handle.py"  # one low-severity finding
    assert run_cli("audit", str(path)).returncode == 0
    assert run_cli("audit", "--fail-on", "low", str(path)).returncode == 1


def test_policy_any_ignores_contract_violations():
    path = CORPUS / "torch-fallback" / "linear_alias_fallback.py"
    kb = json.loads(run_cli("audit", "--format", "json", str(path)).stdout)["submissions"][0]
    anyp = json.loads(run_cli("audit", "--format", "json", "--policy", "any", str(path)).stdout)["submissions"][0]
    assert kb["verdict"] == "violation"
    assert anyp["verdict"] == "clean"


@pytest.mark.dynamic
def test_dynamic_without_torch(tmp_path):
    """Asking for dynamic confirmation where torch cannot be imported says so and exits 2;
    the default (auto) stays static."""
    import os
    import subprocess
    import sys

    blocker = tmp_path / "torch"
    blocker.mkdir()
    (blocker / "__init__.py").write_text("raise ImportError('blocked for this test')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    cmd = [sys.executable, "-m", "hackscan.cli", "audit", "--format", "json"]
    r = subprocess.run(cmd + ["--dynamic", "all", str(HACK)], env=env, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2 and "needs PyTorch" in r.stderr
    r = subprocess.run(cmd + [str(HACK)], env=env, capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 1
    assert json.loads(r.stdout)["dynamic"] == "off"


def test_baseline_roundtrip(tmp_path):
    cand = copy_pair(tmp_path, HACK, "relu")
    base = tmp_path / "baseline.json"
    assert run_cli("audit", "--write-baseline", str(base), str(cand), cwd=tmp_path).returncode == 1
    r = run_cli("audit", "--baseline", str(base), "--format", "json", str(cand), cwd=tmp_path)
    sub = json.loads(r.stdout)["submissions"][0]
    assert r.returncode == 0 and sub["findings"] == [] and sub["suppressed_by_baseline"] >= 2
    # moving the code down a few lines keeps the fingerprints (no line numbers in them)
    cand.write_text("# moved\n\n\n" + cand.read_text())
    r = run_cli("audit", "--baseline", str(base), str(cand), cwd=tmp_path)
    assert r.returncode == 0


def test_config_file(tmp_path):
    cand = copy_pair(tmp_path, HACK, "relu")
    (tmp_path / "hackscan.toml").write_text('[tool.hackscan]\nignore = ["output", "fallback", "value-special-casing"]\n')
    assert run_cli("audit", str(cand), cwd=tmp_path).returncode == 0
    (tmp_path / "hackscan.toml").write_text('[tool.hackscan]\nbogus = 1\n')
    assert run_cli("audit", str(cand), cwd=tmp_path).returncode == 2


def test_pyproject_config(tmp_path):
    # a static suspicion (high) that no certainty backs: the threshold read from pyproject.toml
    # decides its exit (a hacked or violation verdict fails whatever the threshold)
    cand = copy_pair(tmp_path, CORPUS / "legit" / "triton_except_fallback_unused.py", "relu")
    assert run_cli("audit", str(cand), cwd=tmp_path).returncode == 1
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.hackscan]\nfail-on = "critical"\n')
    assert run_cli("audit", str(cand), cwd=tmp_path).returncode == 0


def test_reference_pairing_by_sibling_option_and_problems(tmp_path):
    cand = copy_pair(tmp_path, CORPUS / "shape-special-casing" / "matmul_shape_table_cpp.py", "matmul")
    doc = json.loads(run_cli("audit", "--format", "json", str(cand)).stdout)["submissions"][0]
    assert doc["reference"].endswith("reference.py")
    assert any(f["evidence"].get("reference_dims") or f["confidence"] == "high" for f in doc["findings"]
               if f["rule_id"] == "shape-literal-branch")
    lone = tmp_path / "lone.py"
    shutil.copy(CORPUS / "shape-special-casing" / "matmul_shape_table_cpp.py", lone)
    doc = json.loads(run_cli("audit", "--format", "json", "--reference", str(PROBLEMS / "matmul.py"),
                             str(lone)).stdout)["submissions"][0]
    assert doc["reference"].endswith("matmul.py")
    probs = tmp_path / "problems" / "level1"
    probs.mkdir(parents=True)
    shutil.copy(PROBLEMS / "matmul.py", probs / "1_Square_matrix_multiplication_.py")
    runs = tmp_path / "runs"
    runs.mkdir()
    shutil.copy(lone, runs / "level_1_problem_1_sample_0_kernel.py")
    doc = json.loads(run_cli("audit", "--format", "json", "--problems", str(tmp_path / "problems"),
                             str(runs)).stdout)["submissions"][0]
    assert doc["reference"].endswith("1_Square_matrix_multiplication_.py")


def test_entry_option(tmp_path):
    src = (CORPUS / "constant-output" / "mean_difference_returns_zero.py").read_text().replace("ModelNew", "Candidate")
    p = tmp_path / "c.py"
    p.write_text(src)
    assert json.loads(run_cli("audit", "--format", "json", str(p)).stdout)["submissions"][0]["verdict"] == "error"
    sub = json.loads(run_cli("audit", "--format", "json", "--entry", "Candidate", str(p)).stdout)["submissions"][0]
    assert sub["verdict"] == "suspect"


def test_rules_and_explain():
    r = run_cli("rules")
    assert r.returncode == 0 and "value-dependent-branch" in r.stdout
    rules = json.loads(run_cli("rules", "--format", "json").stdout)
    assert len(rules) >= 30
    r = run_cli("explain", "unjoined-side-stream")
    assert "## Why it is a hack" in r.stdout
    assert run_cli("explain", "nope").returncode == 2


def test_no_progress_bar_in_machine_output():
    r = run_cli("audit", "--format", "json", str(CORPUS / "legit"))
    json.loads(r.stdout)
    assert "\r" not in r.stdout and "files/s" not in r.stdout


def test_jobs_gives_same_results():
    one = json.loads(run_cli("audit", "--format", "json", "--jobs", "1", str(CORPUS)).stdout)
    two = json.loads(run_cli("audit", "--format", "json", "--jobs", "2", str(CORPUS)).stdout)
    assert [s["verdict"] for s in one["submissions"]] == [s["verdict"] for s in two["submissions"]]


def test_corpus_stats_command():
    r = run_cli("corpus-stats", "--format", "json")
    stats = json.loads(r.stdout)
    assert r.returncode == 0 and not stats["problems"]
    assert stats["hack_types_covered"] >= 24


def test_a_closed_pipe_ends_the_command_quietly():
    """`hackscan rules | head -1` once head has gone: the write meets a pipe with no reader (its
    read end closed before the command starts, so the test does not race the command). No
    traceback, the shell's SIGPIPE status."""
    import os
    import subprocess
    import sys

    r, w = os.pipe()
    os.close(r)
    p = subprocess.Popen([sys.executable, "-m", "hackscan", "rules"], stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    err = p.stderr.read().decode()
    rc = p.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert rc == 141, rc


def test_ctrl_c_exits_130(monkeypatch, capsys):
    from hackscan import cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_rules", interrupted)
    assert cli.main(["rules"]) == 130
    assert "interrupted" in capsys.readouterr().err


def test_python_dash_m_hackscan_is_the_command():
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "hackscan", "--version"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("hackscan "), r.stderr


def test_a_folder_of_class_model_solutions_is_read_as_candidates(tmp_path, cli):
    """Agent solutions that keep the class name Model and a get_inputs of their own are
    candidates (their kernels tell them apart); a problem file without kernels is not."""
    from conftest import CORPUS

    sols = tmp_path / "solutions"
    sols.mkdir()
    legit = (CORPUS / "legit" / "triton_relu.py").read_text().replace("class ModelNew", "class Model")
    legit += "\n\ndef get_inputs():\n    import torch\n    return [torch.randn(16)]\n"
    for i in range(3):
        (sols / f"sol_{i}.py").write_text(legit)
    (sols / "problem.py").write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
                                     "    def forward(self, x):\n        return torch.relu(x)\n\n\n"
                                     "def get_inputs():\n    return [torch.randn(16)]\n")
    r = cli("audit", str(sols), "--entry", "Model", "--format", "json")
    names = sorted(Path(s["path"]).name for s in json.loads(r.stdout)["submissions"])
    assert names == ["sol_0.py", "sol_1.py", "sol_2.py"], r.stdout[-500:] + r.stderr


def test_every_config_key_the_cli_reads_is_one_the_loader_accepts(tmp_path, cli):
    """One list of keys: the CLI never reads a key that hackscan.toml may not hold."""
    import re

    from hackscan.config import KEYS

    src = (ROOT / "hackscan" / "cli.py").read_text()
    read = set(re.findall(r'cfg\.get\("([a-z-]+)"', src)) | \
        {m.replace("_", "-") for m in re.findall(r'\bst\.([a-z_]+)\b', src) if m not in ("source",)}
    assert read and read <= set(KEYS), sorted(read - set(KEYS))
    (tmp_path / "hackscan.toml").write_text('backend = "local"\ntask-timeout = 60\ndynamic-jobs = 2\n'
                                            'ray-address = "auto"\ntimeout = 300\n')
    legit = CORPUS / "legit" / "triton_relu.py"
    shutil.copy(legit, tmp_path / "cand.py")
    r = cli("audit", "cand.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_progress_bar_fits_an_80_column_terminal(monkeypatch, capsys):
    import os as _os

    from hackscan import cli as _cli

    monkeypatch.setattr("shutil.get_terminal_size", lambda fallback=(80, 24): _os.terminal_size((80, 24)))
    prog = next(v for k, v in vars(_cli).items() if k.lower().lstrip("_") == "progress")(3, True)
    for name in ("a" * 200, "short.py", "kernels/level1/" + "x" * 90 + ".py"):
        prog.step(name)
    prog.close()
    frames = capsys.readouterr().err.split("\r")
    assert frames and all(len(f) <= 79 for f in frames), max(map(len, frames))


def _audit_options() -> dict:
    from hackscan.cli import build_parser

    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return {max(a.option_strings, key=len).lstrip("-"): a for a in sub.choices["audit"]._actions
            if a.option_strings and a.dest != "help"}


def test_every_audit_option_is_a_config_key_or_said_to_be_command_line_only():
    """One table (hackscan.config): every option of `hackscan audit` has the config key of its
    name, or a reason in CLI_ONLY; every key is an option; word-valued options take exactly the
    words the config accepts."""
    from hackscan.config import CHOICES, CLI_ONLY, KEYS

    opts = _audit_options()
    assert not set(KEYS) & set(CLI_ONLY)
    assert set(opts) == set(KEYS) | set(CLI_ONLY), (sorted(set(opts) - set(KEYS) - set(CLI_ONLY)),
                                                    sorted(set(KEYS) | set(CLI_ONLY) - set(opts)))
    for name, action in opts.items():
        if action.choices is not None:
            assert tuple(action.choices) == CHOICES[name], name
    assert set(CHOICES) <= set(KEYS)
    # every key is read from the one settings record (the command line's value, the file's or the default)
    src = (ROOT / "hackscan" / "cli.py").read_text()
    unread = [k for k in KEYS if f"st.{k.replace('-', '_')}" not in src and f'cfg.get("{k}"' not in src]
    assert not unread, unread


def test_the_settings_record_takes_the_command_line_then_the_file_then_the_defaults():
    from hackscan.config import DEFAULTS, KEYS, ConfigError, resolve
    from hackscan.inputs.load import MAX_BYTES

    assert set(DEFAULTS) == set(KEYS) and DEFAULTS["max-bytes"] == MAX_BYTES
    st = resolve({"timeout": 300.0, "format": "json", "select": ["a"]},
                 {"timeout": None, "format": "sarif", "select": ["b,c", "d"], "quiet": False, "jobs": None})
    assert (st.timeout, st.source("timeout")) == (300.0, "config")
    assert (st.format, st.source("format")) == ("sarif", "command line")
    assert st.select == ["b", "c", "d"] and st.source("select") == "command line"
    assert (st.quiet, st.source("quiet")) == (False, "default") and st.fail_on == "medium" and st.jobs == 1
    with pytest.raises(ConfigError, match="format"):
        resolve({}, {"format": "yaml"})
    with pytest.raises(AttributeError):
        _ = st.no_such_key


def test_word_valued_keys_are_checked_when_the_file_is_read(tmp_path, cli):
    # the configuration beside the audited folder, not inside it (one inside is ignored)
    k = tmp_path / "k"
    k.mkdir()
    (tmp_path / "hackscan.toml").write_text('color = "sometimes"\n')
    shutil.copy(CORPUS / "legit" / "triton_relu.py", k / "cand.py")
    r = cli("audit", "k/cand.py", cwd=tmp_path)
    assert r.returncode == 2 and "color must be one of" in r.stderr, r.stderr
    (tmp_path / "hackscan.toml").write_text('quiet = true\nkernels-only = true\nprofile = "generic"\n')
    (k / "plain.py").write_text("def f():\n    return 1\n")
    r = cli("audit", "k", cwd=tmp_path)
    assert r.returncode == 0 and "plain.py" not in r.stdout and "cand.py" not in r.stdout, r.stdout + r.stderr
    r = cli("audit", "k", "--config", "/dev/null", cwd=tmp_path)
    assert "plain.py" in r.stdout + r.stderr, r.stdout + r.stderr


def test_every_format_renders_from_the_results_alone():
    from hackscan.api import scan
    from hackscan.config import CHOICES
    from hackscan.engine import load_rules
    from hackscan.report.formats import FORMATS, render

    assert FORMATS == CHOICES["format"]
    results = [scan((CORPUS / n).read_text(), path=n)
               for n in ("legit/triton_relu.py", "value-special-casing/relu_nonneg_shortcut.py")]
    for fmt in FORMATS:
        out = render(fmt, results, rules=load_rules())
        assert out and out == render(fmt, results, rules=load_rules()), fmt   # pure: the same twice
        if fmt in ("json", "sarif"):
            json.loads(out)
        if fmt == "jsonl":
            assert [json.loads(line)["path"] for line in out.splitlines()] == [r.path for r in results]
    with pytest.raises(ValueError, match="unknown format"):
        render("yaml", results)


def test_prestart_from_the_command_line_or_the_config_reaches_the_dynamic_session(tmp_path, monkeypatch):
    """--prestart N (or `prestart = N` in hackscan.toml) sets the started workers of the audit's
    session; without either, HACKSCAN_PRESTART decides; a negative count is refused by name."""
    pytest.importorskip("torch")
    from hackscan.cli import _dynamic_session, build_parser
    from hackscan.config import ConfigError, resolve

    p = build_parser()

    def session(argv, cfg=None):
        args = p.parse_args(["audit", "x.py", "--device", "cpu", *argv])
        st = resolve(cfg or {}, vars(args))
        s = _dynamic_session(st, "all", "kernelbench")
        try:
            return s.opts.prestart
        finally:
            s.close()

    monkeypatch.setenv("HACKSCAN_PRESTART", "2")
    assert session([]) == 2
    assert session(["--prestart", "0"]) == 0
    assert session([], {"prestart": 3}) == 3
    assert session(["--prestart", "1"], {"prestart": 3}) == 1
    with pytest.raises(ConfigError, match="prestart"):
        resolve({}, vars(p.parse_args(["audit", "x.py", "--prestart", "-1"])))


def test_a_dynamic_runs_progress_names_each_submission_in_flight_and_its_stage(monkeypatch, capsys):
    """Between results the line shows what the session is doing (its own record of stages),
    however few the submissions; disabled (--no-progress, not a terminal) it writes nothing."""
    import time as _time
    import types

    from hackscan.cli import Progress

    session = types.SimpleNamespace(stages={"/x/kernel_a.py": ("reference run", _time.monotonic() - 3)})
    quiet = Progress(1, enabled=False)
    quiet.follow(session)
    quiet.close()
    assert capsys.readouterr().err == ""

    shown = Progress(1, enabled=True)
    shown.follow(session)
    seen = ""
    deadline = _time.monotonic() + 60
    try:
        while "kernel_a.py: reference run for" not in seen and _time.monotonic() < deadline:
            _time.sleep(0.2)
            seen += capsys.readouterr().err
    finally:
        shown.close()
    assert "kernel_a.py: reference run for" in seen and "0/1" in seen
