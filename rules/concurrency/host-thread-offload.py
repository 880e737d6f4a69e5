from hackscan.parse.trees import text, walk
from hackscan.rule import Rule

PY_ASYNC = ("threading", "concurrent.futures", "multiprocessing", "asyncio", "_thread", "queue.Queue",
            "torch.multiprocessing", "torch.futures", "torch.jit.fork", "torch.jit._fork")
CPP_ASYNC = ("std::thread", "std::async", "pthread_create", "cudaLaunchHostFunc", "cudaStreamAddCallback",
             "std::jthread", "boost::thread", "at::launch", "at::parallel_for")


# what a module may be imported for without running anything off the calling thread
SYNC_ONLY = frozenset("Lock RLock Event Condition Semaphore BoundedSemaphore local get_ident current_thread "
                      "main_thread cpu_count allocate_lock".split())


class HostThreadOffload(Rule):
    """The candidate starts threads, processes, futures or host callbacks.

    What it flags
        Uses of `threading`, `concurrent.futures`, `multiprocessing`, `asyncio`,
        `torch.jit.fork` and `torch.futures` in the candidate; `std::thread`, `std::async`,
        `pthread_create`, `cudaLaunchHostFunc` and `cudaStreamAddCallback` in its C++.

    Why it is a hack
        Work finished by another thread after forward returns is not timed; results written
        later may still land before the comparison reads them.

    Example
        pool = ThreadPoolExecutor(1)
        def forward(self, x):
            out = torch.empty_like(x)
            pool.submit(ext.run, x, out)
            return out

    Legitimate look-alike
        None in a benchmark candidate: kernels do not need host threads. `at::parallel_for`
        in CPU fallback code is reported low, and so is `threading` imported only for its
        synchronisation primitives (a lock around a lazy extension build).

    Dynamic confirmation
        Thread count around the call; output bytes fingerprinted at return and after the
        process is idle.

    Known gaps
        Threads started by a third-party library the candidate imports are not seen.
    """

    id = "host-thread-offload"
    hack_type = "async-offload"
    severity = "high"
    confidence = "high"
    summary = "the candidate offloads work to threads, processes or host callbacks"
    languages = ("python", "cuda")
    needs = ("python", "cuda")
    probes = ("thread-count", "output-fingerprint")

    def check(self, ctx):
        f = ctx.facts
        if f.py is not None:
            for mod, node in f.py.imported_modules:
                if mod.startswith(PY_ASYNC):
                    used = self._used_names(f.py, mod)
                    if used is not None and used <= SYNC_ONLY:
                        # a lock around a lazy build runs nothing off the calling thread
                        ctx.report(node, f"imports {mod} for {', '.join(sorted(used)) or 'nothing it calls'} only: "
                                   "synchronisation, no thread started", severity="low", confidence="low")
                        continue
                    ctx.report(node, f"imports {mod}")
            for c in f.py.calls:
                if c.resolved and c.callee.startswith(("torch.jit.fork", "torch.jit._fork", "torch.futures")):
                    ctx.report(c.node, f"{c.callee} runs work asynchronously")
        for u in f.cuda:
            for c in u.facts.calls:
                if c.callee.startswith(CPP_ASYNC):
                    ctx.report(c.node, f"{c.callee} runs work off the calling thread", unit=u,
                               severity="low" if c.callee == "at::parallel_for" else None)
            for name, val, fn in u.facts.decls:
                decl = val
                while decl is not None and decl.type != "declaration":
                    decl = decl.parent
                ty = text(decl.child_by_field_name("type")) if decl is not None else ""
                if ty in ("std::thread", "std::jthread", "thread", "std::future"):
                    ctx.report(decl, f"{ty} {name} runs work off the calling thread", unit=u)

    @staticmethod
    def _used_names(py, mod: str) -> set[str] | None:
        """The names of `mod` the file uses (`threading.Lock()`, `from threading import Lock`),
        or None where the module is used in a way not seen as a call (passed around, aliased)."""
        used = set()
        for c in py.calls:
            if c.resolved and c.callee.startswith(mod + "."):
                used.add(c.callee[len(mod) + 1:].split(".")[0])
        roots = {alias for alias, full in py.aliases.items() if full == mod or full.startswith(mod + ".")}
        for n in walk(py.tree.root_node):
            if n.type == "identifier" and text(n) in roots:
                p = n.parent
                if p is None or p.type in ("import_statement", "import_from_statement", "aliased_import",
                                           "dotted_name"):
                    continue
                if p.type == "attribute" and p.child_by_field_name("object") == n:
                    g = p.parent
                    if g is not None and g.type == "call" and g.child_by_field_name("function") == p:
                        continue
                    return None
                if p.type == "call" and p.child_by_field_name("function") == n:
                    continue
                return None
        return used
