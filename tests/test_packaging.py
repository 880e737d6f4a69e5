"""What the wheel ships: every Python package under hackscan/ is listed in setup.cfg (a missing
entry once left the dynamic layer out of non-editable installs)."""
from __future__ import annotations

import configparser

from conftest import ROOT


def test_every_python_package_is_listed_in_setup_cfg():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    listed = set(cfg["options"]["packages"].split())
    found = {".".join(d.relative_to(ROOT).parts) for d in (ROOT / "hackscan").rglob("*")
             if d.is_dir() and "__pycache__" not in d.parts and any(d.glob("*.py"))} | {"hackscan"}
    assert found <= listed, f"packages missing from setup.cfg: {sorted(found - listed)}"
