"""The worker's entry script, copied into the job's folder as `_worker.py` beside the package
copied as `_hsworker/`. Under `python -I` neither the script's folder nor the working directory
is on sys.path, so the package is loaded from its file path; its modules then import one another
relatively, as they do inside hackscan."""
import importlib.util
import os
import sys

sys.dont_write_bytecode = True   # the folder is the audited code's scratch space, not a cache


def _package():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_hsworker")
    spec = importlib.util.spec_from_file_location("_hsworker", os.path.join(here, "__init__.py"),
                                                  submodule_search_locations=[here])
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["_hsworker"] = pkg
    spec.loader.exec_module(pkg)
    return pkg


if __name__ == "__main__":
    _package()
    from _hsworker.driver import _exit_now_if_alone, main

    pre = None
    if sys.argv[2:3] == ["--wait"]:   # started ahead of its job (hackscan.dynamic.pool)
        from _hsworker.prestart import handoff, prestart

        pre = prestart(sys.argv[3] if len(sys.argv) > 3 else "cpu", profile="noprofile" not in sys.argv[4:],
                       meta="meta" in sys.argv[4:])
        if not handoff(pre):
            sys.exit(0)
    rc = main(sys.argv[1], prestart=pre)
    _exit_now_if_alone(rc)
    sys.exit(rc)
