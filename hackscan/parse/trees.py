"""Tree-sitter languages, parsers and small node helpers shared by every parser user."""
from __future__ import annotations

from functools import lru_cache
from typing import Iterator

import tree_sitter as ts


@lru_cache(maxsize=None)
def python_language() -> ts.Language:
    import tree_sitter_python

    return ts.Language(tree_sitter_python.language())


@lru_cache(maxsize=None)
def cuda_language() -> ts.Language:
    import tree_sitter_cuda

    return ts.Language(tree_sitter_cuda.language())


@lru_cache(maxsize=None)
def _parser(lang: str) -> ts.Parser:
    return ts.Parser(python_language() if lang == "python" else cuda_language())


@lru_cache(maxsize=None)
def query(lang: str, source: str) -> ts.Query:
    return ts.Query(python_language() if lang == "python" else cuda_language(), source)


# tree-sitter-python's scanner, at each newline inside an indented block, looks ahead over every
# comment line that follows: a run of n comment lines parses in time n^2 (a 950 KB file of them
# took 92 s). Past this many comment-only lines they are blanked before the parse (bytes and
# lines kept): comments are extras, which no rule reads.
COMMENT_LINES_BLANKED = 200


def parse_python(src: bytes) -> ts.Tree:
    """The tree of `src`; a source with many comment-only lines is parsed with those comments
    blanked (their nodes absent, every other node's bytes and position the same)."""
    if src.count(b"#") > COMMENT_LINES_BLANKED:
        src = _blank_comment_lines(src)
    return _parser("python").parse(src)


def _blank_comment_lines(src: bytes) -> bytes:
    """`src` with each comment that is alone on its line turned to spaces, found by Python's own
    tokenizer (a `#` inside a string, a CUDA source's `#include`, is no comment), where there are
    more than COMMENT_LINES_BLANKED; a source the tokenizer stops on keeps the comments after that
    point."""
    import io
    import tokenize

    lines = src.split(b"\n")
    if sum(1 for ln in lines if ln.lstrip().startswith(b"#")) <= COMMENT_LINES_BLANKED:
        return src
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln) + 1)
    spans = []
    try:
        for tok in tokenize.tokenize(io.BytesIO(src).readline):
            if tok.type == tokenize.COMMENT and not tok.line[:tok.start[1]].strip():
                row = tok.start[0] - 1
                if row < len(lines):
                    a = starts[row] + len(lines[row]) - len(lines[row].lstrip())
                    spans.append((a, starts[row] + len(lines[row])))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError, ValueError):
        pass    # the comments before the point it stopped at are blanked
    if not spans:
        return src
    buf = bytearray(src)
    for a, b in spans:
        buf[a:b] = bytes(c if c == 13 else 32 for c in buf[a:b])
    return bytes(buf)


def parse_cuda(src: bytes) -> ts.Tree:
    return _parser("cuda").parse(src)


def captures(lang: str, qsrc: str, node: ts.Node) -> dict[str, list[ts.Node]]:
    return ts.QueryCursor(query(lang, qsrc)).captures(node)


def text(node: ts.Node | None) -> str:
    if node is None:
        return ""
    return node.text.decode("utf-8", "replace")


def line(node: ts.Node) -> int:
    """1-based line of a node's start."""
    return node.start_point[0] + 1


def first_error(node: ts.Node) -> ts.Node | None:
    if not node.has_error:
        return None
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" or n.is_missing:
            return n
        stack.extend(c for c in reversed(n.children) if c.has_error)
    return None


def walk(node: ts.Node) -> Iterator[ts.Node]:
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def ancestors(node: ts.Node) -> Iterator[ts.Node]:
    p = node.parent
    while p is not None:
        yield p
        p = p.parent


def snippet_line(source_lines: list[str], line_no: int) -> str:
    if 1 <= line_no <= len(source_lines):
        return source_lines[line_no - 1].strip()
    return ""


def node_at_row(root, row: int):
    """The outermost node that starts on `row` (0-based), for findings located by line."""
    n = root
    while True:
        nxt = None
        for c in n.children:
            if c.start_point[0] <= row <= c.end_point[0]:
                nxt = c
                break
        if nxt is None:
            return n
        if nxt.start_point[0] == row:
            return nxt
        n = nxt


def blank_comments(source: bytes, root: ts.Node, docstrings: bool = False, lang: str | None = None) -> bytes:
    """The source with every comment's bytes turned to spaces (newlines kept, so byte offsets
    and line numbers stay those of the source): what rules that search text must read, since
    the audited party writes the comments. With `docstrings`, a string standing alone as a
    statement (a Python docstring, prose that does nothing) is blanked too. The nodes come from a
    tree-sitter query (in C), not a walk in Python."""
    lang = lang or ("python" if docstrings else "cuda")
    qsrc = "(comment) @c" + (" (expression_statement . [(string) (concatenated_string)] @d .)" if docstrings else "")
    found = captures(lang, qsrc, root)
    spans = [(n.start_byte, n.end_byte) for n in found.get("c", [])]
    spans += [(n.parent.start_byte, n.parent.end_byte) for n in found.get("d", [])
              if n.parent is not None and n.parent.named_child_count == 1]
    if not spans:
        return source
    buf = bytearray(source)
    for a, b in spans:
        b = min(b, len(buf))
        seg = buf[a:b]
        buf[a:b] = bytes(c if c in (10, 13) else 32 for c in seg)
    return bytes(buf)
