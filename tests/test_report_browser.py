"""The HTML reports in a real headless browser (Debian's chromium; skipped where it is not
installed: `.ci/run` installs it): the page loads from a file with the network off, the browser's
DOM holds the tables and plots, and the screenshot is not blank."""
from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(BROWSER is None, reason="no chromium installed (apt-get install chromium)")]

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--hide-scrollbars"]


def browse(page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([BROWSER, *FLAGS, f"--user-data-dir={tmp / 'profile'}", *extra, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


def png_pixels(path: Path) -> tuple[int, int, set]:
    """Width, height and the distinct pixel rows of an 8-bit RGB(A) PNG (enough to tell a
    rendered page from a blank one)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    w = h = 0
    channels = 4
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", body[:10])
            channels = {2: 3, 6: 4}[color]
            assert depth == 8
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * channels + 1
    rows, prev = set(), bytearray(w * channels)
    for y in range(h):
        f, line = raw[y * stride], bytearray(raw[y * stride + 1:(y + 1) * stride])
        for i in range(len(line)):   # undo the PNG row filters
            a = line[i - channels] if i >= channels else 0
            b, c = prev[i], prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.add(bytes(line))
        prev = line
    return w, h, rows


def check_in_browser(page: Path, tmp: Path, must: list[str]) -> str:
    dom = browse(page, tmp, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-1500:]
    for m in must:
        assert m in dom.stdout, (m, dom.stdout[:2000])
    shot = tmp / (page.stem + ".png")
    r = browse(page, tmp, f"--screenshot={shot}", "--window-size=1200,1600")
    assert r.returncode == 0 and shot.is_file(), r.stderr[-1500:]
    w, h, rows = png_pixels(shot)
    assert (w, h) == (1200, 1600)
    assert len(rows) > 50, "the screenshot is (nearly) blank"
    return dom.stdout


@pytest.mark.dynamic
def test_audit_report_in_the_browser(tmp_path):
    from test_report_html import rec

    from hackscan.findings import SubmissionResult
    from hackscan.measure.assess import assess
    from hackscan.report import html

    side = dict(assess(rec(2.8, event=0.1, naive=0.06), rec(2.9), rec(0.4)), status="measured")
    fair = dict(assess(rec(1.77), rec(2.88), rec(0.40)), status="measured")
    results = [SubmissionResult(path="side_stream.py", verdict="violation", reasons=("x",), hack_types=("side-stream",),
                                findings=(), measure=side),
               SubmissionResult(path="triton_mm.py", verdict="clean", reasons=(), hack_types=(), findings=(), measure=fair)]
    page = tmp_path / "audit.html"
    page.write_text(html.render(results, policy="kernelbench", dynamic="all"))
    dom = check_in_browser(page, tmp_path, ["<h1>hackscan audit</h1>", "claimed against fair speedup",
                                            "side-stream-evasion", "triton_mm.py"])
    assert dom.count("<circle") == 2          # one point per measured submission, drawn by the browser


RELU_REF = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)

def get_inputs():
    return [torch.randn(64, 256)]

def get_init_inputs():
    return []
"""

HONEST = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.clamp_min(x, 0.0)
"""


@pytest.mark.dynamic
def test_clean_report_with_measurement_in_the_browser(tmp_path):
    """`hackscan clean --measure all` on CPU: the rows' measurements land in results.jsonl and the
    report plots them (claimed against fair speedup, memory ratios)."""
    ds = tmp_path / "rows.jsonl"
    with open(ds, "w") as fh:
        for i, code in enumerate([HONEST, HONEST.replace("torch.clamp_min(x, 0.0)", "x.relu()")]):
            fh.write(json.dumps({"id": f"r{i}", "code": textwrap.dedent(code), "reference": textwrap.dedent(RELU_REF)})
                     + "\n")
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "hackscan.cli", "clean", str(ds), "--out", str(out), "--measure", "all",
                        "--no-progress"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert all(r["measure"]["status"] == "measured" and r["measure"]["fair"] > 0 for r in lines), lines
    dom = check_in_browser(out / "report.html", tmp_path, ["<h1>hackscan clean</h1>", "Measurement (2 rows)",
                                                           "claimed against fair speedup"])
    assert dom.count("<circle") == 2
