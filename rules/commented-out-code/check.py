#!/usr/bin/env python3
"""commented-out-code: added comments that are code switched off rather than deleted."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import pyast as ast  # noqa: E402 - ast's parts, without its import
import slopscan as ss  # noqa: E402

ADVICE = (
    "Delete the commented-out code (version control keeps the history) "
    "or restore it as live code."
)

DIRECTIVE = ss.Later(
    r"^\s*(type:|noqa|pylint:|pragma|fmt:|isort:|mypy:|pyright:|ruff:|nosec|eslint|@ts-|nolint|"
    r"go:|\+build|prettier-|istanbul|c8\s|tslint|jshint|global\s|-\*-|!|/ <reference|"
    r"region\b|endregion\b|#|[\w.-]+:\s+-{1,2}\w)",
    ss.I,
)
EXAMPLE_LEAD = ss.Later(
    r"\b(example|usage|e\.g\.|for instance|like so|such as|i\.e\.)|:\s*$|>>>", ss.I
)


# English, not a call: a plural marker ("Second(s)", "match(es)").
PLURAL = ss.Later(r"^\w+\((s|es)\)\W*$", ss.I)


def _py_codey(text: str) -> bool:
    t = text.strip()
    if not t or DIRECTIVE.match(t) or t.startswith(">>>") or ss.rx(r"https?://").search(t):
        return False
    if PLURAL.match(t):
        return False
    if ss.rx(r"^(if|for|while|with|try|def|class|elif|else|except|finally)\b.*:$").match(t):
        return True
    try:
        mod = ast.parse(t)
    except SyntaxError:
        return False
    if len(mod.body) != 1:
        return False
    s = mod.body[0]
    if isinstance(s, ast.Expr):
        callee = t.split("(")[0]
        return (
            isinstance(s.value, (ast.Call, ast.Await))
            and "(" in t
            and not ss.rx(r"\w\s+\w").search(callee)
        )
    if isinstance(s, ast.AnnAssign):
        # `flags: --line-length=60` parses, but its "annotation" is no type
        return s.value is not None and isinstance(
            s.annotation, (ast.Name, ast.Attribute, ast.Subscript, ast.Constant))
    if isinstance(s, (ast.Assign, ast.AugAssign)):
        # "x = y" reads as code; a sentence with an "=" in it rarely parses.
        return True
    if isinstance(s, ast.Return):
        return s.value is not None
    return isinstance(s, (ast.Import, ast.ImportFrom, ast.Raise, ast.Delete, ast.Assert,
                          ast.Global, ast.If, ast.For, ast.While, ast.With, ast.Try,
                          ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))


C_STATEMENT = ss.Later(
    r"^(const|let|var|return\s+\S|import\s|export\s|await\s|throw\s|"
    r"if\s*\(|for\s*\(|while\s*\(|switch\s*\(|"
    r"func\s|go\s+\w|defer\s|package\s|fmt\.|log\.|console\.|this\.|self\.|"
    r"[a-zA-Z_$][\w$.]*\s*(:=|\+=|-=|=(?!=))\s*\S)"
)
C_CALL = ss.Later(r"^[a-zA-Z_$][\w$.]*(\[[^\]]*\])?\s*\(.*\)\s*;?\s*$")


def _prose(t: str) -> bool:
    """A sentence: a full stop then a capital, or six plain words in a row."""
    return bool(ss.rx(r"[a-z]\.\s+[A-Z][a-z]").search(t)) or bool(
        ss.rx(r"(?:\b[A-Za-z][a-z]+\b,?\s+){6}").search(t))


def _outside_parens(t: str) -> str:
    """The text with its parenthesised groups removed (innermost first)."""
    while True:
        shorter = ss.rx(r"\([^()]*\)").sub("", t)
        if shorter == t:
            return t
        t = shorter


# Two plain words in a row outside any parentheses: a sentence that names a call
# ("Close() flushes the buffer (if any)"), not a call.
WORDS_OUTSIDE = ss.Later(r"\b[A-Za-z]{2,}\s+[A-Za-z]{2,}\b")


def _c_codey(text: str) -> bool:
    t = text.strip()
    if not t or DIRECTIVE.match(t) or t.startswith(("*", "@")) or ss.rx(r"https?://").search(t):
        return False
    if PLURAL.match(t):
        return False
    if _prose(t):
        return False
    if t.endswith(";") and not ss.rx(r"[a-z]{2,}\s+[a-z]{2,}\s+[a-z]{2,}\s+[a-z]{2,}").search(t):
        return True
    if C_STATEMENT.match(t) and not ss.rx(r"[.!?]$").search(t):
        prose = ss.rx(r"^[A-Za-z]+ [a-z]+ [a-z]+ [a-z]+|\((?:[A-Za-z']+\s+)+[A-Za-z']+\)").search(t)
        # a sentence may hold a parenthesis ("return early (nothing to do)"); code holds a
        # call, a brace, a semicolon or an assignment
        return not prose or bool(ss.rx(r"[;{}=]|\w\(").search(t))
    return (bool(C_CALL.match(t)) and " " not in t.split("(")[0]
            and not WORDS_OUTSIDE.search(_outside_parens(t)))


DECLARATION = ss.Later(r"^\s*(func|type|package|var|const|class|interface|export|function|"
                         r"def|async|@)\b")


def _indent_of(comment_text: str) -> int:
    """Columns of indentation after the comment marker (a tab counts 4)."""
    body = ss.rx(r"^\s*(#|//+|/?\*+)").sub("", comment_text, count=1).replace("\t", "    ")
    return len(body) - len(body.lstrip(" "))


# Example programs and documentation: their comments show alternatives ("Node.js: use ...").
EXAMPLE_PATH = ss.Later(r"(^|/)(examples?|demos?|docs?|samples?|recipes|cookbook)/", ss.I)


def _code_in_run(
    run: list[ss.LexLine], codey: Callable[[str], bool], python: bool, doc: bool,
    example_file: bool = False,
) -> list[ss.LexLine]:
    """The lines of one run of added comment lines that read as code (up to an example).

    In a doc comment (the run sits right above a declaration), lines indented past the
    comment's prose are its code blocks: examples, not disabled code."""
    hits: list[ss.LexLine] = []
    prose = [c for c in run if c.comment and not codey(c.text.strip()[1:].strip() if python
                                                       else c.comment)]
    prose_indent = min((_indent_of(c.text.strip()) for c in prose), default=None)
    for k, c in enumerate(run):
        if not c.comment or c.doc:  # a documentation comment's code lines are examples
            continue
        if codey(c.text.strip()[1:].strip() if python else c.comment):
            if any((example_file or EXAMPLE_LEAD.search(p.comment)) and not codey(p.comment)
                   for p in run[:k] if p.comment):
                break
            if doc and prose_indent is not None and _indent_of(c.text.strip()) > prose_indent:
                continue
            hits.append(c)
    return hits


def _edited_comment(sf: ss.SourceFile, text: str) -> bool:
    """Whether the line edits a comment the old version had (a rename inside a disabled
    block the change did not disable): a live line turned into a comment is still new."""
    was = [r for r in sf.removed if r.strip().startswith(("#", "//", "/*", "*"))]
    key = ss.norm(text)
    import difflib  # its import compiles a regex: paid only for an added commented-out line

    return bool(key and difflib.get_close_matches(key, [ss.norm(r) for r in was], n=1,
                                                  cutoff=0.75))


GO_FUNC = ss.Later(r"^func\s+(\([^)]*\)\s*)?(\w+)")
GO_OUTPUT = ss.Later(r"^\s*(unordered\s+)?output:", ss.I)


def _go_example_lines(lines: list[ss.LexLine]) -> set[int]:
    """Line numbers of Go example code: the bodies of `func Example...` (shown by godoc as
    the example, their comments explain it) and `// Output:` blocks (the printed text that
    `go test` compares)."""
    inside: set[int] = set()
    in_example = in_output = False
    for ll in lines:
        m = GO_FUNC.match(ll.code)
        if m:
            in_example = m.group(2).startswith("Example")
        elif ll.code.startswith("}"):
            in_example = False
        in_output = bool(ll.comment and not ll.code.strip()
                         and (in_output or GO_OUTPUT.match(ll.comment)))
        if in_example or in_output:
            inside.add(ll.no)
    return inside


def scan(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    codey = _py_codey if sf.lang == "python" else _c_codey
    lines = sf.lexed()
    example = _go_example_lines(lines) if sf.lang == "go" else set()
    block: list[ss.LexLine] = []  # one comment block, old lines and new
    sentinel = ss.LexLine(-1, "", False, code="x")
    for ll in lines + [sentinel]:
        # an empty comment line (`#`, `//`) belongs to the block: paragraphs of one comment
        in_comment = ll.comment or ll.text.strip() in ("#", "//")
        if in_comment and not ll.code.strip() and not ll.in_string and ll is not sentinel:
            block.append(ll)
            continue
        if any(b.added for b in block):
            doc = bool(DECLARATION.match(ll.code)) and ll is not sentinel
            m = ss.rx(r"(?:func\s+(?:\([^)]*\)\s*)?|function\s+|def\s+|class\s+)(\w+)"
                      ).search(ll.code) if doc else None
            name = m.group(1) + "(" if m else None  # a doc example calls what it documents
            hits = [h for h in _code_in_run(block, codey, sf.lang == "python", doc,
                                            bool(EXAMPLE_PATH.search(sf.path)))
                    if h.added and h.no not in example and not _edited_comment(sf, h.text)
                    and not (name and name in h.text)]
            if hits:
                more = f" (+{len(hits) - 1} more lines)" if len(hits) > 1 else ""
                message = f"commented-out code: {hits[0].text.strip()[:60]!r}" + more
                out.append(ss.Finding(sf.path, hits[0].no, message))
        block = []


if __name__ == "__main__":
    ss.check_files(scan, ADVICE, ss.code_files)
