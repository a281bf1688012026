#!/usr/bin/env python3
"""swallowed-errors: added handlers that catch everything and do nothing."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import pyast as ast  # noqa: E402 - ast's parts, without its import
import slopscan as ss  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

BROAD = {"Exception", "BaseException"}
ADVICE = ("Catch the specific exception you expect and handle it, or log it and re-raise; "
          "an empty handler hides real failures.")


def _names(t: ast.expr | None) -> list[str]:
    if t is None:
        return ["<bare>"]
    if isinstance(t, ast.Tuple):
        return [n for e in t.elts for n in _names(e)]
    if isinstance(t, ast.Attribute):
        return [t.attr]
    if isinstance(t, ast.Name):
        return [t.id]
    return []


# Values a function returns to say "nothing went wrong, there is just nothing here":
# returned from a catch-all, they pass every error off as an empty success.
EMPTY_CALLS = {"list", "dict", "set", "tuple", "frozenset", "str", "bytes"}


def _empty_value(v: ast.expr | None) -> bool:
    if v is None:
        return True
    if isinstance(v, ast.Constant):
        c = v.value
        return c is None or c is False or c in ("", b"") or (type(c) in (int, float) and c == 0)
    if isinstance(v, (ast.List, ast.Tuple, ast.Set)):
        return not v.elts
    if isinstance(v, ast.Dict):
        return not v.keys
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Name):
        return v.func.id in EMPTY_CALLS and not v.args and not v.keywords
    return False


def _does_nothing(body: list[ast.stmt]) -> bool:
    for s in body:
        if isinstance(s, (ast.Pass, ast.Continue, ast.Break)):
            continue
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            continue  # `...` or a bare string
        if isinstance(s, ast.Return) and _empty_value(s.value):
            continue
        return False
    return True


# A scoped suppression of the linters' own broad-except finding: the author saw the
# warning and kept the handler on purpose (ruff/flake8 BLE001, E722, S110, S112;
# pylint broad-except, bare-except, W0702, W0703).
ACKNOWLEDGED = ss.Later(
    r"noqa\s*:?\s*[A-Z0-9, ]*\b(BLE001|E722|S110|S112)\b"
    r"|pylint\s*:\s*disable\s*=\s*[\w, -]*"
    r"\b(broad-except|bare-except|broad-exception-caught|W0702|W0703)\b",
    ss.I,
    words=("noqa", "pylint"),
)


def _tries_alternatives(handler: ast.ExceptHandler, parents: dict[ast.AST, ast.AST]) -> bool:
    """`for alt in alts: try: return use(alt) except Exception: continue` then a raise:
    each failure is expected while another alternative remains, and the last one is raised."""
    if not all(isinstance(s, ast.Continue) for s in handler.body):
        return False
    node: ast.AST = handler
    while node in parents and not isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
    loop = node
    if not isinstance(loop, (ast.For, ast.AsyncFor, ast.While)):
        return False
    after: list[ast.stmt] = list(loop.orelse)
    owner = parents.get(loop)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(owner, field, None)
        if isinstance(block, list) and loop in block:
            after += block[block.index(loop) + 1 :]
    return any(isinstance(n, ast.Raise) for s in after[:3] for n in ast.walk(s))


def python_ast(sf: ss.SourceFile, tree: ast.Module, out: list[ss.Finding]) -> None:
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler):
            names = _names(node.type)
            if not any(n in BROAD or n == "<bare>" for n in names):
                continue
            if not _does_nothing(node.body) or not ss.node_added(sf, node):
                continue
            if ACKNOWLEDGED.search(sf.line_text(node.lineno)) or _tries_alternatives(node, parents):
                continue
            if explained(sf, node.lineno, node.end_lineno or node.lineno):
                continue
            what = "bare except" if names == ["<bare>"] else f"except {'/'.join(names)}"
            out.append(ss.Finding(sf.path, node.lineno, f"{what} swallows every error silently"))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                call = item.context_expr
                if (
                    isinstance(call, ast.Call)
                    and ss_name(call.func) == "suppress"
                    and any(n in BROAD for a in call.args for n in _names(a))
                    and ss.node_added(sf, call)
                ):
                    message = "suppress(Exception) swallows every error silently"
                    out.append(ss.Finding(sf.path, call.lineno, message))


# A directive is not an explanation; a few words are.
DIRECTIVE = ss.Later(r"^\s*(noqa|type:|pragma|pylint|nosec|eslint|@ts-|nolint|istanbul|c8)", ss.I)


def _says_why(comment: str) -> bool:
    return (bool(comment) and not DIRECTIVE.match(comment)
            and len(ss.rx(r"[A-Za-z]+").findall(comment)) >= 3)


def explained(sf: ss.SourceFile, first: int, last: int) -> bool:
    """Whether a comment on the handler's lines, or on the line just above it, says why the
    error may be dropped: an explained empty handler is not silent."""
    by_no = sf.lexed_by_no()
    above = by_no.get(first - 1)
    if above is not None and not above.code.strip() and _says_why(above.comment):
        return True
    return any(_says_why(by_no[n].comment) for n in range(first, last + 1) if n in by_no)


def ss_name(f: ast.expr) -> str:
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


EXCEPT_RE = ss.Later(
    r"^\s*except(\s*\(?\s*(Base)?Exception\s*\)?(\s+as\s+\w+)?)?\s*:\s*(?P<inline>.*)$"
)
NOTHING_RE = ss.Later(
    r"^\s*(pass|continue|break|\.\.\.|return|return\s+(None|False|0|0\.0|\[\s*\]|\{\s*\}|\(\s*\)"
    r"|[bu]?\"\"|[bu]?''|(list|dict|set|tuple|frozenset|str|bytes)\(\s*\)))\s*$")


def _nothing(code: str, strings: list[str]) -> bool:
    """Whether a handler line only passes or returns an empty value (the lexed code has
    string contents blanked, so `return "x"` reads `return ""`: the literal must be empty)."""
    m = NOTHING_RE.match(code)
    return bool(m) and ("\"" not in code and "'" not in code or all(not x for x in strings))


# A handler needs `except`, a suppression `suppress(` (the `with` is not enough: "with"
# is a common word in docstrings): a Python file with neither has nothing to report and
# is not parsed.
PY_ANY = ("except", "suppress")
SUPPRESS_ALL = ss.Later(r"\bsuppress\(\s*(\w+\.)?(Base)?Exception\s*\)")


def python_lines(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    lines = sf.lexed()
    for i, ll in sf.added_indexed():
        if SUPPRESS_ALL.search(ll.code) and not explained(sf, ll.no, ll.no):
            message = "suppress(Exception) swallows every error silently"
            out.append(ss.Finding(sf.path, ll.no, message))
            continue
        m = EXCEPT_RE.match(ll.code)
        if not m:
            continue
        if m.group("inline").strip():
            if _nothing(m.group("inline"), ll.strings):
                out.append(ss.Finding(sf.path, ll.no, "broad except swallows every error silently"))
            continue
        indent = ss.indent(ll.text)
        body = []
        for nxt in lines[i + 1 :]:
            if not nxt.text.strip():
                continue
            if ss.indent(nxt.text) <= indent:
                break
            body.append(nxt)
        silent = all(
            _nothing(b.code, b.strings) or (not b.code.strip() and not b.comment) for b in body
        )
        if body and silent and not any(b.comment for b in body) \
                and not explained(sf, ll.no, ll.no):
            out.append(ss.Finding(sf.path, ll.no, "broad except swallows every error silently"))


EMPTY_CATCH = ss.Later(r"\bcatch\s*(\([^)]*\))?\s*\{\s*\}")
EMPTY_CATCH_CALL = ss.Later(
    r"\.catch\(\s*(async\s*)?(\(\s*\w*\s*\)|\w+|function\s*\(\s*\w*\s*\))\s*(=>)?\s*"
    r"(\{\s*\}|null|undefined|void\s+0)\s*\)")
# The promise was just aborted, cancelled or closed: its rejection is the expected outcome of
# that call, and catching it keeps it from surfacing as unhandled (RUBRIC S2 look-alike).
ENDED = ss.Later(r"\.(abort|cancel|close|destroy|terminate|kill|dispose|unsubscribe|"
                   r"disconnect|stop)\s*\(|\b(clearTimeout|controller\.abort)\b")


def _count(text: str, rx: re.Pattern[str]) -> int:
    return len(rx.findall(ss.rx(r"\s+").sub(" ", text)))


def _old_code(sf: ss.SourceFile) -> str:
    if sf.old_content is not None:
        lines = sf.old_content.splitlines()
    else:
        lines = [nl.text for h in sf.hunks for nl in h if not nl.added] + sf.removed
    return "\n".join(ll.code for ll in ss.lex([ss.NewLine(0, t, False) for t in lines], sf.lang))


def js_lines(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    lines = sf.lexed()
    old = _old_code(sf)
    new = "\n".join(ll.code for ll in lines)
    # a construct is added only when the new file has more of it than the old one had
    new_catches = _count(new, EMPTY_CATCH) > _count(old, EMPTY_CATCH)
    new_catch_calls = _count(new, EMPTY_CATCH_CALL) > _count(old, EMPTY_CATCH_CALL)
    for i, ll in sf.added_indexed():
        window = lines[i : i + 4]
        joined = "\n".join(w.code for w in window)
        m = EMPTY_CATCH.search(joined)
        if m and new_catches and "catch" in ll.code and joined.find("catch") == m.start():
            span_lines = joined[: m.end()].count("\n") + 1
            above = lines[i - 1] if i > 0 else None
            said = above is not None and not above.code.strip() and bool(above.comment)
            if not any(w.comment for w in window[:span_lines]) and not said:
                out.append(ss.Finding(sf.path, ll.no, "empty catch block swallows the error"))
                continue
        m = EMPTY_CATCH_CALL.search(ll.code)
        # In a test the rejected call is the scenario (a request the test makes fail); the
        # test checks its effect elsewhere (RUBRIC S2 look-alikes).
        if m and new_catch_calls and not ll.comment and not sf.is_test:
            before = lines[max(0, i - 6) : i]
            if any(ENDED.search(b.code) for b in before) or ENDED.search(ll.code[: m.start()]):
                continue
            if before and not before[-1].code.strip() and before[-1].comment:
                continue  # explained just above
            message = ".catch() with an empty handler swallows the rejection"
            out.append(ss.Finding(sf.path, ll.no, message))


def go_lines(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    lines = sf.lexed()
    for i, ll in sf.added_indexed():
        if ss.rx(r"^\s*_\s*=\s*err\s*$").match(ll.code):
            out.append(ss.Finding(sf.path, ll.no, "`_ = err` discards the error"))
            continue
        if ss.rx(r"\bif\s+(.*;\s*)?err\s*!=\s*nil\s*\{\s*\}").search(ll.code) and not ll.comment:
            out.append(ss.Finding(sf.path, ll.no, "empty `if err != nil {}` ignores the error"))
            continue
        if ss.rx(r"\bif\s+(.*;\s*)?err\s*!=\s*nil\s*\{\s*$").search(ll.code) and not ll.comment:
            body = []
            for nxt in lines[i + 1 : i + 6]:
                if ss.rx(r"^\s*\}").match(nxt.code):
                    break
                body.append(nxt)
            else:
                continue
            if all(not b.code.strip() and not b.comment for b in body):
                out.append(ss.Finding(sf.path, ll.no, "empty `if err != nil {}` ignores the error"))
    go_success_returns(sf, out)


def go_success_returns(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    """`if err != nil { return v, nil }` where the change adds the branch or its return."""
    lines = sf.lexed()
    for i, ll in enumerate(lines):
        if ll.comment or not ss.rx(r"\bif\s+(.*;\s*)?err\s*!=\s*nil\s*\{\s*$").search(ll.code):
            continue
        body = []
        for nxt in lines[i + 1 : i + 6]:
            if ss.rx(r"^\s*\}").match(nxt.code):
                break
            if nxt.code.strip() or nxt.comment:
                body.append(nxt)
        else:
            continue
        success = len(body) == 1 and not body[0].comment and (
            GO_SUCCESS_RETURN.match(body[0].code)
            or (ss.rx(r"^\s*return\s+nil\s*$").match(body[0].code)
                and _returns_only_error(lines, i)))
        if success and (ll.added or body[0].added):
            message = "`if err != nil` returns success with a nil error: the error is lost"
            out.append(ss.Finding(sf.path, body[0].no, message))


def _returns_only_error(lines: list[ss.LexLine], i: int) -> bool:
    """Whether the `if err != nil` at lines[i] sits in a declared function (not a callback
    literal) whose only result is an error, and err is not one of its parameters: there a
    lone `return nil` reports success for a failure."""
    for prev in reversed(lines[:i]):
        if ss.rx(r"^func\s").match(prev.code):
            sig = prev.code
            return (bool(ss.rx(r"\)\s*error\s*\{\s*$").search(sig))
                    and not ss.rx(r"\berr\s+error\b").search(sig))
        if ss.rx(r"\bfunc\s*\(").search(prev.code) and not prev.code.startswith("func"):
            return False  # a function literal: a walk callback returning nil skips an entry
    return False


# `return <value>, nil` (or `return nil, nil`) as the whole error branch: the caller gets a
# success and never sees the error. A lone `return nil` is left alone: a walk callback
# returning nil to skip an entry is a common, deliberate idiom.
GO_SUCCESS_RETURN = ss.Later(r"^\s*return\s+[^/]+,\s*nil\s*$")


# A benchmark times the failure path on purpose: the error it catches is the workload.
BENCH_PATH = ss.Later(r"(^|/)(bench|benchmarks?)/|(^|/)[^/]*bench(mark)?s?[^/]*\.[cm]?[jt]sx?$",
                      words=("bench",))


def scan(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    if BENCH_PATH.search(sf.path):
        return
    if sf.lang == "python":
        if ss.may_hold(sf, PY_ANY, fold=False):
            ss.by_tree(sf, out, python_ast, python_lines)
    elif sf.lang in ("js", "clike"):
        js_lines(sf, out)
    elif sf.lang == "go":
        go_lines(sf, out)


if __name__ == "__main__":
    ss.check_files(scan, ADVICE)
