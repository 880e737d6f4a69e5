from hackscan.hacktypes import BUILD_ENV_VARIABLES
from hackscan.rule import Rule
from hackscan.parse.trees import text

ENV_KEYED = ("os.environ.setdefault", "os.environ.pop", "os.putenv", "os.unsetenv")

FLAG_FUNCS = ("torch.set_default_dtype", "torch.set_default_tensor_type", "torch.set_default_device",
              "torch.set_flush_denormal", "torch.use_deterministic_algorithms", "torch.set_float32_matmul_precision",
              "torch.set_num_threads", "torch.set_grad_enabled", "torch.set_printoptions", "torch._C._set_",
              "torch.backends.cudnn.flags", "torch.backends.cuda.sdp_kernel", "os.putenv", "os.environ.update",
              "os.environ.setdefault", "os.environ.pop", "os.unsetenv", "random.seed", "numpy.random.seed",
              "torch.cuda.set_sync_debug_mode", "torch.set_anomaly_enabled", "warnings.filterwarnings",
              "torch.cuda.set_per_process_memory_fraction", "torch.cuda.memory.set_per_process_memory_fraction",
              "torch.set_deterministic_debug_mode")
CPP_FLAGS = ("setenv", "putenv", "at::globalContext", "at::set_num_threads", "cudaDeviceSetLimit",
             "cudaDeviceSetCacheConfig", "cudaSetDeviceFlags", "cudaDeviceSetSharedMemConfig")


class GlobalFlagWrite(Rule):
    """The candidate changes process-wide state: backend flags, defaults, env vars, seeds.

    What it flags
        Writes to `torch.backends.*` flags, `os.environ[...]`, `os.putenv`, default dtype or
        device, denormal flushing, determinism, thread counts, numpy/Python seeds; in C++,
        `setenv`, `at::globalContext().set*` and device-wide CUDA limits.

    Why it is a hack
        When candidate and reference share a process, flags slow the baseline (deterministic
        algorithms, cuDNN benchmark off) or loosen the check (flush denormals, lower default
        precision). Environment variables reach the harness and later workers.

    Example
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True

    Legitimate look-alike
        Build variables named by a string literal (`os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"`,
        `CUDA_HOME`, `PATH`, `MAX_JOBS`: the list is hackscan.hacktypes.BUILD_ENV_VARIABLES) steer
        how the candidate's extension compiles, not what the process computes: not reported.
        `torch.backends.cudnn.benchmark = True` switches cuDNN's autotuner on: where candidate
        and reference share a process it makes the reference's convolutions faster too, so it
        neither slows the baseline nor loosens the check; not reported (switching it off is).

    Dynamic confirmation
        Snapshot and diff of global state (backend flags, default dtype/device, environment,
        RNG state) around import and forward.

    Known gaps
        State changed through `ctypes` or by loading a library with constructors is not seen.
    """

    id = "global-flag-write"
    hack_type = "global-state-tampering"
    severity = "high"
    confidence = "high"
    summary = "the candidate changes process-wide flags, defaults, env vars or seeds"
    languages = ("python", "cuda")
    needs = ("python", "cuda")
    probes = ("global-state-diff",)

    def check(self, ctx):
        f = ctx.facts
        py = f.py
        if py is not None:
            for name, node, fn in py.attr_writes:
                if name.startswith("torch.backends.") or name.startswith("torch._C._") or name.startswith("os.environ"):
                    if name == "torch.backends.cudnn.benchmark" and _assigned(node) == "True":
                        continue
                    ctx.report(node.parent or node, f"sets {name}")
            for st, fn in py.subscript_writes:
                r, _ = py.resolve(st.child_by_field_name("value"))
                if r == "os.environ" and not _build_variable(st.child_by_field_name("subscript")):
                    ctx.report(st.parent or st, f"sets the environment variable {text(st.child_by_field_name('subscript'))}")
            for c in py.calls:
                if c.resolved and c.callee in ENV_KEYED and c.args and _build_variable(c.args[0]):
                    continue
                if c.resolved and c.callee.startswith(FLAG_FUNCS):
                    ctx.report(c.node, f"{c.callee} changes process-wide state")
        for u in f.cuda:
            for c in u.facts.calls:
                if c.callee.startswith(CPP_FLAGS) or (c.receiver or "").startswith("at::globalContext") and \
                        c.callee.startswith(".set"):
                    ctx.report(c.node, f"{c.callee if not c.receiver else c.receiver + c.callee} changes process-wide state",
                               unit=u)


def _build_variable(node) -> bool:
    """A string literal naming a build variable (never a name computed at run time)."""
    if node is None or node.type != "string":
        return False
    raw = text(node)
    if raw[:1] in "fFbBrRuU" or raw.count("{") or len(raw) < 2:
        return False
    return raw.strip("'\"") in BUILD_ENV_VARIABLES


def _assigned(node) -> str | None:
    """The literal text assigned where `node` is the target of a plain assignment."""
    parent = node.parent
    if parent is None or parent.type != "assignment" or parent.child_by_field_name("left") != node:
        return None
    right = parent.child_by_field_name("right")
    return text(right) if right is not None else None
