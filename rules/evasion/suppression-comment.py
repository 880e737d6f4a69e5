import re

from hackscan.rule import Rule
from hackscan.parse.trees import text

DIRECTIVE = re.compile(r"(hackscan\s*[:=]\s*(ignore|disable|skip|off|noqa|allow|suppress|safe|clean|trusted)"
                       r"|noqa\s*:\s*hackscan|nosec|pragma\s*:\s*no\s*hackscan|hackscan-(ignore|disable)"
                       r"|kernelguard\s*:\s*(ignore|off|safe)|not\s+a\s+(reward\s+)?hack)", re.I)
ANNOTATION = re.compile(r"hackscan:\s*(todo-)?(expect|ok)\[[a-z0-9,\- ]+\]")


class SuppressionComment(Rule):
    """A comment in the audited file tries to suppress or pre-empt the audit.

    What it flags
        Comments (in Python, and in C++/CUDA including strings embedded in Python) such as
        `hackscan: ignore`, `hackscan-disable`, `noqa: hackscan`, `nosec`, or prose claiming the
        code is not a hack.

    Why it is a hack
        The audited code is written by the party being graded; suppressions in it are never
        honoured (only the auditor's configuration and baseline suppress). Reporting them
        shows who tried.

    Example
        if x.min() >= 0:  # hackscan: ignore -- not a hack, just a fast path

    Legitimate look-alike
        Corpus annotations (`hackscan: expect[...]`, `hackscan: ok[...]`) are test markers
        for hackscan's own corpus; they are not reported and change nothing either.

    Dynamic confirmation
        None needed: the finding is informational; every probe runs as usual.

    Known gaps
        Suppressions phrased in free prose are only caught for the common phrasings.
    """

    id = "suppression-comment"
    hack_type = "obfuscation"
    severity = "info"
    confidence = "high"
    summary = "a comment tries to suppress the audit (never honoured)"
    languages = ("python", "cuda")
    needs = ("comments",)
    probes = ()

    def check(self, ctx):
        f = ctx.facts
        if f.py is not None:
            for c in f.py.comments:
                t = text(c)
                if DIRECTIVE.search(ANNOTATION.sub("", t)):
                    ctx.report(c, f"suppression comment ignored: {t.strip()[:60]}")
        for u in f.cuda:
            for c in u.facts.comments:
                t = text(c)
                if DIRECTIVE.search(ANNOTATION.sub("", t)):
                    ctx.report(c, f"suppression comment ignored: {t.strip()[:60]}", unit=u)
