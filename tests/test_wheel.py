"""The built wheel ships the rules and the demo corpus: install it in a fresh venv and use it."""
from __future__ import annotations

import os
import subprocess
import sys
import venv

import pytest

from conftest import ROOT


@pytest.mark.slow
def test_wheel_installs_and_lists_rules(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist), str(ROOT)],
                   check=True, capture_output=True, timeout=600)
    # the distribution is hackscan-gpu (`hackscan` on PyPI is another project); the import stays hackscan
    wheel = next(dist.glob("hackscan_gpu-*.whl"))
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("hackscan/dynamic/worker/driver.py", "hackscan/dynamic/worker/_entry.py", "hackscan/dynamic/probes/kernel_attribution.py",
                   "hackscan/measure/stats.py", "hackscan/py.typed", "hackscan/__main__.py"):
        assert needed in names, f"{needed} is not in the wheel"
    # the fresh venv sees only what it installed: a PYTHONPATH onto a source tree (where the wheel's
    # build left an egg-info) would make pip take hackscan-gpu as installed already
    clean_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / ("Scripts" if os.name == "nt" else "bin") / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=900, env=clean_env)
    exe = env_dir / "bin" / "hackscan"
    out = subprocess.run([str(exe), "rules"], check=True, capture_output=True, text=True, cwd=tmp_path,
                         env=clean_env).stdout
    assert out.strip().splitlines()[-1].split()[0].isdigit() and int(out.strip().splitlines()[-1].split()[0]) >= 30
    by_module = subprocess.run([str(py), "-m", "hackscan", "--version"], capture_output=True, text=True, cwd=tmp_path,
                               env=clean_env)
    assert by_module.returncode == 0 and by_module.stdout.startswith("hackscan "), by_module.stderr
    demo = subprocess.run([str(exe), "audit", "--format", "json"], capture_output=True, text=True, cwd=tmp_path,
                          env=clean_env)
    assert demo.returncode == 1, demo.stderr
    import json

    assert len(json.loads(demo.stdout)["submissions"]) >= 90
