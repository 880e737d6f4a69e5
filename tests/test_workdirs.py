"""Working folders of auditors killed hard are swept by the next audit; live ones and other
tools' folders are not."""
from __future__ import annotations

import os
import subprocess
import sys
import time

from hackscan.dynamic.workdirs import LOCK, WorkDir, sweep


def _age(path, seconds=3600):
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_the_folder_of_a_dead_auditor_goes_and_the_others_stay(tmp_path):
    # an auditor that dies without cleaning up (os._exit: no finalisers, no atexit)
    code = ("import os, sys; from hackscan.dynamic.workdirs import WorkDir; "
            "w = WorkDir(root=sys.argv[1]); (w.path / 'in_visible.pt').write_bytes(b'x' * 1024); "
            "print(w.path); sys.stdout.flush(); os._exit(0)")
    dead = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                          check=True).stdout.strip()
    live = WorkDir(root=str(tmp_path))
    other = tmp_path / "hackscan-dyn-other"        # no owner lock: not ours to judge
    other.mkdir()
    fresh_dead = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                                check=True).stdout.strip()
    try:
        for d in (dead, live.path, other):
            _age(d)
        assert os.path.isfile(os.path.join(dead, LOCK))
        gone = sweep(root=str(tmp_path))
        assert [str(g) for g in gone] == [dead]
        assert not os.path.exists(dead)
        assert live.path.is_dir() and other.is_dir()
        # a folder made a moment ago may not hold its lock yet: left for a later sweep
        assert os.path.isdir(fresh_dead)
    finally:
        live.close()
    assert not live.path.exists()
