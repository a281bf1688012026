#!/usr/bin/env python3
"""sleep-waits: fixed sleeps that wait for something to happen instead of waiting for it."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import pyast as ast  # noqa: E402 - ast's parts, without its import
import slopscan as ss  # noqa: E402

ADVICE = ("Wait for the condition itself (poll with a deadline, an event, a future, "
          "a readiness probe, fake timers) instead of sleeping a fixed time.")
RACE_TALK = ss.Later(
    r"\b(race|wait\s+(for|until)|give\s+\w+(\s+\w+)?\s+(time|a\s+(moment|second|chance))|make\s+sure|ensure|"
    r"settle|catch\s+up|flak|hack|workaround|let\s+(it|the\s+\w+)\s+(finish|start|complete|sync)|"
    r"(is|be)\s+ready|to\s+(finish|complete|start\s+up|propagate))",
    ss.I,
)
# Sleeping IS the behaviour under test: expiry, timeouts, clocks, rate limits.
CLOCK_TALK = ss.Later(
    r"ttl|expir|timeout|time_?out|mtime|clock|resolution|rate.?limit|debounce|throttle|"
    r"backoff|elapsed|duration|stale|slow|granularity|racily|(same|later|next)\s+second",
    ss.I,
)
# Every sleep looked for in Python is named `sleep`: a file without the word is not parsed.
PY_ANY = ("sleep",)
PY_SLEEP = {
    "time.sleep", "sleep", "asyncio.sleep", "anyio.sleep", "trio.sleep", "gevent.sleep",
}


def _nearby_comment(sf: ss.SourceFile, no: int) -> str:
    lexed = {ll.no: ll for ll in sf.lexed()}
    parts = [lexed[no].comment if no in lexed else ""]
    k = no - 1
    while k in lexed and lexed[k].comment and not lexed[k].code.strip():
        parts.append(lexed[k].comment)
        k -= 1
    return " ".join(parts)


def _py_sleep(
    sf: ss.SourceFile, call: ast.Call, fn: str | None, in_loop: bool, out: list[ss.Finding]
) -> None:
    """Report a fixed sleep that waits in a test, or that a comment says papers over a race."""
    arg = call.args[0] if call.args else None
    zero = isinstance(arg, ast.Constant) and arg.value in (0, 0.0)
    near = _nearby_comment(sf, call.lineno)
    if zero or in_loop or CLOCK_TALK.search(f"{fn} {near}"):
        return
    if sf.is_test and fn is not None and fn.startswith("test"):
        message = f"fixed sleep in {fn.split()[0]}() waits instead of synchronising"
        out.append(ss.Finding(sf.path, call.lineno, message))
    elif RACE_TALK.search(near):
        out.append(ss.Finding(sf.path, call.lineno, "fixed sleep papering over a race"))


def python_ast(sf: ss.SourceFile, tree: ast.Module, out: list[ss.Finding]) -> None:
    def visit(node: ast.AST, fn: str | None, in_loop: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                doc = "" if isinstance(child, ast.Lambda) else (ast.get_docstring(child) or "")
                visit(child, f"{getattr(child, 'name', '<lambda>')} {doc}", False)
                continue
            loop = in_loop or isinstance(child, (ast.For, ast.While, ast.AsyncFor))
            if (
                isinstance(child, ast.Call)
                and ss.dotted(child.func) in PY_SLEEP
                and ss.node_added(sf, child)
            ):
                _py_sleep(sf, child, fn, in_loop, out)
            visit(child, fn, loop)

    visit(tree, None, False)


ASSERTION = ss.Later(
    r"^\s*assert\b|\bexpect\s*\(|\bt\.(Error|Fatal)|\brequire\.|\bself\.assert|\bassert\."
)
TEST_START = ss.Later(r"^\s*func\s+Test|\b(it|test|specify)\s*\(|^\s*(async\s+)?def\s+test")
LOOP_START = ss.Later(r"^\s*(for|while)\b|^\s*\}?\s*while\s*\(|\.(forEach|map)\(|^\s*do\s*\{")


HELPER_START = ss.Later(r"\bfunc\b|^\s*(async\s+)?def\s|=>\s*\{|\bfunction\b|^\s*class\s")
# `async fetch() {` / `get(key) {`: a method of a class or object literal (a fake's method).
JS_METHOD = ss.Later(r"^\s*(async\s+|static\s+|private\s+|public\s+)*(?!(if|for|while|switch|"
                       r"catch|function|return)\b)[A-Za-z_$][\w$]*\s*\([^)]*\)\s*(:\s*[^{]+)?\{\s*$")
# A stand-in whose sleep simulates slow work (RUBRIC S11 look-alike).
TEST_DOUBLE = ss.Later(r"\b(mockImplementation|mockResolvedValue|jest\.fn|vi\.fn|sinon\.\w+|"
                         r"side_effect|Fake|Stub|Mock|Slow|Spy)\w*", ss.I)


# A fixed sleep, by language (others, and Python that does not parse: a call of a sleep).
SLEEP = {
    "go": ss.Later(r"\btime\.Sleep\s*\("),
    "js": ss.Later(
        r"\bawait\s+(new\s+Promise\s*\(.*setTimeout|(sleep|delay|wait|pause|timeout)\s*\(\s*\d|"
        r"\w+\.(waitForTimeout|pause)\s*\(\s*\d)|\bcy\.wait\(\s*\d"),
}
SLEEP_OTHER = ss.Later(r"\b(Thread\.sleep|sleep|usleep)\s*\(\s*\d")


def curly_lines(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    lines = sf.lexed()
    sleep = SLEEP.get(sf.lang or "", SLEEP_OTHER)
    for i, ll in sf.added_indexed():
        if not sleep.search(ll.code):
            continue
        indent = ss.indent(ll.text)
        in_loop, in_test = False, False
        test_name = ""
        for prev in reversed(lines[:i]):
            if not prev.code.strip():
                continue
            pind = ss.indent(prev.text)
            if pind >= indent:
                continue
            if LOOP_START.search(prev.code):
                in_loop = True
                break
            if TEST_START.search(prev.code):
                in_test = True
                test_name = prev.code + " " + " ".join(prev.strings)
                break
            if HELPER_START.search(prev.code) or JS_METHOD.match(prev.code) \
                    or TEST_DOUBLE.search(prev.code):
                break  # inside a helper, a method or a test double: neither a loop nor a test
            indent = pind
        else:
            # the hunk starts inside the function: a sleep right before an assertion is a wait
            after = [n.code for n in lines[i + 1 : i + 6] if n.code.strip()]
            in_test = any(ASSERTION.search(c) for c in after[:3])
        near = _nearby_comment(sf, ll.no)
        if in_loop or CLOCK_TALK.search(f"{test_name} {near}"):
            continue
        if sf.is_test and in_test:
            message = "fixed sleep in a test waits instead of synchronising"
            out.append(ss.Finding(sf.path, ll.no, message))
        elif RACE_TALK.search(near):
            out.append(ss.Finding(sf.path, ll.no, "fixed sleep papering over a race"))


def scan(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    if sf.lang != "python":
        curly_lines(sf, out)
    elif ss.may_hold(sf, PY_ANY, fold=False):
        ss.by_tree(sf, out, python_ast, curly_lines)


if __name__ == "__main__":
    ss.check_files(scan, ADVICE, ss.code_files)
