"""The raw output format: what a worker writes, the auditor reads back bit for bit; a file a
candidate forged is refused, never trusted."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from hackscan.dynamic.tensorfile import MAGIC, BadTensorFile, load_outputs  # noqa: E402


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    """The worker is standalone (it imports nothing from hackscan): its functions are tested as
    the runner loads them, from a copy of the package."""
    from conftest import standalone_worker

    return standalone_worker(tmp_path_factory.mktemp("worker"))


def test_round_trip_of_every_dtype_and_values(worker, tmp_path):
    outs = [torch.randn(3, 5), torch.randn(2, 2, dtype=torch.float64), torch.randn(7).half(),
            torch.randn(4).bfloat16(), torch.arange(5), torch.tensor([True, False]), torch.randn(3, dtype=torch.complex64),
            torch.empty(0, 3), torch.tensor(2.5), torch.randn(4, 6).t(), 3.0, 7, None, float("nan")]
    name = worker._save_outputs(torch, outs, str(tmp_path / "out_x"))
    assert name.endswith(".raw")
    back = load_outputs(tmp_path / name)
    assert len(back) == len(outs)
    for a, b in zip(outs, back):
        if isinstance(a, torch.Tensor):
            assert b.dtype == a.dtype and b.shape == a.shape and b.is_contiguous()
            assert torch.equal(a.contiguous().view(-1).view(torch.uint8) if a.numel() else a, b.reshape(-1).view(
                torch.uint8) if b.numel() else b)
        elif a != a:
            assert b != b
        else:
            assert b == a and type(b) is type(a)


def test_outputs_written_again_byte_for_byte_name_the_earlier_file(worker, tmp_path, monkeypatch):
    """A full-size problem's candidate called fifteen times on the visible inputs wrote its
    outputs fifteen times, and its disk budget ran out before the hidden sets: a call whose
    outputs are those of an earlier call, bit for bit, names the earlier file. Outputs that differ
    in one element, or in dtype or shape alone, get a file of their own."""
    monkeypatch.setattr(worker, "_WRITTEN", {})
    monkeypatch.setitem(worker._DISK, "budget", None)
    monkeypatch.setitem(worker._DISK, "used", 0)
    big = torch.randn(1 << 19)    # 2 MiB
    first = worker._save_outputs(torch, [big, 3], str(tmp_path / "out_visible_fp32_0"))
    used = worker._DISK["used"]
    assert worker._save_outputs(torch, [big.clone(), 3], str(tmp_path / "out_visible_fp32_1")) == first
    assert worker._DISK["used"] == used and not list(tmp_path.glob("out_visible_fp32_1*"))
    other = big.clone()
    other[-1] += 1
    names = {worker._save_outputs(torch, [other, 3], str(tmp_path / "out_visible_fp32_2")),
             worker._save_outputs(torch, [big, 4], str(tmp_path / "out_visible_fp32_3")),
             worker._save_outputs(torch, [big.view(2, -1), 3], str(tmp_path / "out_visible_fp32_4")),
             worker._save_outputs(torch, [big.view(torch.int32), 3], str(tmp_path / "out_visible_fp32_5"))}
    assert first not in names and len(names) == 4
    assert torch.equal(load_outputs(tmp_path / first)[0], big)
    assert torch.equal(load_outputs(tmp_path / "out_visible_fp32_2.raw")[0], other)
    # an earlier file gone (the auditor's to remove) is written again, never named
    (tmp_path / first).unlink()
    assert worker._save_outputs(torch, [big, 3], str(tmp_path / "out_visible_fp32_6")) == "out_visible_fp32_6.raw"


def test_small_and_first_visible_outputs_are_kept_past_the_disk_budget(worker, tmp_path, monkeypatch):
    """A Huber loss on 8 GiB inputs: the visible set took the disk budget on its own, and the
    reference's scalar output was then refused (no comparison at all, yet `clean`). Outputs of a
    few bytes, and the required ones, go past the budget; large optional ones do not."""
    monkeypatch.setattr(worker, "_WRITTEN", {})
    monkeypatch.setitem(worker._DISK, "budget", 1 << 10)
    monkeypatch.setitem(worker._DISK, "used", 1 << 20)
    assert worker._save_outputs(torch, [torch.tensor(1.5)], str(tmp_path / "out_a")).endswith(".raw")
    big = torch.randn(1 << 19)
    with pytest.raises(worker.OutputsNotKept, match="disk budget"):
        worker._save_outputs(torch, [big], str(tmp_path / "out_b"))
    assert worker._save_outputs(torch, [big], str(tmp_path / "out_c"), required=True) == "out_c.raw"


def test_what_the_raw_format_cannot_hold_goes_through_torch_save(worker, tmp_path):
    outs = [torch.randn(2), ("nested", torch.randn(1))]
    name = worker._save_outputs(torch, outs, str(tmp_path / "out_y"))
    assert name.endswith(".pt")
    back = load_outputs(tmp_path / name)
    assert torch.equal(back[0], outs[0]) and back[1][0] == "nested"


def forged(tmp_path, header, payload=b""):
    head = json.dumps(header).encode()
    start = len(MAGIC) + 8 + len(head)
    p = tmp_path / "forged.raw"
    p.write_bytes(MAGIC + len(head).to_bytes(8, "little") + head + b"\0" * (-(-start // 64) * 64 - start) + payload)
    return p


@pytest.mark.parametrize("header", [
    [{"t": "float32", "shape": [1 << 40], "offset": 0, "nbytes": 4 << 40}],     # claims more than the file holds
    [{"t": "float32", "shape": [4], "offset": 0, "nbytes": 8}],                  # size and shape disagree
    [{"t": "object", "shape": [1], "offset": 0, "nbytes": 8}],                   # not a tensor dtype
    [{"t": "float32", "shape": [-1], "offset": 0, "nbytes": 4}],
    [{"t": "float32", "shape": [1], "offset": 3, "nbytes": 4}],                  # misaligned
    [{"v": "__import__('os')"}],                                                 # a value that is not a number
    {"not": "a list"},
])
def test_forged_headers_are_refused(tmp_path, header):
    with pytest.raises(BadTensorFile):
        load_outputs(forged(tmp_path, header, b"\0" * 64))


def test_a_file_that_is_not_an_output_file_is_refused(tmp_path):
    p = tmp_path / "x.raw"
    p.write_bytes(b"PK\x03\x04 something else entirely")
    with pytest.raises(BadTensorFile):
        load_outputs(p)


def test_a_references_outputs_are_mapped_from_their_file_not_copied(worker, tmp_path):
    """Mapped: the same values, pages of the (unlinked) file rather than the auditor's own
    memory, and a write to the tensor never reaches the file (copy on write)."""
    outs = [torch.randn(512, 512), torch.randn(64, dtype=torch.float64), torch.arange(9), 2.0]
    name = worker._save_outputs(torch, outs, str(tmp_path / "out_m"))
    back = load_outputs(tmp_path / name, mapped=True)
    for a, b in zip(outs, back):
        assert torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b
    (tmp_path / name).unlink()          # the auditor removes the file once read
    maps = open("/proc/self/maps").read()
    assert f"{tmp_path / name} (deleted)" in maps
    back[0][0, 0] = 1e9
    assert torch.equal(back[1], outs[1]) and back[0][1, 1] == outs[0][1, 1]
    copied = load_outputs(tmp_path / worker._save_outputs(torch, outs, str(tmp_path / "out_c")))
    assert str(tmp_path / "out_c") not in open("/proc/self/maps").read() and torch.equal(copied[0], outs[0])
