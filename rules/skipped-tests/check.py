#!/usr/bin/env python3
"""skipped-tests: added tests that are skipped, focused, or assert nothing."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import pyast as ast  # noqa: E402 - ast's parts, without its import
import slopscan as ss  # noqa: E402

ADVICE = ("Make the test run and assert the behaviour; a skip needs a condition and a reason "
          "(skipif), and a test must be able to fail.")
ASSERTING_CALL = ss.Later(
    r"assert|expect|verify|check|raises|warns|fail|snapshot|must|should|ensure", ss.I
)


def _dotted(node: ast.expr) -> str:
    # a decorator's or a base's call (`@mark.skip(...)`) stands for what it calls
    return ss.dotted(node, through_calls=True)


def _is_test_fn(fn: ast.AST, cls: ast.ClassDef | None) -> bool:
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    return fn.name.startswith("test") and (cls is None or cls.name.startswith("Test") or
                                            any("TestCase" in _dotted(b) for b in cls.bases))


HELPER_MODULE = ss.Later(
    r"test|helper|conftest|fixture|support|hypothesis|assert|expect|check|verify", ss.I
)


def _has_true_keyword(keywords: list[ast.keyword], name: str) -> bool:
    """Whether a call passes `name=True`."""
    return any(
        k.arg == name and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in keywords
    )


def _asserting_names(tree: ast.Module) -> set[str]:
    """Names a test may call to assert.

    Local helpers that assert, and imports from test-support modules.
    """
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and HELPER_MODULE.search(node.module or ""):
            names.update(a.asname or a.name for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(
                (a.asname or a.name).split(".")[0]
                for a in node.names
                if HELPER_MODULE.search(a.name)
            )
    funcs = {
        n.name: n
        for n in ast.walk(tree)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("test")
    }
    for _ in range(3):  # helpers that call helpers
        for name, fn in funcs.items():
            if name not in names and _asserts(fn, names):
                names.add(name)
    return names


def _asserts(fn: ast.AST, helpers: set[str] | frozenset[str] = frozenset()) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Assert):
            return True
        if isinstance(node, ast.Call):
            called = _dotted(node.func)
            parts = called.split(".")
            # a helper function, or a helper method of the test class (`self._check(...)`)
            if ASSERTING_CALL.search(called) or parts[0] in helpers or (
                    parts[0] in ("self", "cls") and len(parts) == 2 and parts[1] in helpers):
                return True
            if _has_true_keyword(node.keywords, "check"):
                return True
        if isinstance(node, ast.Raise):
            return True
    return False


def _trivial_assert(node: ast.Assert) -> bool:
    t = node.test
    if isinstance(t, ast.Constant):
        return bool(t.value)
    if (
        isinstance(t, ast.Compare)
        and len(t.comparators) == 1
        and isinstance(t.ops[0], (ast.Eq, ast.Is))
    ):
        # `f(a) == f(a)` builds two values and can fail (hash or equality of equal objects,
        # determinism); only the same name, attribute or constant on both sides cannot
        if any(isinstance(n, (ast.Call, ast.Await)) for n in ast.walk(t.left)):
            return False
        return ast.dump(t.left) == ast.dump(t.comparators[0])
    return False


# A test whose name or docstring says the call must simply succeed: raising fails it.
# "success" alone says so only in prose (a docstring): `test_login_success` is just the
# happy path, which has a result to check.
SUCCEEDS = ss.Later(r"succe(ss|ed|eds|eding)\b", ss.I)
NO_RAISE = ss.Later(
    r"\bno(t|n)?[\s_-]+rais"
    r"|\bdoes\s*n[o']?t\s+(raise|throw|crash|fail|error)|\bno[\s_-]+(error|exception|crash)s?\b"
    r"|\bnothing\s+happens\b|\bwithout\s+(an?\s+)?(error|exception|raising|crash)"
    r"|\bsmoke\b|\bis\s+hashable\b|\bcan\s+be\s+(hashed|pickled|imported|called|used)\b"
    r"|\b(it'?s|is)\s+possible\b|\bworks\b",
    ss.I,
)
# A benchmark measures cost, not behaviour (pytest-benchmark, CodSpeed).
BENCH_PATH = ss.Later(r"(^|/)(bench|benchmarks?)/|(^|/)(test_)?bench(mark)?s?(_\w+)?\.py$",
                      words=("bench",))


def _is_benchmark(fn: ast.FunctionDef | ast.AsyncFunctionDef, module_marked: bool) -> bool:
    if module_marked or any("benchmark" in _dotted(d) for d in fn.decorator_list):
        return True
    args = fn.args.args + fn.args.kwonlyargs
    return any(a.arg in ("benchmark", "benchmark_fixture") for a in args)


def _module_is_benchmark(tree: ast.Module) -> bool:
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                for t in stmt.targets):
            return "benchmark" in ast.dump(stmt.value)
    return False


def _unused_results(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """Names the test assigns and never reads: a result computed and left unchecked."""
    loaded = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)
              and not isinstance(n.ctx, ast.Store)}
    stored: list[str] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:  # the test's own statements: a nested class's fields are not its results
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stored.append(node.id)
        todo.extend(ast.iter_child_nodes(node))
    return [n for n in stored if n not in loaded and not n.startswith("_")]


def _must_not_raise(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """The test says it passes when the call does not raise, and leaves no result unchecked."""
    doc = ast.get_docstring(fn) or ""
    intent = f"{fn.name.replace('_', ' ')} {doc}"
    said = bool(NO_RAISE.search(intent) or SUCCEEDS.search(doc))
    return said and not _unused_results(fn)


# Files a test runner collects: elsewhere a `test*` function is a helper or typing example.
COLLECTED = ss.Later(r"(^|/)(test_[^/]*|[^/]*_test|tests?)\.py$")


def python_ast(sf: ss.SourceFile, tree: ast.Module, out: list[ss.Finding]) -> None:
    if not COLLECTED.search(sf.path) and "TestCase" not in (sf.new_content or ""):
        return
    helpers = _asserting_names(tree)
    existing = ss.old_names(sf)
    bench_module = _module_is_benchmark(tree) or bool(BENCH_PATH.search(sf.path))

    def visit(node: ast.AST, cls: ast.ClassDef | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                check_decorators(child)
                visit(child, child)
            elif _is_test_fn(child, cls):
                check_test(child)  # type: ignore[arg-type]
            else:
                visit(child, cls)

    def check_decorators(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        for d in node.decorator_list:
            if not ss.node_added(sf, d):
                continue
            name = _dotted(d)
            if (
                name.endswith("mark.skip")
                or name in ("unittest.skip", "skip")
                or name.endswith("expectedFailure")
            ):
                message = f"{node.name} is skipped unconditionally (@{name})"
                out.append(ss.Finding(sf.path, d.lineno, message))
            elif name.endswith("mark.xfail"):
                keywords = getattr(d, "keywords", [])
                strict = _has_true_keyword(keywords, "strict")
                conditional = bool(getattr(d, "args", None)) or any(
                    k.arg == "condition" for k in keywords
                )
                if not strict and not conditional:
                    message = f"{node.name} is marked xfail, so its failure passes"
                    out.append(ss.Finding(sf.path, d.lineno, message))

    def check_test(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        check_decorators(fn)
        body = fn.body
        lead = body[0] if body else None
        first = 1 if isinstance(lead, ast.Expr) and isinstance(lead.value, ast.Constant) else 0
        for stmt in body[first:first + 1]:
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if isinstance(call, ast.Call) and ss.node_added(sf, stmt):
                name = _dotted(call.func)
                if name.endswith("skip") or name.endswith("skipTest"):
                    message = f"{fn.name} skips itself unconditionally"
                    out.append(ss.Finding(sf.path, stmt.lineno, message))
            if isinstance(stmt, ast.Return) and ss.node_added(sf, stmt):
                message = f"{fn.name} returns before testing anything"
                out.append(ss.Finding(sf.path, stmt.lineno, message))
        for node in ast.walk(fn):
            if isinstance(node, ast.Assert) and _trivial_assert(node) and ss.node_added(sf, node):
                out.append(ss.Finding(sf.path, node.lineno, "assertion that cannot fail"))
        if any("fixture" in _dotted(d) for d in fn.decorator_list):
            return  # a pytest fixture provides a value; it is no test
        # a test the old version already had (its signature or body edited) is not added
        if ss.node_added(sf, fn) and fn.lineno in sf.added and fn.name not in existing \
                and not _asserts(fn, helpers):
            stmts = body[first:]
            if stmts and (_is_benchmark(fn, bench_module) or _must_not_raise(fn)):
                return  # a benchmark, or a test that passes when the call does not raise
            out.append(ss.Finding(sf.path, fn.lineno, f"{fn.name} asserts nothing"))

    visit(tree, None)


HUNK_DEF = ss.Later(r"^(\s*)(async\s+)?def\s+(\w+)\s*\(")
HUNK_IMPORT = ss.Later(r"^\s*from\s+([\w.]+)\s+import\s+\(?([\w\s,]+)")
FULL_CONTEXT = 3  # git's default: a hunk that ends with fewer context lines ends the file


def _hunk_function(hunk: list[ss.LexLine], start: int, at_eof: bool) -> str | None:
    """The source of the function defined at ``hunk[start]`` when the hunk shows all of it:
    its body ends at a dedented line inside the hunk, or the hunk runs to the file's end."""
    indent = ss.indent(hunk[start].text)
    depth = 0
    body_started = False
    end = None
    for k in range(start, len(hunk)):
        ll = hunk[k]
        if k > start and body_started and ll.code.strip() and not ll.in_string \
                and ss.indent(ll.text) <= indent:
            end = k
            break
        if not body_started:
            depth += ll.code.count("(") + ll.code.count("[") - ll.code.count(")") \
                - ll.code.count("]")
            if depth <= 0 and ll.code.rstrip().endswith(":"):
                body_started = True
    if end is None:
        if not at_eof:
            return None  # the body may go on past the hunk
        end = len(hunk)
    first = start
    while first > 0 and hunk[first - 1].code.strip().startswith("@") \
            and ss.indent(hunk[first - 1].text) == indent:
        first -= 1  # its decorators (a benchmark marker, a parametrisation)
    lines = [ll.text for ll in hunk[first:end]]
    while lines and not lines[-1].strip():
        lines.pop()
    import textwrap  # its import compiles six regexes: paid only for a test a hunk shows

    return textwrap.dedent("\n".join(lines)) + "\n"


def python_hunks(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    """A modified test file seen from a bare diff (no new content): judge each test function
    the hunks show whole, with the helpers the hunks show."""
    hunks = [ss.lex(h, "python") for h in sf.hunks]
    visible = [ll for h in hunks for ll in h]
    helpers: set[str] = set()
    for ll in visible:
        m = HUNK_IMPORT.match(ll.code)
        if m and HELPER_MODULE.search(m.group(1)):
            helpers.update(n.strip().split(" as ")[-1] for n in m.group(2).split(",") if n.strip())
        m = HUNK_DEF.match(ll.code)
        if m and not m.group(3).startswith("test"):
            helpers.add(m.group(3))  # a visible helper may assert: give it the benefit
    eof_marked = "\n\\ No newline at end of file" in sf.diff
    existing = ss.old_names(sf)
    for n, hunk in enumerate(hunks):
        trailing = 0
        for ll in reversed(hunk):
            if ll.added:
                break
            trailing += 1
        at_eof = trailing < FULL_CONTEXT or (eof_marked and n == len(hunks) - 1)
        for k, ll in enumerate(hunk):
            m = HUNK_DEF.match(ll.code)
            if not (m and ll.added and m.group(3).startswith("test")) or m.group(3) in existing:
                continue
            if k > 0 and "fixture" in hunk[k - 1].code:
                continue  # a pytest fixture provides a value; it is no test
            source = _hunk_function(hunk, k, at_eof)
            if source is None:
                continue
            try:
                fn = ast.parse(source).body[0]
            except (SyntaxError, ValueError, IndexError):
                continue
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            calls = [_dotted(c.func) for c in ast.walk(fn) if isinstance(c, ast.Call)]
            if any(c.startswith("self.") and c.count(".") == 1 for c in calls):
                continue  # a method of the test class, out of sight, may assert
            body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
            if not body or _asserts(fn, helpers) or _is_benchmark(fn, False):
                continue
            if _must_not_raise(fn) or any("benchmark" in _dotted(d) for d in fn.decorator_list):
                continue
            out.append(ss.Finding(sf.path, ll.no, f"{fn.name} asserts nothing"))


JS_SKIP = ss.Later(
    r"\b(it|test|describe|context|suite|specify)\.(skip|only)\s*\("
    r"|\b(xit|xdescribe|xtest|xcontext|fit|fdescribe|ftest)\s*\("
)
JS_TAUTOLOGY = ss.Later(
    r"\bexpect\(\s*(true|1|\"\"|'')\s*\)\.(toBe|toEqual|toStrictEqual)\(\s*(true|1|\"\"|'')\s*\)"
    r"|\bexpect\(\s*true\s*\)\.toBeTruthy\(\s*\)|\bassert(\.ok)?\(\s*true\s*\)"
    r"|\bexpect\(\s*false\s*\)\.toBeFalsy\(\s*\)"
)
# `it("...", () => {})` with an empty body (the lexed code has string contents blanked)
JS_EMPTY = ss.Later(
    r"\b(it|test)\s*\(\s*([\"'`])\2\s*,\s*(async\s*)?"
    r"(\(\s*\w*\s*\)\s*=>|function\s*\(\s*\w*\s*\))\s*\{\s*\}\s*\)"
)


def js_lines(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    for ll in sf.added_lexed():
        m = JS_SKIP.search(ll.code)
        if m:
            what = m.group(0).rstrip("( ")
            focused = "only" in what or what.startswith("f")
            kind = "focused (only the focused tests run)" if focused else "skipped"
            out.append(ss.Finding(sf.path, ll.no, f"{what}: test {kind}"))
        if JS_TAUTOLOGY.search(ll.code):
            out.append(ss.Finding(sf.path, ll.no, "assertion that cannot fail"))
        if JS_EMPTY.search(ll.code):
            out.append(ss.Finding(sf.path, ll.no, "empty test body asserts nothing"))


def go_lines(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    lines = sf.lexed()
    for i, ll in sf.added_indexed():
        if ss.rx(r"^\s*func\s+Test\w*\s*\([^)]*\)\s*\{\s*\}").search(ll.code):
            out.append(ss.Finding(sf.path, ll.no, "empty test function asserts nothing"))
        if ss.rx(r"\bt\.(Skip|Skipf|SkipNow)\s*\(").search(ll.code):
            prev = next((p for p in reversed(lines[:i]) if p.code.strip()), None)
            if prev is not None and ss.rx(r"^\s*func\s+Test").match(prev.code):
                out.append(ss.Finding(sf.path, ll.no, "test skipped unconditionally"))


def python_lines(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    """A Python file that does not parse, or hunks alone: what its added lines show."""
    if sf.new_content is None:
        python_hunks(sf, out)
    for ll in sf.added_lexed():
        if ss.rx(r"^\s*@(pytest\.mark\.skip|unittest\.skip)\s*(\(|$)").search(ll.code):
            out.append(ss.Finding(sf.path, ll.no, "test skipped unconditionally"))
        if ss.rx(r"^\s*assert\s+(True|1)\s*(,|$)").match(ll.code):
            out.append(ss.Finding(sf.path, ll.no, "assertion that cannot fail"))


def scan(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    if not sf.is_test:
        return
    if sf.lang == "python":
        ss.by_tree(sf, out, python_ast, python_lines)
    elif sf.lang == "js":
        js_lines(sf, out)
    elif sf.lang == "go":
        go_lines(sf, out)


if __name__ == "__main__":
    ss.check_files(scan, ADVICE)
