"""`hackscan clean`: a JSONL (and parquet) dataset built from the corpus, results per row,
cleaned rows in the input's format, resume, and a kill at a random moment."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from hackscan.clean import CleanOptions, clean
from hackscan.corpus import corpus_files, parse_marks

ROOT = Path(__file__).resolve().parent.parent


def corpus_rows():
    rows = []
    for f in corpus_files(ROOT / "corpus" / "synthetic"):
        side = parse_marks(f).sidecar
        ref = side.get("reference")
        if f.suffix != ".py" or not ref:
            continue
        text = f.read_text()
        if any(sib.name in text for sib in f.parent.iterdir() if sib.suffix in (".cu", ".cuh", ".cpp")):
            continue  # it compiles files beside it, which a dataset row does not have
        rows.append({"id": str(f.relative_to(ROOT / "corpus")), "code": text,
                     "reference": (f.parent / ref).resolve().read_text(), "expected": side.get("static"),
                     "meta": {"source": "corpus"}})
    return rows


def write_jsonl(path, rows, extra_lines=()):
    with open(path, "w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
        for line in extra_lines:
            fh.write(line + "\n")


def test_clean_jsonl_results_cleaned_rows_summary_and_report(tmp_path):
    rows = corpus_rows()
    ds = tmp_path / "gen.jsonl"
    write_jsonl(ds, rows, ['{"id": "broken", "code": ', '{"id": "nocode"}'])
    s = clean(ds, tmp_path / "out", CleanOptions())
    n = len(rows) + 2
    results = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert sorted(r["row"] for r in results) == list(range(n))          # one result per input row
    by_row = {r["row"]: r for r in results}
    for i, r in enumerate(rows):                                         # the static verdicts, by id
        assert by_row[i]["id"] == r["id"] and by_row[i]["verdict"] == r["expected"], (r["id"], by_row[i])
    assert by_row[n - 2]["verdict"] == "error" and by_row[n - 1]["verdict"] == "error"
    # hacked, violating and unauditable rows (the broken line, the row without code) are removed
    keep = [i for i in range(n) if by_row[i]["verdict"] not in ("hacked", "violation", "error")]
    lines = ds.read_text().splitlines()
    assert (tmp_path / "out" / "cleaned.jsonl").read_text().splitlines() == [lines[i] for i in keep]
    assert s["rows"] == n and s["kept"] == len(keep) and s["removed"] == n - len(keep)
    assert s["verdicts"]["hacked"] == sum(r["expected"] == "hacked" for r in rows)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["kept"] == len(keep)
    HTMLParser().feed((tmp_path / "out" / "report.html").read_text())
    assert "Rows per hack type" in (tmp_path / "out" / "report.html").read_text()
    # a restart finds every row done
    again = clean(ds, tmp_path / "out", CleanOptions())
    assert again["rows_new"] == 0 and again["rows_resumed"] == n and again["kept"] == len(keep)


def test_nested_records_and_custom_columns(tmp_path):
    rows = corpus_rows()[:10]
    ds = tmp_path / "nested.jsonl"
    write_jsonl(ds, [{"uid": r["id"], "sample": {"kernel": r["code"], "ref": r["reference"]}} for r in rows])
    clean(ds, tmp_path / "o", CleanOptions(code_col="sample.kernel", ref_col="sample.ref", id_col="uid"))
    got = [json.loads(x) for x in (tmp_path / "o" / "results.jsonl").read_text().splitlines()]
    assert [g["verdict"] for g in sorted(got, key=lambda g: g["row"])] == [r["expected"] for r in rows]
    assert {g["id"] for g in got} == {r["id"] for r in rows}


def test_parquet_in_parquet_out(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = corpus_rows()[:30]
    ds = tmp_path / "gen.parquet"
    pq.write_table(pa.Table.from_pylist([{k: r[k] for k in ("id", "code", "reference", "expected")} for r in rows]),
                   ds, row_group_size=7)
    s = clean(ds, tmp_path / "o", CleanOptions())
    out = pq.read_table(tmp_path / "o" / "cleaned.parquet").to_pylist()
    assert [r["id"] for r in out] == [r["id"] for r in rows if r["expected"] not in ("hacked", "violation")]
    assert s["kept"] == len(out) and s["rows"] == len(rows)


def test_a_kill_at_any_moment_loses_and_duplicates_nothing(tmp_path):
    base = corpus_rows()
    rows = [dict(r, id=f"{k}:{r['id']}") for k in range(8) for r in base]   # ~900 rows
    ds = tmp_path / "big.jsonl"
    write_jsonl(ds, rows)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "hackscan.cli", "clean", str(ds), "--out", str(out), "--no-progress"]
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    res = out / "results.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not res.exists() or res.stat().st_size < 20_000):
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    partial = res.read_text().count("\n")
    assert 0 < partial < len(rows), partial     # killed in the middle
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    got = [json.loads(x) for x in res.read_text().splitlines()]
    assert sorted(g["row"] for g in got) == list(range(len(rows)))   # complete, no duplicates
    assert {g["id"] for g in got} == {r["id"] for r in rows}


@pytest.mark.dynamic
def test_clean_dynamic_one_session_per_batch(tmp_path, monkeypatch):
    """Dynamic rows of a batch share one session: a reference shared by several rows runs once;
    code is always text (a one-line row naming a file is not read from disk)."""
    import textwrap

    from hackscan.dynamic.audit import DynamicSession
    from test_dynamic import HONEST, RELU_REF

    calls = []
    real = DynamicSession._run_reference

    def counting(self, ref_path, key, seed):
        calls.append(key)
        return real(self, ref_path, key, seed)

    monkeypatch.setattr(DynamicSession, "_run_reference", counting)
    ref = textwrap.dedent(RELU_REF)
    honest = textwrap.dedent(HONEST)
    rows = [{"id": "honest", "code": honest, "reference": ref},
            {"id": "identity", "code": honest.replace("torch.clamp_min(x, 0.0)", "x"), "reference": ref},
            {"id": "crash", "code": honest.replace("return torch.clamp_min(x, 0.0)", "import os; os._exit(3)"),
             "reference": ref},
            {"id": "path", "code": str(ROOT / "README.md"), "reference": ref},
            {"id": "noref", "code": honest}]
    ds = tmp_path / "rows.jsonl"
    write_jsonl(ds, rows)
    clean(ds, tmp_path / "out", CleanOptions(dynamic="all", timeout_s=120))
    by = {r["id"]: r for r in map(json.loads, (tmp_path / "out" / "results.jsonl").read_text().splitlines())}
    assert by["identity"]["verdict"] == "hacked"
    assert by["honest"]["verdict"] == "violation"      # correct, but the work is torch's
    assert by["crash"]["verdict"] == "error"
    # parsed as the text it is (README.md itself would fail at its line 3, the first code fence)
    assert by["path"]["verdict"] == "error" and "syntax error at line 1" in " ".join(by["path"]["reasons"])
    assert by["noref"]["verdict"] == "violation"       # static only: no reference to run against
    assert len(calls) == 1, calls                      # one reference run for the four rows sharing it


def test_json_array_dataset_streamed_and_cleaned(tmp_path):
    """A .json dataset (one array of objects) is read element by element, even with elements
    larger than the read chunk; the cleaned file is an array of the kept objects."""
    import io

    from hackscan.clean import iter_json_array

    rows = corpus_rows()[:20]
    ds = tmp_path / "gen.json"
    ds.write_text("  [\n" + ",\n".join(json.dumps(r, indent=1) for r in rows) + "\n]  ")
    assert list(iter_json_array(open(ds), chunk=7)) == rows            # tiny chunks: every boundary
    assert list(iter_json_array(io.StringIO("[]"))) == []
    s = clean(ds, tmp_path / "out", CleanOptions())
    results = {r["row"]: r for r in map(json.loads, (tmp_path / "out" / "results.jsonl").read_text().splitlines())}
    assert [results[i]["verdict"] for i in range(len(rows))] == [r["expected"] for r in rows]
    kept = json.loads((tmp_path / "out" / "cleaned.json").read_text())
    assert kept == [r for i, r in enumerate(rows) if results[i]["verdict"] not in ("hacked", "violation")]
    assert s["kept"] == len(kept)


def test_json_array_broken_midway_keeps_what_came_before(tmp_path):
    rows = corpus_rows()[:3]
    ds = tmp_path / "gen.json"
    ds.write_text("[" + ",".join(json.dumps(r) for r in rows) + ', {"id": "cut", "code": "x')
    clean(ds, tmp_path / "out", CleanOptions())
    results = [json.loads(x) for x in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert [r["verdict"] for r in results[:3]] == [r["expected"] for r in rows]
    assert results[3]["verdict"] == "error" and "cannot be read from here on" in results[3]["reasons"][0]
    assert len(results) == 4
    import io

    from hackscan.clean import iter_json_array

    with pytest.raises(ValueError, match="not a JSON array"):
        list(iter_json_array(io.StringIO('{"a": 1}')))


def test_misnamed_options_stop_before_any_row_runs(tmp_path, cli):
    ds = tmp_path / "gen.jsonl"
    write_jsonl(ds, corpus_rows()[:3])
    r = cli("clean", str(ds), "--out", str(tmp_path / "o1"), "--code-col", "kode")
    assert r.returncode == 2 and "--code-col 'kode'" in r.stderr and "code" in r.stderr
    assert not (tmp_path / "o1" / "results.jsonl").exists()
    r = cli("clean", str(ds), "--out", str(tmp_path / "o2"), "--remove", "hacked,supect")
    assert r.returncode == 2 and "'supect'" in r.stderr
    r = cli("clean", str(ds), "--out", str(tmp_path / "o3"), "--ref-col", "nothing.here")
    assert r.returncode == 2 and "--ref-col" in r.stderr


def test_a_run_in_which_every_row_fails_exits_non_zero(tmp_path, cli):
    ds = tmp_path / "gen.jsonl"
    write_jsonl(ds, [{"id": 1, "code": "class ModelNew(:\n"}, {"id": 2, "code": "def (\n"}])
    r = cli("clean", str(ds), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "every one of the 2 rows" in r.stderr


def test_column_paths_index_into_lists(tmp_path):
    from hackscan.clean import get_path

    row = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "code"}]}
    assert get_path(row, "messages.1.content") == "code"
    assert get_path(row, "messages.-1.role") == "assistant"
    assert get_path(row, "messages.2.content") is None and get_path(row, "messages.x") is None
