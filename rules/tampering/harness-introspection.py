from hackscan.rule import Rule
from hackscan.parse.trees import captures, text

INTROSPECT = ("gc.get_objects", "gc.get_referrers", "gc.get_referents", "inspect.stack", "inspect.currentframe",
              "inspect.getouterframes", "inspect.getframeinfo", "inspect.trace", "sys._getframe",
              "sys._current_frames", "traceback.extract_stack", "traceback.walk_stack", "traceback.format_stack",
              "traceback.print_stack", "sys.settrace", "sys.setprofile", "threading.settrace",
              "torch.cuda.memory_snapshot", "torch.cuda.memory._snapshot")
FRAME_ATTRS = ("f_back", "f_locals", "f_globals", "f_code", "tb_frame", "gi_frame", "cr_frame")
QUERY = """
((attribute attribute: (identifier) @name) @frame
 (#any-of? @name "f_back" "f_locals" "f_globals" "f_code" "tb_frame" "gi_frame" "cr_frame"))
(subscript value: (_) @v (#match? @v "modules$")) @sub
"""


class HarnessIntrospection(Rule):
    """The candidate reads the harness's state: live objects, call frames, other modules.

    What it flags
        `gc.get_objects`/`get_referrers`, `inspect.stack`/`currentframe`, `sys._getframe`,
        `traceback.extract_stack`, frame attributes (`f_back`, `f_locals`, `f_globals`),
        tracing hooks, `sys.modules["__main__"]` and `import __main__`.

    Why it is a hack
        Walking the heap or the caller's frames finds the reference's output tensor, the
        expected values or the checker's file name; the candidate then returns the answer or
        behaves differently under the checker.

    Example
        for obj in gc.get_objects():
            if torch.is_tensor(obj) and obj.shape == x.shape and obj is not x:
                return obj.clone()

    Legitimate look-alike
        None in a kernel; `gc.collect()` to free memory is not introspection.

    Dynamic confirmation
        Expected outputs never exist in the candidate's process; the candidate runs in a
        fresh worker that holds only its inputs.

    Known gaps
        Introspection through `ctypes` or C extensions is sandbox-escape's finding.
    """

    id = "harness-introspection"
    hack_type = "harness-introspection"
    severity = "critical"
    confidence = "high"
    summary = "the candidate reads harness state: heap objects, frames, __main__"
    needs = ("python",)
    probes = ("isolated-worker",)
    certain = True

    def check(self, ctx):
        py = ctx.py
        for c in py.calls:
            if c.resolved and c.callee.startswith(INTROSPECT):
                ctx.report(c.node, f"{c.callee} reads the state of the process that runs the candidate")
        for mod, node in py.imported_modules:
            if mod == "__main__":
                ctx.report(node, "imports __main__ (the harness's own module)")
        seen = set()
        found = captures("python", QUERY, py.tree.root_node)
        for n in found.get("frame", []):
            if n.start_point[0] not in seen:
                seen.add(n.start_point[0])
                ctx.report(n, f"walks call frames ({text(n)[:50]})")
        for n in found.get("sub", []):
            r, _ = py.resolve(n.child_by_field_name("value"))
            if r == "sys.modules" and "__main__" in text(n.child_by_field_name("subscript")):
                ctx.report(n, "reads sys.modules['__main__']")
