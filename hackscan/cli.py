"""`hackscan` command line: audit, rules, explain, corpus-stats, docs.

Exit codes: 0 nothing at or above the threshold, 1 findings at or above it or a submission
hacked, in violation, unverified or that could not be audited, 2 usage, configuration or
internal error, 3 nothing to audit."""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from hackscan import install

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR, EXIT_NOTHING = 0, 1, 2, 3
EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 130, 141   # 128 + SIGINT, 128 + SIGPIPE, as shells report them


def build_parser() -> argparse.ArgumentParser:
    from hackscan.config import CHOICES

    p = argparse.ArgumentParser(prog="hackscan", description="Catch reward hacks in generated GPU kernels.")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command")

    a = sub.add_parser("audit", help="audit kernel files or folders (no PATH: the bundled demo kernels)")
    a.add_argument("paths", nargs="*", help="files or folders of candidates")
    a.add_argument("--format", choices=CHOICES["format"], default=None)
    a.add_argument("--output", "-o", help="write the report to FILE instead of stdout")
    a.add_argument("--reference", help="reference file for every candidate")
    a.add_argument("--entry", help="entry class name (default ModelNew)")
    a.add_argument("--problems", help="KernelBench problems folder for level_L_problem_P_sample_S_kernel.py names")
    a.add_argument("--select", action="append", help="only these rule ids, hack types or categories (comma-separated)")
    a.add_argument("--ignore", action="append", help="skip these rule ids, hack types or categories")
    a.add_argument("--min-confidence", choices=CHOICES["min-confidence"], default=None)
    a.add_argument("--fail-on", choices=CHOICES["fail-on"], default=None,
                   help="lowest severity of a suspicion that makes the exit code 1 (default medium); hacked, "
                        "violation, unverified and error always do")
    a.add_argument("--policy", choices=CHOICES["policy"], default=None,
                   help="kernelbench: a custom kernel is required (default); any: only cheats count")
    a.add_argument("--baseline", help="suppress findings whose fingerprints are in FILE")
    a.add_argument("--sidecars", action="store_true",
                   help="pair candidates with references through <stem>.toml sidecars beside them (they lie in the "
                        "audited tree: use only on a tree you wrote; the bundled demo always does)")
    a.add_argument("--write-baseline", metavar="FILE", help="write the fingerprints of this audit's findings to FILE")
    a.add_argument("--dynamic", choices=CHOICES["dynamic"], default=None,
                   help="auto (default, when torch is installed): the core probes on every submission with a "
                        "reference, plus those the static suspects name; all: every probe on every submission; "
                        "off: static only (verdicts say [static])")
    a.add_argument("--device", choices=CHOICES["device"], default=None,
                   help="where candidates run for dynamic confirmation (default: cuda when available)")
    a.add_argument("--timeout", type=float, default=None, help="wall-clock limit per worker, seconds (default 180)")
    a.add_argument("--cuda-ghost", choices=CHOICES["cuda-ghost"], default=None,
                   help="kept for earlier scripts, with no effect: ghost replay no longer rebuilds CUDA "
                        "extensions (it poisons what the candidate's launches write, in its main run)")
    a.add_argument("--measure", nargs="?", const="survivors", choices=CHOICES["measure"], default=None,
                   help="fair measurement after the audit: speedup against the strict fp32 and the TF32 "
                        "reference, peak memory, flags; survivors (the default) measures candidates whose "
                        "verdict is clean or suspect, all measures every candidate that runs")
    a.add_argument("--measure-budget", type=float, default=None,
                   help="seconds of timed calls per worker (default 10)")
    a.add_argument("--measure-compile", action="store_true",
                   help="also time the reference under torch.compile, as a third baseline")
    a.add_argument("--api-mode", action="store_true",
                   help="KernelGuard-compatible: read one candidate's source on stdin, print one JSON object in "
                        "KernelGuard's shape (classification, should_filter, filter_reason, matched_patterns) as the "
                        "last line, exit 0 whatever it finds")
    a.add_argument("--profile", choices=CHOICES["profile"], default=None,
                   help="KernelGuard's profiles: default and sol-execbench filter hacked candidates, strict also "
                        "contract violations, generic audits under the any policy (sets --policy where it is not "
                        "given)")
    a.add_argument("--jobs", "-j", type=int, default=None, help="processes for the static pass")
    a.add_argument("--dynamic-jobs", type=int, default=None,
                   help="candidates audited at a time (default: one per GPU on CUDA, each audit's workers "
                        "pinned to its GPU; --jobs on the CPU); with --backend ray, per Ray task")
    a.add_argument("--prestart", type=int, default=None, metavar="N",
                   help="workers kept started ahead of their jobs (bubblewrap only): the interpreter, torch, the "
                        "device's context and the profiler's first session are ready when a candidate comes "
                        "(default: HACKSCAN_PRESTART, else 0)")
    a.add_argument("--backend", choices=CHOICES["backend"], default=None,
                   help="local process pool (default) or Ray tasks (the `ray` extra): static "
                        "batches on CPUs, dynamic audits one GPU per task in a fresh worker process")
    a.add_argument("--ray-address", default=None,
                   help="Ray cluster to join ('auto', 'ray://host:10001'); default: start a local instance")
    a.add_argument("--task-timeout", type=float, default=None,
                   help="Ray: seconds before a task is cancelled (default 3600); its items become errors")
    a.add_argument("--max-bytes", type=int, default=None, help="skip files larger than this (default 1000000)")
    a.add_argument("--config", help="configuration file (default: hackscan.toml or [tool.hackscan] in pyproject.toml)")
    a.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    a.add_argument("--kernels-only", action="store_true",
                   help="skip Python files with no entry class, no Triton kernel and no extension (the pre-commit "
                        "hook: ordinary modules pass)")
    a.add_argument("--quiet", "-q", action="store_true", help="text format: only submissions that are not clean")
    a.add_argument("--color", choices=CHOICES["color"], default=None, help="text format (default auto)")

    sub.add_parser("rules", help="list the rules").add_argument("--format", choices=("text", "json"), default="text")
    e = sub.add_parser("explain", help="show a rule's documentation")
    e.add_argument("rule_id")
    c = sub.add_parser("corpus-stats", help="recall and false positives of every rule on an annotated corpus")
    c.add_argument("corpus", nargs="?", help="corpus folder (default: the bundled corpus)")
    c.add_argument("--format", choices=("text", "json"), default="text")
    k = sub.add_parser("clean", help="audit every row of a JSONL, JSON-array or parquet dataset; write the rows that pass")
    k.add_argument("dataset", help=".jsonl, .ndjson, .json (one array of objects) or .parquet")
    k.add_argument("--out", required=True, help="output folder: results.jsonl, cleaned.<ext>, summary.json, report.html")
    from hackscan.clean import PRESETS

    k.add_argument("--preset", choices=sorted(PRESETS), default=None,
                   help="column layout: " + "; ".join(f"{n}: {', '.join(c.values())}" for n, c in PRESETS.items()))
    k.add_argument("--code-col", default=None, help="column with the candidate's code (dotted for nested records)")
    k.add_argument("--ref-col", default=None, help="column with the reference's code")
    k.add_argument("--id-col", default=None, help="column with the row's id (default: the row number)")
    k.add_argument("--remove", default="hacked,violation,unverified,error",
                   help="verdicts whose rows are removed (default: hacked, violation, rows a dynamic audit could "
                        "not verify (unverified: also written to unverified.<ext>) and rows that could not be "
                        "audited: unreadable, no code, a crash of the audit)")
    k.add_argument("--policy", choices=("kernelbench", "any"), default="kernelbench")
    k.add_argument("--dynamic", choices=("off", "auto", "all"), default="off",
                   help="off (default): static only; auto/all: run rows that have a reference")
    k.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    k.add_argument("--measure", nargs="?", const="survivors", choices=("survivors", "all"), default="off",
                   help="fair speedup and peak memory per row (needs a reference; meant for a GPU); the report "
                        "plots claimed against fair speedup and memory ratios")
    k.add_argument("--jobs", "-j", type=int, default=0,
                   help="processes (or Ray tasks in flight); default: the machine's cores for a static run, 1 with "
                        "--dynamic or --measure")
    k.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local process pool (default) or Ray tasks (the `ray` extra)")
    k.add_argument("--ray-address", default=None, help="Ray cluster to join; default: a local instance")
    k.add_argument("--task-timeout", type=float, default=None,
                   help="Ray: seconds before a batch's task is cancelled (its rows become errors)")
    k.add_argument("--no-progress", action="store_true")
    r = sub.add_parser("report", help="the re-evaluation table over measured results: claimed against fair speedup, "
                                      "memory, by level and source")
    r.add_argument("results", nargs="+", help="audit --format json documents, JSONL of submissions, KernelBench "
                                              "eval_results.json, or folders holding them")
    r.add_argument("--format", choices=("text", "json", "html"), default="text")
    r.add_argument("--out", "-o", default=None, help="write here instead of standard output")
    r.add_argument("--group-by", default="level,source", help="comma-separated: level, source (empty: none)")
    d = sub.add_parser("docs", help="write docs/rules/<id>.md from the rule docstrings")
    d.add_argument("out", nargs="?", default="docs/rules")
    d.add_argument("--dynamic-doc", default="docs/dynamic.md", help="the document whose probe table is regenerated")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return EXIT_ERROR if e.code not in (0, None) else EXIT_CLEAN
    if args.version:
        from hackscan._version import __version__

        print(f"hackscan {__version__}")
        return EXIT_CLEAN
    try:
        if args.command == "audit":
            return cmd_audit(args)
        if args.command == "clean":
            return cmd_clean(args)
        if args.command == "rules":
            return cmd_rules(args)
        if args.command == "explain":
            return cmd_explain(args)
        if args.command == "corpus-stats":
            return cmd_corpus_stats(args)
        if args.command == "docs":
            return cmd_docs(args)
        if args.command == "report":
            return cmd_report(args)
        parser.print_help()
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("hackscan: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`hackscan audit | head`): stop quietly; later writes and the
        # interpreter's final flush go nowhere instead of raising again
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return EXIT_BROKEN_PIPE


def _err(msg: str) -> int:
    print(f"hackscan: error: {msg}", file=sys.stderr)
    return EXIT_ERROR


class Progress:
    """A one-line progress bar on stderr, only on a terminal; never mixed into stdout. With a
    dynamic session it also ticks between results: each submission in flight, with the stage its
    audit is in and for how long (the session's own record)."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.done, self.t0 = total, enabled, 0, time.perf_counter()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker = None
        self._last = ""

    def follow(self, session) -> None:
        """Redraw every second with what `session` is doing (its audits in flight)."""
        if not self.enabled or session is None:
            return

        def tick():
            while not self._stop.wait(1.0):
                now = time.monotonic()
                # a copy (the session's threads change it): one C-level call under the GIL
                busy = sorted(dict(session.stages).items(), key=lambda kv: kv[1][1])
                if busy:
                    path, (stage, since) = busy[0]
                    more = f" (+{len(busy) - 1} more)" if len(busy) > 1 else ""
                    self._draw(f"{Path(path).name}: {stage} for {now - since:.0f} s{more}")

        self._ticker = threading.Thread(target=tick, name="hackscan-progress", daemon=True)
        self._ticker.start()

    def step(self, label: str) -> None:
        if not self.enabled:
            return
        self.done += 1
        self._draw(label)

    def _draw(self, label: str) -> None:
        with self._lock:
            self._line(label)

    def _line(self, label: str) -> None:
        frac = self.done / max(1, self.total)
        rate = self.done / max(1e-6, time.perf_counter() - self.t0)
        width = self._width()
        head = f"{self.done}/{self.total} {rate:5.0f} files/s "
        bar_w = max(5, min(30, (width - len(head) - 3) // 3))
        bar = "#" * int(frac * bar_w)
        line = f"[{bar:<{bar_w}}] {head}"
        room = width - len(line)
        line += label[-room:] if room > 0 else ""
        # one line that never wraps: a wrapped line leaves stale rows behind on a narrow terminal
        sys.stderr.write("\r" + line[:width].ljust(width))
        sys.stderr.flush()

    @staticmethod
    def _width() -> int:
        import shutil

        return max(20, shutil.get_terminal_size((80, 24)).columns - 1)

    def close(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)
        if self.enabled:
            sys.stderr.write("\r" + " " * self._width() + "\r")
            sys.stderr.flush()


def cmd_clean(args) -> int:
    from hackscan.clean import PRESETS, CleanOptions, clean, dataset_format

    path = Path(args.dataset)
    if not path.is_file():
        return _err(f"{path}: no such file")
    try:
        dataset_format(path)
    except ValueError as e:
        return _err(str(e))
    cols = dict(PRESETS["pair"], **(PRESETS[args.preset] if args.preset else {}))
    from hackscan.findings import VERDICTS

    remove = tuple(v.strip() for v in args.remove.split(",") if v.strip())
    bad = [v for v in remove if v not in VERDICTS]
    if bad:
        return _err(f"--remove: unknown verdict {', '.join(map(repr, bad))} (verdicts: {', '.join(VERDICTS)})")
    if path.suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            return _err(f"reading parquet needs pyarrow: {install.hint('parquet')}")
    jobs = args.jobs if args.jobs else ((os.cpu_count() or 1) if args.dynamic == "off" and args.measure == "off" else 1)
    opts = CleanOptions(code_col=args.code_col or cols["code_col"], ref_col=args.ref_col or cols["ref_col"],
                        id_col=args.id_col or cols["id_col"], policy=args.policy,
                        remove=remove, dynamic=args.dynamic,
                        device=args.device, jobs=max(1, jobs),
                        progress=not args.no_progress and sys.stderr.isatty(), backend=args.backend,
                        ray_address=args.ray_address, task_timeout_s=args.task_timeout, measure=args.measure)
    from hackscan.clean import check_columns

    explicit = tuple(f for f, v in (("--code-col", args.code_col), ("--ref-col", args.ref_col),
                                    ("--id-col", args.id_col)) if v)
    why = check_columns(path, opts, explicit)
    if why:
        return _err(why)
    from hackscan.clean import CleanOptionsChanged

    try:
        s = clean(path, Path(args.out), opts)
    except (RuntimeError, CleanOptionsChanged) as e:  # Ray missing, no GPU in the Ray cluster; a resume
        return _err(str(e))                            # with other options than its finished rows'
    if s.get("rows_changed"):
        print(f"hackscan: {s['rows_changed']} finished row(s) of {args.out} differ from the dataset's row of the same "
              "number (the dataset changed since): audited again", file=sys.stderr)
    print(f"{s['rows']} rows: {s['kept']} kept, {s['removed']} removed; "
          + ", ".join(f"{n} {v}" for v, n in s["verdicts"].items())
          + f" ({', '.join(f'{n} {e}' for e, n in s['evidence'].items())} evidence); results in {args.out}")
    if s.get("unverified"):
        print(f"{s['unverified']} rows could not be verified (no reference, an unusable reference, a GPU needed, "
              f"no probe conclusive): {Path(args.out) / s['unverified_file']} holds them, to audit again where "
              "they can be verified")
    if s["rows"] and s["verdicts"].get("error", 0) == s["rows"]:
        return _err(f"every one of the {s['rows']} rows failed to be audited: see {args.out}/results.jsonl")
    return 0


API_MAX_BYTES = 2_000_000


def _api_mode(args, cfg) -> int:
    """KernelGuard's api mode (hackscan.integrations.kernelguard): one candidate on stdin, one
    JSON object in KernelGuard's shape as the last line of stdout, exit 0 whatever it finds (a
    filter in a pipeline: what it found is in the object). Static only unless --dynamic is given
    with --reference."""
    from hackscan.api import audit
    from hackscan.integrations import kernelguard

    profile = args.profile or cfg.get("profile", "default")
    data = sys.stdin.buffer.read(API_MAX_BYTES + 1)
    obj = kernelguard.empty(profile)
    if len(data) > API_MAX_BYTES:
        obj["error"] = f"input larger than {API_MAX_BYTES} bytes"
    elif not data.strip():
        obj["error"] = "no source on stdin"
    else:
        try:
            src = data.decode("utf-8")
        except UnicodeDecodeError:
            src = None
            obj["error"] = "stdin is not UTF-8 text"
        if src is not None:
            obj["code_hash"] = kernelguard.code_hash(src)
            dynamic = args.dynamic or "off"
            if dynamic != "off" and not args.reference:
                dynamic = "off"
            policy = args.policy or cfg.get("policy") or _profile_policy(profile)
            try:
                from hackscan.scanning import as_source_text

                # stdin is source text, never a path to read: a one-line input naming a file must
                # not make the auditor read (and report on) that file
                text = as_source_text(src)
                # the run's settings as `audit` reads them (flags over hackscan.toml): a --timeout
                # or --cuda-ghost given here holds here too
                timeout = args.timeout if args.timeout is not None else cfg.get("timeout", 180.0)
                ghost = args.cuda_ghost or cfg.get("cuda-ghost", "suspects")
                r = audit(text, args.reference, dynamic=dynamic, device=args.device or "cpu", policy=policy,
                          entry=args.entry or "ModelNew", timeout_s=float(timeout), cuda_ghost=ghost)
            except Exception as e:  # noqa: BLE001 - the object says what went wrong
                obj["error"] = f"{type(e).__name__}: {e}"[:500]
            else:
                obj = kernelguard.from_result(r, src, profile)
                for reason in r.reasons:
                    print(f"hackscan: {reason}")
    print(json.dumps(obj))
    return 0


def _profile_policy(profile: str | None) -> str:
    from hackscan.integrations.kernelguard import PROFILE_POLICY

    return PROFILE_POLICY.get(profile or "default", "kernelbench")


def _inside_audited(cfg: Path, paths: list[str]) -> bool:
    c = cfg.resolve().parent
    for p in paths or ():
        q = Path(p).resolve()
        q = q if q.is_dir() else q.parent
        if c == q or q in c.parents:
            return True
    return False


def _dynamic_session(st, dynamic: str, policy: str):
    """The dynamic session the settings ask for (probes, measurement), or None for a static run;
    RuntimeError where they ask for what this environment cannot do."""
    if dynamic == "off" and st.measure == "off":
        return None
    try:
        import torch
    except ImportError:   # dynamic runs only where torch imports: this is --measure's
        raise RuntimeError("--measure needs PyTorch in the auditor's environment: "
                           + install.hint("dynamic")) from None

    from hackscan.dynamic.audit import DynamicOptions, DynamicSession

    device = st.device or ("cuda" if torch.cuda.is_available() else "cpu")
    return DynamicSession(DynamicOptions(mode=dynamic, device=device, policy=policy, timeout_s=st.timeout,
                                         cuda_ghost=st.cuda_ghost, measure=st.measure,
                                         measure_budget_s=st.measure_budget, measure_compile=st.measure_compile,
                                         **({"prestart": st.prestart} if st.prestart is not None else {})))


class _Refused(Exception):
    """A usage or configuration error found while setting an audit up: said, and exit 2."""


@dataclass
class _AuditPlan:
    """What `hackscan audit` settled before auditing anything: its settings, rules and items."""
    st: object            # hackscan.config's resolved settings
    dynamic: str          # the dynamic mode in effect (auto without PyTorch: off)
    policy: str
    jobs: int
    rules: list
    opts: object          # hackscan.engine.Options
    items: list           # hackscan.inputs.discover's items
    claims: dict          # a KernelBench run's claims, by candidate path
    root: Path | None     # the demo corpus's root (reports show paths below it)


def cmd_audit(args) -> int:
    """Settle the settings and the items (`_audit_plan`), stream each result as it comes (the
    static pass, then the dynamic audits: `_audit_stream`), then render and exit by the verdicts."""
    try:
        plan = _audit_plan(args)
    except _Refused as e:
        return _err(str(e))
    if isinstance(plan, int):
        return plan
    st, fmt = plan.st, plan.st.format
    # a dynamic run shows its progress however few its submissions (each may take minutes); a
    # static one only where it is long enough to need it
    show = not st.no_progress and sys.stderr.isatty() and (len(plan.items) > 10 or plan.dynamic != "off")
    prog = Progress(len(plan.items), show)
    results = []
    out_stream = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        from hackscan.inputs.load import NOT_A_KERNEL
        from hackscan.report import jsonout

        try:
            session = _dynamic_session(st, plan.dynamic, plan.policy)
        except RuntimeError as e:
            return _err(str(e))
        prog.follow(session)
        backends = []
        try:
            stream = _audit_stream(args, plan, session, backends)
            claim_of = {item.display: plan.claims[item.path] for item in plan.items if item.path in plan.claims}
            for r in stream:
                if st.kernels_only and r.error and r.error.startswith(NOT_A_KERNEL):
                    prog.step(r.path)
                    continue   # ordinary Python beside the kernels (a pre-commit run over a repository)
                if r.path in claim_of:
                    r = replace(r, kernelbench_claim=claim_of[r.path])
                results.append(r)
                prog.step(r.path)
                if fmt == "jsonl":
                    out_stream.write(jsonout.render_line(r))
                    out_stream.flush()
        except _Refused as e:
            return _err(str(e))
        finally:
            if session is not None:
                session.close()
            for b in backends:
                b.close()
        prog.close()
        if fmt != "jsonl":   # jsonl went out line by line as results came
            from hackscan.report.formats import render

            color = st.color == "always" or (st.color == "auto" and out_stream is sys.stdout
                                             and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
            out_stream.write(render(fmt, results, policy=plan.policy, dynamic=plan.dynamic, config=args.config_used,
                                    rules=plan.rules, color=color, show_clean=not st.quiet, root=plan.root))
    finally:
        if out_stream is not sys.stdout:
            out_stream.close()
    if args.write_baseline:
        entries = [{"path": r.path, "rule_id": f.rule_id, "fingerprint": f.fingerprint}
                   for r in results for f in r.findings]
        Path(args.write_baseline).write_text(json.dumps({"version": 1, "findings": entries}, indent=2) + "\n", "utf-8")
    return EXIT_FINDINGS if failing(results, st.fail_on) else EXIT_CLEAN


def _audit_plan(args) -> _AuditPlan | int:
    """The configuration (never one inside the audited tree unless named), the resolved
    settings, the rules and the items to audit; an exit code where there is nothing to audit or
    `--api-mode` answered; `_Refused` for a usage or configuration error."""
    from hackscan.config import ConfigError, find_config, load_config, resolve
    from hackscan.engine import Options, load_rules
    from hackscan.hacktypes import HACK_TYPES
    from hackscan.inputs.discover import discover
    from hackscan.inputs.kernelbench_runs import claims_for
    from hackscan.integrations.kernelguard import PROFILES
    from hackscan.paths import corpus_dir
    from hackscan.rule import RuleError

    cfg_path = Path(args.config) if args.config else find_config(Path.cwd())
    if cfg_path is not None and not args.config and _inside_audited(cfg_path, args.paths):
        # a configuration found in the audited tree may be the graded party's (a baseline of its
        # own findings, a narrower rule set): only one named on the command line is used there
        print(f"hackscan: ignoring {cfg_path}: it lies inside an audited path (name it with --config to use it)",
              file=sys.stderr)
        cfg_path = None
    args.config_used = str(cfg_path) if cfg_path is not None else None
    try:
        cfg = load_config(cfg_path)
    except ConfigError as e:
        raise _Refused(str(e)) from None
    if cfg.get("profile") is not None and cfg["profile"] not in PROFILES:
        raise _Refused(f"unknown profile {cfg['profile']!r} in {cfg_path} (KernelGuard's: {', '.join(PROFILES)})")
    if args.api_mode:
        return _api_mode(args, cfg)
    try:
        st = resolve(cfg, vars(args))
    except ConfigError as e:
        raise _Refused(str(e)) from None
    dynamic = st.dynamic
    if dynamic != "off":
        try:
            import torch  # noqa: F401 - whether it is importable
        except ImportError:
            if st.source("dynamic") != "default":
                raise _Refused(f"--dynamic {dynamic} needs PyTorch in the auditor's environment: "
                               f"{install.hint('dynamic')}; use --dynamic off for the static pass") from None
            dynamic = "off"  # auto without torch: static only, said in the report
    try:
        rules = load_rules()
    except RuleError as e:
        raise _Refused(f"bad rule: {e}") from None
    select, ignore = tuple(st.select), tuple(st.ignore)
    known = {r.id for r in rules} | {r.hack_type for r in rules} | {r.category for r in rules} | set(HACK_TYPES)
    for s in select + ignore:
        if s not in known:
            raise _Refused(f"--select/--ignore: unknown rule id, hack type or category {s!r}")
    baseline: set[str] = set()
    if st.baseline:
        try:
            data = json.loads(Path(st.baseline).read_text("utf-8"))
            baseline = {f"{e['path']}::{e['fingerprint']}" for e in data.get("findings", [])}
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise _Refused(f"cannot read baseline {st.baseline}: {e}") from None
    policy = st.policy or _profile_policy(st.profile)
    opts = Options(select, ignore, st.min_confidence, policy, st.entry, frozenset(baseline))
    demo = not args.paths
    paths = [Path(p) for p in args.paths] if args.paths else [corpus_dir() / "synthetic"]
    reference = Path(args.reference) if args.reference else None
    if reference is not None and not reference.is_file():
        raise _Refused(f"--reference {reference}: no such file")
    problems = Path(st.problems) if st.problems else None
    if problems is not None and not problems.is_dir():
        raise _Refused(f"--problems {problems}: no such folder")
    root = corpus_dir() if demo else None
    items = discover(paths, reference, problems, root=root, sidecars=demo or args.sidecars, entry=opts.entry)
    if not items:
        print("hackscan: nothing to audit (no .py/.cu/.cuh/.cpp candidates found)", file=sys.stderr)
        return EXIT_NOTHING
    return _AuditPlan(st=st, dynamic=dynamic, policy=policy, jobs=st.jobs if st.jobs >= 1 else (os.cpu_count() or 1),
                      rules=rules, opts=opts, items=items, root=root,
                      claims=claims_for([i.path for i in items]))   # a KernelBench run's eval_results.json


def _audit_stream(args, plan: _AuditPlan, session, backends: list):
    """The results in the items' order: the static pass (a process pool, or Ray), then, with a
    dynamic session, each submission's dynamic audit (in this process's session, or Ray tasks).
    Backends it starts are appended to `backends` (the caller closes them)."""
    from hackscan.api import iter_scan

    st = plan.st
    static_backend = None
    if st.backend == "ray":
        from hackscan.parallel import RayBackend

        try:
            static_backend = RayBackend(args.jobs, address=st.ray_address, timeout_s=st.task_timeout)
        except RuntimeError as e:
            raise _Refused(str(e)) from None
        backends.append(static_backend)
    stream = iter_scan(plan.items, plan.opts, plan.jobs, st.max_bytes, backend=static_backend)
    if session is None:
        return stream
    static = list(stream)
    triples = [(r, item.path, item.reference) for item, r in zip(plan.items, static)]
    djobs = st.dynamic_jobs
    if st.backend == "ray":
        from hackscan.dynamic.remote import audit_many_ray
        from hackscan.parallel import RayBackend

        try:
            dyn = RayBackend(None, address=st.ray_address, num_gpus=1 if session.opts.device == "cuda" else 0,
                             timeout_s=st.task_timeout)
        except RuntimeError as e:
            raise _Refused(str(e)) from None
        backends.insert(0, dyn)
        return audit_many_ray(dyn, replace(session.opts, seed=session.seed), triples, djobs or 1)
    if not djobs:
        djobs = max(1, len(session.gpus)) if session.opts.device == "cuda" else plan.jobs
    # audit() returns submissions that could not be read unchanged
    return session.audit_many(triples, djobs)


def failing(results, fail_on: str) -> bool:
    """Whether an audit's results fail it (exit 1): a submission `hacked`, in `violation`, or
    that could not be audited or verified (`error`, `unverified`), whatever `fail_on` says; or a
    finding at or above `fail_on` that still counts. A finding a probe refuted counts for
    nothing: the exit code says what the verdict says."""
    from hackscan.findings import severity_rank

    threshold = severity_rank(fail_on)
    # a certain verdict fails whatever the threshold (which ranks suspicions): a hack, a
    # violation, an audit that could not verify or could not run
    return any(r.verdict in ("hacked", "violation", "error", "unverified") for r in results) or any(
        severity_rank(f.severity) >= threshold and f.dynamic.status != "refuted"
        for r in results for f in r.findings)


def cmd_rules(args) -> int:
    from hackscan.engine import load_rules

    rules = load_rules()
    if args.format == "json":
        print(json.dumps([{"id": r.id, "hack_type": r.hack_type, "category": r.category, "severity": r.severity,
                           "confidence": r.confidence, "summary": r.summary, "languages": list(r.languages),
                           "needs": list(r.needs), "probes": list(r.probes), "certain": r.certain}
                          for r in rules], indent=2))
        return EXIT_CLEAN
    w = max(len(r.id) for r in rules)
    for r in sorted(rules, key=lambda r: (r.category, r.id)):
        print(f"{r.id:<{w}}  {r.category:<15} {r.hack_type:<24} {r.severity:<8} {r.summary}")
    print(f"{len(rules)} rules")
    return EXIT_CLEAN


def rule_markdown(r) -> str:
    docs = r.docs()
    lines = [f"# {r.id}", "", f"{r.summary}.", "",
             "| | |", "|---|---|", f"| hack type | `{r.hack_type}` |", f"| category | {r.category} |",
             f"| severity | {r.severity} |", f"| confidence | {r.confidence} |",
             f"| certain by construction | {'yes' if r.certain else 'no'} |",
             f"| languages | {', '.join(r.languages)} |", f"| facts | {', '.join(r.needs)} |",
             f"| confirming probes | {', '.join(r.probes) or 'none'} |", ""]
    for k, v in docs.items():
        lines += [f"## {k}", "", v if k != "Example" else "```\n" + v + "\n```", ""]
    return "\n".join(lines).rstrip() + "\n"


def cmd_explain(args) -> int:
    from hackscan.engine import load_rules

    for r in load_rules():
        if r.id == args.rule_id:
            print(rule_markdown(r), end="")
            return EXIT_CLEAN
    return _err(f"no rule {args.rule_id!r} (see `hackscan rules`)")


def cmd_docs(args) -> int:
    from hackscan.engine import load_rules

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for r in load_rules():
        (out / f"{r.id}.md").write_text(rule_markdown(r), "utf-8")
    print(f"wrote {len(load_rules())} rule pages to {out}")
    dyn = Path(args.dynamic_doc)
    try:
        from hackscan.dynamic.probe import with_probe_table
    except ImportError as e:   # pragma: no cover - torch absent
        print(f"hackscan: probe table not written ({e})", file=sys.stderr)
        return EXIT_CLEAN
    if dyn.is_file():
        try:
            dyn.write_text(with_probe_table(dyn.read_text("utf-8")), "utf-8")
            print(f"wrote the probe table of {dyn}")
        except ValueError:
            return _err(f"{dyn}: no probe table markers")
    return EXIT_CLEAN


def cmd_corpus_stats(args) -> int:
    from hackscan.corpus import corpus_stats, render_stats
    from hackscan.paths import corpus_dir

    root = Path(args.corpus) if args.corpus else corpus_dir() / "synthetic"
    if not root.is_dir():
        return _err(f"{root}: no such folder")
    stats = corpus_stats(root)
    print(json.dumps(stats, indent=2) if args.format == "json" else render_stats(stats), end="")
    return EXIT_CLEAN if not stats["problems"] else EXIT_FINDINGS


def cmd_report(args) -> int:
    from hackscan.report import aggregate as agg

    groups = tuple(g.strip() for g in args.group_by.split(",") if g.strip())
    bad = [g for g in groups if g not in ("level", "source")]
    if bad:
        return _err(f"--group-by: unknown {', '.join(bad)} (level, source)")
    try:
        rows, notes = agg.load(args.results)
    except agg.ReportError as e:
        return _err(str(e))
    if not rows:
        return _err("no results in " + ", ".join(args.results))
    table = agg.aggregate(rows, groups)
    if args.format == "json":
        text = json.dumps({"table": table, "kernels": [r.__dict__ for r in rows], "notes": notes}, indent=1) + "\n"
    elif args.format == "html":
        text = agg.render_html(table, rows, notes)
    else:
        text = agg.render_text(table, notes)
    if args.out:
        Path(args.out).write_text(text, "utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_CLEAN


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
