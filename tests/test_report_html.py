"""The HTML report: self-contained, well-formed, escaped, and showing the measurement."""
from __future__ import annotations

import subprocess
import sys

import pytest
from html.parser import HTMLParser

from hackscan.findings import Finding, Location, SubmissionResult
from hackscan.measure.assess import assess
from hackscan.report import html

VOID = {"meta", "br", "hr", "img", "input", "link", "rect", "line", "circle"}


class Checker(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.tags, self.text = [], [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse(doc):
    c = Checker()
    c.feed(doc)
    c.close()
    assert not c.errors and not c.stack, (c.errors, c.stack)
    return c


def rec(ms, event=None, naive=None):
    return {"fair_ms": [ms * (1 + 0.001 * i) for i in range(30)], "event_ms": [event or ms] * 30,
            "naive_ms": [naive or ms] * 30, "empty": {"event_ms": 0.005, "sync_ms": 0.015}, "checks": [],
            "memory": {"peak_allocated": 1 << 20, "peak_reserved": 1 << 21, "outside_allocator": 0}}


@pytest.mark.dynamic
def test_report_is_self_contained_well_formed_and_escaped():
    evil = '<script>alert("x")</script>.py'
    f = Finding(rule_id="torch-op-on-return-path", hack_type="torch-fallback", category="static", severity="high",
                confidence="high", message="returns <torch.relu> & friends", location=Location(evil, 3),
                snippet="return torch.relu(x)  # </pre><script>")
    side = dict(assess(rec(2.8, event=0.1, naive=0.06), rec(2.9), rec(0.4)), status="measured")
    fair = dict(assess(rec(1.77), rec(2.88), rec(0.40)), status="measured")
    results = [SubmissionResult(path=evil, verdict="violation", reasons=("torch-op-on-return-path: <b>",),
                                hack_types=("torch-fallback",), findings=(f,), measure=side),
               SubmissionResult(path="ok.py", verdict="clean", reasons=(), hack_types=(), findings=(), measure=fair)]
    doc = html.render(results, policy="kernelbench", dynamic="all")
    c = parse(doc)
    names = [t for t, _ in c.tags]
    assert "script" not in names and "link" not in names
    assert not any(a.get("src") or (a.get("href") or "").startswith("http") for _, a in c.tags)
    text = "".join(c.text)
    assert evil in text and "<torch.relu>" in text          # shown as text, not markup
    # the measurement: a scatter of claimed against fair speedup, the table with the flags
    assert any(t == "svg" and a.get("aria-label") == "claimed against fair speedup" for t, a in c.tags)
    assert "side-stream-evasion" in text and "0.23x" in text and "1.63x" in text


def test_cli_writes_the_html_report_for_the_demo_corpus(tmp_path):
    out = tmp_path / "report.html"
    p = subprocess.run([sys.executable, "-m", "hackscan.cli", "audit", "--dynamic", "off", "--format", "html",
                        "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stderr  # the demo holds hacks
    c = parse(out.read_text())
    text = "".join(c.text)
    assert "legit/triton_relu.py" in text and "hacked" in text
    assert any(t == "svg" and a.get("aria-label") == "submissions per hack type" for t, a in c.tags)
