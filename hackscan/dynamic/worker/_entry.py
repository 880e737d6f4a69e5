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
    # one call into the package: the worker empties this module's names before the audited code
    # is imported (worker.guard.hide), so nothing after this line may read them
    _package()
    importlib.import_module("_hsworker.driver").entry(sys.argv)
