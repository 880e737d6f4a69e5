from hackscan.rule import Rule
from hackscan.parse.trees import ancestors, text

PY_STREAM = ("torch.cuda.Stream", "torch.cuda.streams.Stream", "torch.Stream", "torch.cuda.stream",
             "torch.cuda.set_stream", "torch.cuda.ExternalStream")
PY_JOIN = ("wait_stream", "synchronize", "wait_event", "torch.cuda.synchronize", "current_stream")
CPP_CREATE = ("cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority",
              "at::cuda::getStreamFromPool", "c10::cuda::getStreamFromPool", "getStreamFromPool",
              "at::cuda::getStreamFromExternal", "c10::cuda::CUDAStreamGuard", "at::cuda::CUDAStreamGuard",
              "at::cuda::setCurrentCUDAStream", "c10::cuda::setCurrentCUDAStream")
CPP_JOIN = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaStreamWaitEvent", "cudaEventSynchronize",
            ".synchronize", "cudaStreamQuery", ".wait", "cudaEventRecord")
CURRENT = ("getCurrentCUDAStream", "at::cuda::getCurrentCUDAStream", "c10::cuda::getCurrentCUDAStream",
           "getDefaultCUDAStream", "cudaStreamPerThread", "cudaStreamLegacy")


class UnjoinedSideStream(Rule):
    """Work is enqueued on a private stream that is never joined to the caller's stream.

    What it flags
        A `torch.cuda.Stream()` or `with torch.cuda.stream(s):` in the candidate with no
        `wait_stream`/`wait_event`/`synchronize` joining it back; in C++, streams created with
        `cudaStreamCreate*` or taken from `getStreamFromPool`, a stream guard, or a launch on a
        stream other than the current one, with no `cudaStreamWaitEvent`/`cudaStreamSynchronize`.

    Why it is a hack
        Benchmarks time with CUDA events on the current stream. Work on another stream is not
        waited for: the timer stops before the kernel finishes. One published set of
        RL-generated kernels had 96 of about 250 per GPU doing this.

    Example
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            out = ext.run(x)
        return out

    Legitimate look-alike
        A side stream joined before return (`torch.cuda.current_stream().wait_stream(s)`, or
        `cudaEventRecord` + `cudaStreamWaitEvent`), and launches on
        `at::cuda::getCurrentCUDAStream()`. A join counts where it runs whenever the stream's
        work does: one inside a branch that the stream's work is not inside (a
        `stream.synchronize()` only on the call that captures a CUDA graph, the replays on
        every later call left unjoined) does not.

    Dynamic confirmation
        Timing integrity: event timing on the current stream versus timing after a
        device-wide synchronisation; the ratio exposes unjoined work.

    Known gaps
        Joins performed in another function than the one that launches are only seen when
        they are in the same extension or file.
    """

    id = "unjoined-side-stream"
    hack_type = "side-stream"
    severity = "high"
    confidence = "medium"
    summary = "work runs on a private stream that is never joined"
    languages = ("python", "cuda")
    needs = ("python", "cuda")
    probes = ("timing-integrity",)

    def check(self, ctx):
        f = ctx.facts
        if f.py is not None:
            streams = [c for c in f.py.calls if c.resolved and c.callee.startswith(PY_STREAM)]
            joins = [c for c in f.py.calls
                     if c.method in ("wait_stream", "wait_event", "synchronize") or c.callee == "torch.cuda.synchronize"]
            joined = not _unjoined_work(streams, joins, f.py.calls)
            if streams and not joined:
                c = streams[0]
                ctx.report(c.node, f"{c.callee}: work on this stream is never joined to the caller's stream")
        for u in f.cuda:
            calls = u.facts.calls
            joined = any(c.callee.startswith(CPP_JOIN) or c.callee in (".synchronize", ".wait")
                         for c in calls) and any(c.callee in ("cudaStreamWaitEvent", "cudaStreamSynchronize",
                                                              "cudaDeviceSynchronize", ".synchronize", ".wait",
                                                              "cudaEventSynchronize") for c in calls)
            if joined:
                continue
            created = [c for c in calls if c.callee.startswith(CPP_CREATE) or c.callee.split("::")[-1] in
                       ("getStreamFromPool", "cudaStreamCreate", "cudaStreamCreateWithFlags")]
            for c in created:
                ctx.report(c.node, f"{c.callee}: kernels go to a stream the timer does not wait on", unit=u)
            guards = [n for n, v, fn in u.facts.decls if "StreamGuard" in text(v.parent or v)]
            if not created and not guards:
                # no stream is made or switched to here: a launch on a `stream` variable (a
                # helper's parameter, say) runs on whatever its caller passed, the current stream
                # taken with getCurrentCUDAStream in the exported function
                continue
            for l in u.facts.launches:
                if len(l.config) >= 4:
                    s = text(l.config[3])
                    if s not in ("0", "nullptr", "NULL") and not any(k in s for k in CURRENT) and \
                            not self._current_var(u, l, s):
                        ctx.report(l.config[3], f"{l.kernel} is launched on stream `{s}`, not the current one",
                                   unit=u)

    @staticmethod
    def _current_var(u, launch, s):
        for name, val, fn in u.facts.decls:
            if name == s.strip() and fn is launch.func:
                return any(k in text(val) for k in CURRENT)
        return False


BRANCHES = ("if_statement", "elif_clause", "else_clause", "for_statement", "while_statement", "except_clause",
            "conditional_expression", "match_statement", "case_clause")


def _scope(node):
    """The function a node is in, and the branches (conditionals, loops, handlers) around it
    inside that function."""
    guards = []
    for a in ancestors(node):
        if a.type in ("function_definition", "lambda"):
            return a, guards
        if a.type in BRANCHES:
            guards.append(a)
    return None, guards


# calls that put work on a stream (creating one puts nothing there)
WORK = ("torch.cuda.stream", "torch.cuda.set_stream", "torch.cuda.StreamContext")


def _unjoined_work(streams, joins, calls) -> bool:
    """Whether some function that enqueues work on a side stream has no join on its own path:
    a join in that function outside every branch that some enqueue of it is outside of, or in a
    helper it calls by name that enqueues nothing itself. A synchronize in __init__, in a warm-up
    or only on the call that captures a graph does not join forward's work. Where no enqueue is
    seen in Python (the stream handed to an extension), any join is taken as it is."""
    work = [c for c in streams if c.callee.startswith(WORK)]
    if not work:
        return not joins
    by_fn: dict = {}
    for c in work:
        fn, guards = _scope(c.node)
        by_fn.setdefault(fn, []).append(guards)
    join_scopes = [_scope(j.node) for j in joins]
    helpers = {text(jfn.child_by_field_name("name")) for jfn, _ in join_scopes if jfn is not None and jfn not in by_fn}
    for fn, uses in by_fn.items():
        steady = any(jfn == fn and any(all(g in use for g in guards) for use in uses) for jfn, guards in join_scopes)
        if not steady and helpers:
            steady = any(c.method in helpers and c.func is not None and c.func.node == fn for c in calls)
        if not steady:
            return True
    return False
