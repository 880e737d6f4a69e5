"""`hackscan report`: the re-evaluation table computed from measured results as users hold them."""
from __future__ import annotations

import json
import math

from hackscan.report.aggregate import aggregate, load


def _sub(ident, verdict, fair, claimed, mem=None, compiled=None, flags=(), counted=True):
    m = {"status": "measured", "speedup": {"fair": fair, "naive": claimed, "vs_strict": claimed,
                                           "vs_compiled": compiled},
         "flags": [{"flag": f, "detail": ""} for f in flags], "counted": counted}
    if mem is not None:
        m["memory"] = {"ratio": mem}
    return {"id": ident, "path": f"{ident}.py", "verdict": verdict, "measure": m}


SUBS = [_sub("lb-l1p1-a", "clean", 2.0, 3.0, mem=1.2, compiled=1.5),
        _sub("lb-l1p2-b", "clean", 0.5, 1.6, mem=0.8, compiled=0.4),
        _sub("kbc-x-c", "clean", 1.0, 1.0, compiled=0.9),
        _sub("lb-l2p3-d", "hacked", 4.0, 40.0, mem=2.0, flags=("repeat-only-speed",), counted=False)]


def _gm(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))


def test_the_table_from_an_audit_document(tmp_path, cli):
    doc = tmp_path / "audit.json"
    doc.write_text(json.dumps({"submissions": SUBS}))
    r = cli("report", str(doc), "--format", "json")
    assert r.returncode == 0, r.stderr
    t = json.loads(r.stdout)["table"]
    fair = [s["measure"]["speedup"]["fair"] for s in SUBS]
    assert math.isclose(t["all"]["geomean_fair"], _gm(fair))
    assert math.isclose(t["all"]["geomean_claimed_of_measured"], _gm([s["measure"]["speedup"]["naive"] for s in SUBS]))
    assert t["all"]["share_faster_than_tf32"] == sum(f > 1 for f in fair) / len(fair)
    mem = [s["measure"]["memory"]["ratio"] for s in SUBS if "memory" in s["measure"]]
    assert math.isclose(t["all"]["share_more_memory"], sum(m > 1 for m in mem) / len(mem))
    # the hacked kernel's 4x is counted apart from the clean ones
    assert math.isclose(t["clean"]["geomean_fair"], _gm(fair[:3]))
    assert t["not_clean"]["measured"] == 1 and t["not_clean"]["share_flagged"] == 1.0
    # torch.compile's baseline covers 3 of the 4: its geomean and share over those, and their count
    comp = [s["measure"]["speedup"]["vs_compiled"] for s in SUBS if s["measure"]["speedup"]["vs_compiled"]]
    assert t["all"]["with_compiled"] == 3 and math.isclose(t["all"]["geomean_vs_compiled"], _gm(comp))
    assert t["all"]["share_faster_than_compiled"] == sum(c > 1 for c in comp) / 3
    assert t["not_clean"]["with_compiled"] == 0 and t["not_clean"]["share_faster_than_compiled"] is None
    assert set(t["groups"]["level"]) == {"1", "2", "?"} and t["groups"]["level"]["1"]["measured"] == 2
    assert set(t["groups"]["source"]) == {"lb", "kbc"}
    text = cli("report", str(doc)).stdout
    assert "all kernels" in text and f"{_gm(fair):.2f}x" in text


def test_jsonl_lines_that_are_not_submissions_are_noted_and_the_rest_counted(tmp_path):
    f = tmp_path / "run.jsonl"
    f.write_text("\n".join([json.dumps(SUBS[0]), "{not json", json.dumps({"x": 1}), json.dumps(SUBS[1])]) + "\n")
    rows, notes = load([f])
    assert [r.id for r in rows] == ["lb-l1p1-a", "lb-l1p2-b"]
    assert len(notes) == 2 and "not JSON" in notes[0]


def test_a_problem_under_a_suite_of_its_own_is_grouped_by_the_suite(tmp_path):
    f = tmp_path / "run.jsonl"
    recs = [{"id": "kbc-20260610-01", "verdict": "clean", "problem": "KB-Hard/03_paged_attention"},
            {"id": "x-1", "verdict": "clean", "problem": "L2/17_conv_relu"},
            {"id": "x-2", "verdict": "clean"}]
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    rows, _ = load([f])
    assert [r.level for r in rows] == ["KB-Hard", "2", "?"]


def test_kernelbench_eval_results_give_the_claim_of_correct_samples(tmp_path):
    run = tmp_path / "runs" / "level2_run"
    run.mkdir(parents=True)
    (run / "eval_results.json").write_text(json.dumps({
        "1": [{"sample_id": 0, "compiled": True, "correctness": True, "runtime": 1.0, "ref_runtime": 2.0}],
        "2": {"0": {"compiled": True, "correctness": True, "runtime": 4.0, "ref_runtime": 2.0}},
        "3": [{"sample_id": 0, "compiled": True, "correctness": False, "runtime": 0.1, "ref_runtime": 2.0}]}))
    rows, _ = load([run])
    t = aggregate(rows)
    assert t["all"]["kernels"] == 3 and t["all"]["with_claim"] == 2 and t["all"]["measured"] == 0
    assert math.isclose(t["all"]["geomean_claimed"], _gm([2.0, 0.5]))
    assert set(t["groups"]["level"]) == {"2"}


def test_html_has_the_plots_and_escapes_what_it_quotes(tmp_path, cli):
    subs = SUBS + [_sub("<script>alert(1)</script>", "clean", 1.5, 2.0, mem=3.0)]
    doc = tmp_path / "audit.json"
    doc.write_text(json.dumps({"submissions": subs}))
    out = tmp_path / "r.html"
    r = cli("report", str(doc), "--format", "html", "--out", str(out))
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'aria-label="claimed against fair speedup"' in html and 'aria-label="memory footprint ratio histogram"' in html


def test_a_candidate_that_allocates_nothing_has_a_memory_ratio_of_zero(tmp_path, cli):
    """Found on the H200: kernels whose buffers are made before the call allocate nothing during
    it (ratio 0). That is a reading: counted as not more memory, and drawn in the histogram."""
    subs = [_sub("lb-l1p1-a", "clean", 2.0, 3.0, mem=0.0), _sub("lb-l1p2-b", "clean", 1.0, 1.0, mem=2.0)]
    doc = tmp_path / "audit.json"
    doc.write_text(json.dumps({"submissions": subs}))
    rows, _ = load([doc])
    assert [r.memory_ratio for r in rows] == [0.0, 2.0]
    assert aggregate(rows)["all"]["share_more_memory"] == 0.5
    r = cli("report", str(doc), "--format", "html", "--out", str(tmp_path / "r.html"))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.html").read_text().count("<rect") >= 2


def test_unreadable_input_is_a_clear_error(tmp_path, cli):
    bad = tmp_path / "x.json"
    bad.write_text('{"hello": 1}')
    r = cli("report", str(bad))
    assert r.returncode == 2 and "neither an audit document" in r.stderr
    r = cli("report", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and "no such file" in r.stderr
    r = cli("report", str(bad), "--group-by", "model")
    assert r.returncode == 2 and "--group-by" in r.stderr


def test_a_kernel_measured_again_counts_once_as_its_last_record(tmp_path, cli):
    first, again = tmp_path / "run.jsonl", tmp_path / "remeasure.jsonl"
    first.write_text("".join(json.dumps(s) + "\n" for s in SUBS))
    redone = _sub("lb-l1p2-b", "clean", 1.25, 1.7, mem=0.9, compiled=1.1)
    again.write_text(json.dumps(redone) + "\n")
    rows, notes = load([first, again])
    assert sorted(r.id for r in rows) == sorted(s["id"] for s in SUBS)
    assert next(r for r in rows if r.id == "lb-l1p2-b").fair == 1.25
    assert any("replaced by their last record" in n for n in notes)
    t = json.loads(cli("report", str(first), str(again), "--format", "json").stdout)["table"]
    assert t["all"]["measured"] == len(SUBS)
    assert math.isclose(t["clean"]["geomean_fair"], _gm([2.0, 1.25, 1.0]))
    # the order given decides: the first run named last wins
    rows, _ = load([again, first])
    assert next(r for r in rows if r.id == "lb-l1p2-b").fair == 0.5


def test_the_same_problem_of_two_kernelbench_runs_is_two_kernels(tmp_path):
    for run in ("run_a", "run_b"):
        d = tmp_path / "level1" / run
        d.mkdir(parents=True)
        (d / "eval_results.json").write_text(json.dumps(
            {"1": [{"sample_id": 0, "compiled": True, "correctness": True, "runtime": 1.0, "ref_runtime": 2.0}]}))
    rows, notes = load([tmp_path / "level1" / "run_a", tmp_path / "level1" / "run_b"])
    assert len(rows) == 2 and not any("replaced" in n for n in notes)


def test_each_kernel_says_how_close_it_comes_to_the_physical_floor(tmp_path, cli):
    near = _sub("lb-l1p5-e", "clean", 1.1, 1.2)
    near["measure"]["candidate"] = {"median_ms": 0.5}
    near["measure"]["floor"] = {"seconds": 2e-4, "bound": "memory"}
    far = _sub("lb-l1p6-f", "clean", 0.9, 1.0)
    far["measure"]["candidate"] = {"median_ms": 8.0}
    far["measure"]["floor"] = {"seconds": 1e-4, "bound": "compute"}
    doc = tmp_path / "audit.json"
    doc.write_text(json.dumps({"submissions": [near, far, SUBS[0]]}))
    rows, _ = load([doc])
    by = {r.id: r for r in rows}
    assert math.isclose(by["lb-l1p5-e"].floor_share, 0.4) and by["lb-l1p5-e"].floor_bound == "memory"
    assert math.isclose(by["lb-l1p6-f"].floor_share, 0.0125) and by["lb-l1p6-f"].floor_bound == "compute"
    assert by["lb-l1p1-a"].floor_share is None       # no floor recorded: none invented
    kernels = {k["id"]: k for k in json.loads(cli("report", str(doc), "--format", "json").stdout)["kernels"]}
    assert math.isclose(kernels["lb-l1p5-e"]["floor_share"], 0.4)
    out = tmp_path / "r.html"
    assert cli("report", str(doc), "--format", "html", "--out", str(out)).returncode == 0
    html = out.read_text()
    assert "<th>of floor</th>" in html and "40% (memory)" in html and "1% (compute)" in html
