"""Evidence taken in the worker's process: global state (backend flags, dtype defaults, the
environment), the identities of harness functions, and what the walls around the process allow.
Captured before the audited code is imported where that matters; for a candidate, evidence to
check, never trusted on its own."""
from __future__ import annotations

import hashlib
import json
import os

from .common import _writable


def _state(torch) -> dict:
    """Process-wide state a candidate may tamper with, captured as plain strings."""
    b = torch.backends
    out = {
        "default_dtype": str(torch.get_default_dtype()),
        "float32_matmul_precision": _matmul_precision(torch),
        "cudnn.allow_tf32": str(b.cudnn.allow_tf32),
        "cudnn.benchmark": str(b.cudnn.benchmark),
        "cudnn.deterministic": str(b.cudnn.deterministic),
        "cudnn.enabled": str(b.cudnn.enabled),
        "cuda.matmul.allow_tf32": str(b.cuda.matmul.allow_tf32),
        "deterministic_algorithms": str(torch.are_deterministic_algorithms_enabled()),
        "grad_enabled": str(torch.is_grad_enabled()),
        "num_threads": str(torch.get_num_threads()),
        "flush_denormal": str(float(torch.tensor([1e-40], dtype=torch.float32) * 1.0) == 0.0),
        # torch sets its own cache variables lazily (TORCHINDUCTOR_CACHE_DIR on importing dynamo);
        # build variables (compiler, paths, target architectures) change how an extension is
        # built, never what the process computes: the candidate may set them
        "env": hashlib.sha256(json.dumps(sorted((k, v) for k, v in os.environ.items()
                                                if not _build_variable(k))).encode()).hexdigest()[:16],
        "env_names": ",".join(sorted(k for k in os.environ if not _build_variable(k))),
    }
    return out


def _matmul_precision(torch) -> str:
    """torch's matmul precision; its getter raises where the legacy and the new precision APIs
    were mixed (then each backend's setting, as the new API reads them)."""
    try:
        return torch.get_float32_matmul_precision()
    except Exception:  # noqa: BLE001
        try:
            return "mixed: " + ",".join(f"{b}={torch._C._get_fp32_precision_getter(b, 'matmul')}"
                                        for b in ("cuda", "mkldnn"))
        except Exception:  # noqa: BLE001
            return "?"


def _identities(torch) -> dict:
    """ids of the functions a harness relies on: checker, timers, synchronisation."""
    import time as _time

    names = {
        "torch.allclose": torch.allclose, "torch.isclose": torch.isclose, "torch.equal": torch.equal,
        "torch.testing.assert_close": torch.testing.assert_close, "torch.manual_seed": torch.manual_seed,
        "torch.rand": torch.rand, "torch.randn": torch.randn,
        "torch.Tensor.__eq__": torch.Tensor.__eq__, "torch.Tensor.__sub__": torch.Tensor.__sub__,
        "torch.cuda.synchronize": torch.cuda.synchronize, "torch.cuda.Event": torch.cuda.Event,
        "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
        "torch.cuda.Event.record": torch.cuda.Event.record,
        "time.perf_counter": _time.perf_counter, "time.time": _time.time, "time.monotonic": _time.monotonic,
    }
    import inspect

    # torch._dynamo wraps some of these (functools.wraps) when imported: unwrap to the original
    return {k: str(id(inspect.unwrap(v))) for k, v in names.items()}


def _isolation() -> dict:
    """What protections hold in this process, checked from inside after the audited code ran
    (corroboration only: the auditor reads the kernel's record of the worker from outside)."""
    out = {"fs_read_only_outside_scratch": not _writable("/") and not _writable(
        os.path.dirname(os.getcwd()) or "/")}
    try:
        import socket

        names = [n for _, n in socket.if_nameindex()]
        out["network_interfaces"] = names
        out["no_network"] = all(n == "lo" for n in names)
    except OSError:
        out["no_network"] = None
    return out


# environment variables that steer how an extension is built, never what the process computes:
# the auditor sends hackscan.hacktypes.BUILD_ENV_VARIABLES in the job (this file imports nothing
# from hackscan)
BUILD_VARIABLES: set = set()


def _build_variable(name: str) -> bool:
    return name in BUILD_VARIABLES or name.lstrip("_").startswith(("TORCHINDUCTOR_", "TRITON_"))
