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
