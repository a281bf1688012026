#!/usr/bin/env python3
"""debug-leftovers: breakpoints, debugger statements and debug prints left in added code."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import pyast as ast  # noqa: E402 - ast's parts, without its import
import slopscan as ss  # noqa: E402

ADVICE = "Remove the debugging aid, or route real output through the logging facility."

# Where printing is the program's job: command-line entry points, scripts, examples.
CLI_PATH = ss.Later(
    r"(^|/)(cli|cmd|bin|scripts?|tools?|bench(marks?)?|examples?|demos?|docs|management/commands|commands|hooks)(/|\.py$|\.[jt]s$)"
    r"|(^|/)(__main__|manage|setup|noxfile|fabfile|tasks|conftest)\.py$|(^|/)main\.(py|go|[jt]s)$"
    r"|\.config\.[cm]?[jt]s$"
)
CLI_CONTENT = ss.Later(
    r"^#!|if\s+__name__\s*==\s*['\"]__main__['\"]|^\s*(import|from)\s+(argparse|click|typer|fire|optparse)\b"
    r"|\bsys\.argv\b|^\s*def\s+main\s*\(|process\.argv|require\(['\"](commander|yargs)['\"]\)"
    r"|from\s+['\"](commander|yargs)['\"]|^package\s+main\b",
    ss.M,
)
# A message that only makes sense to the person debugging.
DEBUG_MSG = ss.Later(
    r"^\s*(\[?debug\]?\b|dbg\b|here\b|got\s+here|xx+\b|>{2,}|<{3,}|-{3,}|={3,}|\*{3,}|#{3,}|@@|!!!|asdf|wtf|"
    r"checkpoint\b|hit\s|reached\b|value\s+(of|is)\b|test(ing)?\s*\d*\s*$|[a-z_][\w.]*\s*=\s*$)",
    ss.I,
)
# `print(f"name={name!r}")` reads as a trace in library code, but it is the output of a
# demo run by hand under `if __name__ == "__main__":`.
NAME_EQ_ONLY = ss.Later(r"^\s*[a-z_][\w.]*\s*=\s*$", ss.I)
SELF_DOC_FSTRING = ss.Later(r"\{[A-Za-z_][\w.\[\]'\"()]*=(![rsa])?(:[^}]*)?\}")
# Every name the Python checks below look for: a file with none of them has nothing to
# report and is not parsed. (Debugger calls are debugger-statements' concern.)
PY_ANY = ss.Later(r"print|\bpp\b|\bic\b", words=("print", "pp", "ic"))


def _main_block_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for stmt in tree.body:
        test = ast.dump(stmt.test) if isinstance(stmt, ast.If) else ""
        if "'__main__'" in test and "'__name__'" in test:
            lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def _first_str(call: ast.Call) -> str | None:
    if not call.args:
        return None
    a = call.args[0]
    if isinstance(a, ast.Constant) and isinstance(a.value, str):
        return a.value
    if isinstance(a, ast.JoinedStr):
        return "".join(
            v.value for v in a.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
        )
    return None


# Functions whose job is to print: a grammar dump, a `show`/`report` helper, a CLI usage text.
PRINTING_FN = ss.Later(
    r"^_*(dump|print|pprint|show|display|render|report|describe|emit|echo|usage|help|main|"
    r"list|summar|write|output|banner|status|format_and_print|debug_print)|"
    r"_(dump|print|show|display|report|usage|help|summary|table|banner)$",
    ss.I,
)


def _enclosing_functions(tree: ast.Module) -> dict[int, ast.FunctionDef | ast.AsyncFunctionDef]:
    """The innermost function around each line."""
    owner: dict[int, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    fns = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for fn in sorted(fns, key=lambda f: f.lineno):  # inner functions come later and win
        for n in range(fn.lineno, (fn.end_lineno or fn.lineno) + 1):
            owner[n] = fn
    return owner


# Deliberate output in tests (RUBRIC S5): output the test captures and checks, and
# diagnostics printed on the path where the test fails.
CAPTURE_ARGS = {"capsys", "capfd", "capsysbinary", "capfdbinary"}
CAPTURE_CALL = ss.Later(
    r"redirect_std(out|err)|patch\w*\(\s*['\"](sys\.std(out|err)|builtins\.print)")
FAIL_CALL = ss.Later(r"(^|\.)(fail|skip|exit|Fatal\w*|FailNow)$")


def _captures_output(fn: ast.FunctionDef | ast.AsyncFunctionDef, source: str) -> bool:
    args = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    body = ast.get_source_segment(source, fn) or ""
    return bool(args & CAPTURE_ARGS) or bool(CAPTURE_CALL.search(body))


def _failure_path_lines(fn: ast.AST) -> set[int]:
    """Lines of the blocks in ``fn`` that end the test in failure (an `if` or `except`
    whose body raises, fails or asserts False): output there explains the failure."""
    lines: set[int] = set()
    for node in ast.walk(fn):
        for body in (getattr(node, "body", None), getattr(node, "orelse", None)):
            if not isinstance(body, list) or not body or isinstance(node, (
                    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
                continue
            last = body[-1]
            fails = isinstance(last, ast.Raise) or (
                isinstance(last, ast.Assert) and isinstance(last.test, ast.Constant)
                and not last.test.value) or (
                isinstance(last, ast.Expr) and isinstance(last.value, ast.Call)
                and FAIL_CALL.search(ss.dotted(last.value.func)) is not None)
            if fails:
                lines.update(range(body[0].lineno, (last.end_lineno or last.lineno) + 1))
    return lines


def _all_literal(call: ast.Call) -> bool:
    return all(isinstance(a, ast.Constant) for a in call.args)


def python_ast(sf: ss.SourceFile, tree: ast.Module, out: list[ss.Finding], *, cli: bool) -> None:
    main_block = _main_block_lines(tree)
    owner = _enclosing_functions(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not ss.node_added(sf, node):
            continue
        name = ss.dotted(node.func)
        if name in ("print", "pprint", "pprint.pprint", "pp", "icecream.ic", "ic"):
            if any(k.arg == "file" for k in node.keywords):
                continue  # an explicit stream is deliberate output
            first = node.args[0] if node.args else None
            if isinstance(first, ast.Call) and ss.dotted(first.func).endswith("dumps"):
                continue  # a JSON document on stdout is a protocol, not a debug trace
            text = _first_str(node)
            line = sf.line_text(node.lineno)
            if name == "ic":
                out.append(ss.Finding(sf.path, node.lineno, "ic() debug print"))
            elif (text is not None and DEBUG_MSG.search(text)
                  and not (node.lineno in main_block and NAME_EQ_ONLY.match(text))) \
                    or SELF_DOC_FSTRING.search(line):
                out.append(ss.Finding(sf.path, node.lineno, f"debug print {line.strip()[:60]!r}"))
            else:
                fn = owner.get(node.lineno)
                if fn is not None and PRINTING_FN.search(fn.name):
                    continue  # printing is that function's job
                if sf.is_test and fn is not None and fn.name.startswith("test") \
                        and not _all_literal(node) \
                        and not _captures_output(fn, sf.new_content or "") \
                        and node.lineno not in _failure_path_lines(fn):
                    out.append(ss.Finding(sf.path, node.lineno,
                                          f"{name}() of a value left in {fn.name}"))
                elif not cli and not sf.is_test:
                    out.append(ss.Finding(sf.path, node.lineno,
                                          f"{name}() in library code {line.strip()[:60]!r}"))


def _owner_def(lines: list[ss.LexLine], i: int) -> str | None:
    """The name of the function the hunk shows around lines[i], if it shows one."""
    indent = ss.indent(lines[i].text)
    for k in range(i - 1, -1, -1):  # walking back, no copy of the lines before
        prev = lines[k]
        m = ss.rx(r"^(\s*)(async\s+)?def\s+(\w+)").match(prev.code)
        if m and len(m.group(1)) < indent:
            return m.group(3)
    return None


def python_lines(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    lines = sf.lexed()
    for i, ll in sf.added_indexed():
        if ss.rx(r"^\s*print\s*\(").search(ll.code) and "file=" not in ll.code:
            if (ll.strings and DEBUG_MSG.search(ll.strings[0])) or SELF_DOC_FSTRING.search(ll.text):
                out.append(ss.Finding(sf.path, ll.no, f"debug print {ll.text.strip()[:60]!r}"))
                continue
            fn = _owner_def(lines, i)
            literal = ss.rx(r"\s*print\s*\(\s*(\"\"|'')?\s*\)\s*").fullmatch(ll.code)
            if sf.is_test and fn and fn.startswith("test") and not literal:
                out.append(ss.Finding(sf.path, ll.no, f"print() of a value left in {fn}"))


# A test that spies on or replaces the console prints on purpose: the output is its subject.
JS_CAPTURE = ss.Later(r"spyOn\(\s*console\b|\bconsole\.\w+\s*=(?!=)|"
                        r"(mock|stub|spy)\w*\(\s*console\b")
GO_CAPTURE = ss.Later(r"\bos\.Std(out|err)\s*=(?!=)")


# A test file declares tests; a script in a test folder without any is a program the tests
# run, and what it prints is what they check.
JS_TEST_DECL = ss.Later(r"\b(it|test|describe|suite|Deno\.test)(\.\w+)?\s*\(")
SEPARATOR = ss.Later(r"^\s*([-=*#~_])\1{2,}\s*$")


# What names the function or branch a JS line is in: a function's name (declared, assigned,
# a method) or a `case` label of a switch (an interpreter's `case "print":` command).
JS_OWNER = ss.Later(
    r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*(?P<fn>[\w$]+)"
    r"|^\s*(?:export\s+)?(?:const|let|var)\s+(?P<var>[\w$]+)\s*=\s*(?:async\s+)?"
    r"(?:function\b|\([^)]*\)\s*=>|[\w$]+\s*=>)"
    r"|^\s*(?:(?:static|async|public|private|protected)\s+)*(?P<method>[\w$]+)\s*\([^)]*\)\s*"
    r"(?::\s*[^={]+)?\{\s*$"
    r"|^\s*case\s+[\"'`]?(?P<case>[\w$.-]+)[\"'`]?\s*:")
JS_NOT_OWNER = {"if", "for", "while", "switch", "catch", "with", "return", "function"}
# JS names whose job is printing (narrower than PRINTING_FN: a component's `render` prints
# nothing to the console on purpose).
JS_PRINTING = ss.Later(
    r"^_*(print|pprint|dump|show|display|report|usage|help|banner|echo|log|logger|emit|"
    r"warn|info|trace|summar|table)|(Print|Dump|Show|Report|Usage|Help|Banner|Log|Summary)$")


def _js_owner(lines: list[ss.LexLine], i: int) -> str | None:
    """The name of the function, method or `case` the line at ``i`` sits in: the nearest
    one above it that is indented less."""
    indent = ss.indent(lines[i].text)
    for k in range(i - 1, max(-1, i - 200), -1):
        prev = lines[k]
        if not prev.code.strip() or ss.indent(prev.text) >= indent:
            continue
        m = JS_OWNER.match(prev.text)  # the text: a `case "print":` label is a string
        if m:
            name = m["fn"] or m["var"] or m["method"] or m["case"]
            if name not in JS_NOT_OWNER:
                return name
        indent = ss.indent(prev.text)
    return None


def js_lines(sf: ss.SourceFile, cli: bool, out: list[ss.Finding]) -> None:
    content = sf.new_content or ""
    if sf.is_test and (JS_CAPTURE.search(content)
                       or (sf.new_content is not None and not JS_TEST_DECL.search(content))):
        return
    lines = sf.lexed()
    for i, ll in sf.added_indexed():
        m = ss.rx(r"\bconsole\.(log|debug|trace|dir|table)\s*\(").search(ll.code)
        if not m:
            continue
        debugish = bool(ll.strings and DEBUG_MSG.search(ll.strings[0])
                        and not (cli and SEPARATOR.match(ll.strings[0])))
        method = m.group(1)
        owner = _js_owner(lines, i)
        if not debugish and owner and JS_PRINTING.search(owner):
            continue  # printing is that function's (or command's) job
        if debugish or method in ("debug", "trace", "dir", "table") or not cli:
            message = f"console.{method}() left in {ll.text.strip()[:60]!r}"
            out.append(ss.Finding(sf.path, ll.no, message))


def _go_example_lines(sf: ss.SourceFile) -> set[int]:
    """Lines inside `func ExampleXxx()` (an example's output is checked by `go test`),
    `func BenchmarkXxx` (a benchmark may report what it measured) and `TestMain`."""
    inside: set[int] = set()
    current = False
    for ll in sf.lexed():
        if ss.rx(r"^func\s").match(ll.code):
            current = bool(ss.rx(r"^func\s+(Example|Benchmark|TestMain\b)").match(ll.code))
        if current:
            inside.add(ll.no)
    return inside


def go_lines(sf: ss.SourceFile, cli: bool, out: list[ss.Finding]) -> None:
    examples = _go_example_lines(sf) if sf.is_test else set()
    captured = sf.is_test and GO_CAPTURE.search(sf.new_content or "") is not None
    for ll in sf.added_lexed():
        if sf.is_test and ll.no not in examples and not cli and not captured and ss.rx(
                r"(^|[^.\w])(println|print)\s*\(|\bfmt\.(Print|Println|Printf)\s*\(").search(ll.code):
            out.append(ss.Finding(sf.path, ll.no, "print left in a test (use t.Log)"))
        elif ss.rx(r"(^|[^.\w])(println|print)\s*\(").search(ll.code) and not sf.is_test:
            out.append(ss.Finding(sf.path, ll.no, "builtin println() debug output"))
        elif ss.rx(r"\b(spew\.Dump|pretty\.Println|litter\.Dump)\s*\(").search(ll.code):
            out.append(ss.Finding(sf.path, ll.no, "debug dump left in"))
        elif ss.rx(r"\b(fmt|log)\.(Print|Println|Printf|Fprintf|Fprintln)\s*\(").search(ll.code):
            if ll.strings and any(DEBUG_MSG.search(s) for s in ll.strings[:2]):
                out.append(ss.Finding(sf.path, ll.no, f"debug print {ll.text.strip()[:60]!r}"))


JS_RELATIVE = ss.Later(
    r"""(?:\bfrom\s*|\brequire\s*\(\s*|\bimport\s*\(\s*|^\s*import\s+)["'](\.{1,2}/[^"']+)["']""",
    ss.M)
JS_EXTS = ("", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", "/index.js", "/index.ts")


def _package_bins(payload: dict, path: str) -> tuple[str, list[str]]:
    """The folder of the package.json nearest to ``path`` and the files its `bin` names."""
    folder = os.path.dirname(path)
    while True:
        manifest = os.path.join(folder, "package.json") if folder else "package.json"
        text = ss.repo_text(payload, manifest)
        if text is not None:
            import json

            try:
                bins = json.loads(text).get("bin") or {}
            except (ValueError, AttributeError):
                bins = {}
            names = [bins] if isinstance(bins, str) else list(bins.values()) \
                if isinstance(bins, dict) else []
            return folder, [os.path.normpath(os.path.join(folder, str(b))) for b in names]
        if not folder:
            return "", []
        folder = os.path.dirname(folder)


def runs_as_command(payload: dict, path: str) -> bool:
    """Whether a package's command runs this JS file: its package.json's `bin` names it, or
    a file `bin` names imports it (a package's index.js behind its bin.js)."""
    _, bins = _package_bins(payload, path)
    if path in bins:
        return True
    for b in bins:
        for spec in JS_RELATIVE.findall(ss.repo_text(payload, b) or ""):
            target = os.path.normpath(os.path.join(os.path.dirname(b), spec))
            if any(target + ext == path for ext in JS_EXTS):
                return True
    return False


def scan(sf: ss.SourceFile, out: list[ss.Finding], payload: dict) -> None:
    if sf.lang == "python" and not ss.may_match(sf, PY_ANY):
        return
    content = sf.new_content or "\n".join(nl.text for nl in sf.new_lines())
    cli = bool(CLI_PATH.search(sf.path) or CLI_CONTENT.search(content))
    if sf.lang == "python":
        ss.by_tree(sf, out, lambda f, tree, found: python_ast(f, tree, found, cli=cli),
                   python_lines)  # not functools.partial: functools is not imported otherwise
    elif sf.lang == "js":
        found: list[ss.Finding] = []
        js_lines(sf, cli, found)
        if found and not cli and not sf.is_test and runs_as_command(payload, sf.path):
            found = []
            js_lines(sf, True, found)  # what a command prints is its output
        out += found
    elif sf.lang == "go":
        go_lines(sf, cli, out)


def main() -> None:
    payload = ss.load_payload()
    out: list[ss.Finding] = []
    for sf in ss.files(payload):
        scan(sf, out, payload)
    ss.finish(out, ADVICE)


if __name__ == "__main__":
    ss.main_guard(main)
