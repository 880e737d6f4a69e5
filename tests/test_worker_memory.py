"""What a worker keeps in host memory: loaded input sets stay only while they fit in the cap
(a full-size problem's fifteen 8 GiB sets once filled a 128 GiB host and the kernel's OOM killer
ended the reference), the set in use always stays, and a dropped set reads back the same."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from hackscan.dynamic.worker import tensorfiles as worker  # noqa: E402


def _write(tmp_path, names, numel):
    for k, n in enumerate(names):
        torch.save([torch.full((numel,), float(k))], tmp_path / f"in_{n}.pt")


def test_loaded_sets_are_kept_within_the_cap_least_recently_used_first(tmp_path):
    _write(tmp_path, ["a", "b", "c"], 1024)            # 4 KiB each
    sets = worker._LazySets(torch, str(tmp_path), cap=9 * 1024)   # room for two
    assert float(sets["a"][0][0]) == 0.0 and float(sets["b"][0][0]) == 1.0
    sets["a"]                                          # a is now the most recently used
    assert float(sets["c"][0][0]) == 2.0
    assert set(sets) == {"a", "c"}, "b, least recently used, goes to make room for c"
    assert float(sets["b"][0][0]) == 1.0 and sets.reloads == 1, "a dropped set reads back the same"
    assert set(sets) == {"c", "b"}


def test_a_set_larger_than_the_cap_is_still_kept_while_in_use(tmp_path):
    _write(tmp_path, ["big", "small"], 4096)
    sets = worker._LazySets(torch, str(tmp_path), cap=1024)
    assert sets["big"][0].numel() == 4096 and set(sets) == {"big"}
    sets["small"]
    assert set(sets) == {"small"} and sets.reloads == 0


def test_the_default_cap_follows_the_hosts_available_memory():
    cap = worker.host_cache_bytes()
    assert cap >= 256 << 20
    try:
        with open("/proc/meminfo") as fh:
            avail = next(int(x.split()[1]) * 1024 for x in fh if x.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        pytest.skip("no /proc/meminfo here")
    assert cap <= max(256 << 20, avail // 4)


def test_hidden_sets_are_written_while_the_next_is_drawn(tmp_path, monkeypatch):
    """The reference's writer: a set's write runs beside the next draw, one write at a time;
    the budget's refusal is said at once; every set reads back the same; a failed write is
    raised when the writer closes, not lost."""
    import threading

    monkeypatch.setitem(worker._DISK, "budget", None)
    monkeypatch.setitem(worker._DISK, "used", 0)
    writers, real_save = [], torch.save

    def save(vals, path):
        writers.append(threading.current_thread().name)
        real_save(vals, path)

    monkeypatch.setattr(torch, "save", save)
    w = worker.SetWriter(torch)
    sets = {f"s{k}": [torch.full((1024,), float(k))] for k in range(3)}
    for name, vals in sets.items():
        assert w.save(vals, str(tmp_path / f"in_{name}.pt")) is None
    w.close()
    assert len(writers) == 3 and all(n.startswith("hackscan-set-writer") for n in writers)
    for name, vals in sets.items():
        assert torch.equal(torch.load(tmp_path / f"in_{name}.pt")[0], vals[0])
    # past the disk budget: not written, and the reason at once
    monkeypatch.setitem(worker._DISK, "budget", 16)
    w = worker.SetWriter(torch, overlap=False)
    why = w.save([torch.zeros(1024)], str(tmp_path / "in_big.pt"))
    w.close()
    assert why and "disk budget" in why and not (tmp_path / "in_big.pt").exists()
    # a write that fails surfaces at close
    monkeypatch.setitem(worker._DISK, "budget", None)
    w = worker.SetWriter(torch)
    assert w.save([torch.zeros(4)], str(tmp_path / "no_such_folder" / "in_x.pt")) is None
    with pytest.raises((OSError, RuntimeError)):
        w.close()
