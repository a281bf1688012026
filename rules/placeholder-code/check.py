#!/usr/bin/env python3
"""placeholder-code: added stubs that pretend to be an implementation."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import pyast as ast  # noqa: E402 - ast's parts, without its import
import slopscan as ss  # noqa: E402

# Phrases that admit, in a comment or docstring, that the code is not real.
ADMISSION = ss.Later(
    r"\btodo\b\W{0,3}(implement|add\s+(the\s+)?(real|actual)|finish|fill\s+in|write\s+(the\s+)?(real|actual))"
    r"|\bimplement\s+(me|this|later)\b"
    r"|\bnot\s+yet\s+implemented\b|\bnot\s+implemented\s+yet\b"
    r"|\bthis\s+is\s+(just\s+)?a\s+(placeholder|stub)\b|\bplaceholder\s+(implementation|logic|code|for\s+now|until)\b"
    r"|\b(stub|dummy|mock|fake|simplified|naive)\s+implementation\b"
    r"|\bin\s+a\s+real\s+(implementation|application|app|system|scenario|world|project|codebase|environment)\b"
    r"|\b(your|actual|real)\s+(code|implementation|logic)\s+(goes\s+)?here\b"
    r"|\bfor\s+now,?\s+(we\s+)?(just\s+|simply\s+)?(return|pass|skip|hard-?code|fake|pretend)\b"
    r"|\bwould\s+(normally|typically)\s+(call|fetch|query|connect|send|be\s+(fetched|loaded|computed))\b",
    ss.I,
    words=("todo", "implement", "placeholder", "stub", "real", "here", "now", "normally",
           "typically"),
)
NOT_IMPL_MSG = ss.Later(
    r"not\s+(yet\s+)?implemented|unimplemented|implement\s+me|to\s+be\s+implemented"
    r"|^\s*todo\b|\btodo:",
    ss.I,
)
OVERRIDE_HINT = ss.Later(r"subclass|override|abstract|must\s+implement|should\s+implement", ss.I)
BASE_CLASS_NAME = ss.Later(
    r"(^|[a-z])(Base|Abstract|Interface|Mixin|Protocol|Proto)([A-Z]|$)|^I[A-Z]|Base$"
)
INTERFACE_BASES = ("ABC", "ABCMeta", "Protocol", "Generic")
ABSTRACT_DECOS = {
    "abstractmethod", "abstractproperty", "abstractclassmethod", "abstractstaticmethod",
    "overload",
}
NOOP_DOC = ss.Later(
    r"does\s+nothing|no-?op|by\s+default|default\s+(is|does)|overrid|subclass|hook|"
    r"intentional|deliberate|optional|nothing\s+to\s+do|ignored",
    ss.I,
)
# A stub body is `pass`, `...` or `raise NotImplementedError`: a Python file with none of
# them is not parsed (its comments are still read). Words, not a pattern: a stub's Write
# then needs no `re`.
PY_STUB = ("pass", "...", "NotImplementedError")
NOOP_NAME = ss.Later(r"^_*(noop|no_op|do_nothing|nothing|ignore|null|dummy|pass)", ss.I)

ADVICE = (
    "Write the real implementation (or remove the stub and its callers); "
    "if it is an interface, mark it abstract."
)


class Overridable(ss.Finding):
    """A stub in a method of a plain class: it stands unless a subclass, in the change or
    in the repository, overrides the method (the base's override-me default, RUBRIC S1)."""

    __slots__ = ("cls", "method", "lang")

    def __init__(self, path: str, line: int | None, message: str, cls: str, method: str,
                 lang: str) -> None:
        super().__init__(path, line, message)
        self.cls, self.method, self.lang = cls, method, lang


def _finding(sf: ss.SourceFile, line: int, message: str, cls: str | None,
             method: str | None) -> ss.Finding:
    if cls and method and sf.lang in SUBCLASS_HEAD:
        return Overridable(sf.path, line, message, cls, method, sf.lang or "")
    return ss.Finding(sf.path, line, message)


def _deco_name(d: ast.expr) -> str:
    if isinstance(d, ast.Call):
        d = d.func
    if isinstance(d, ast.Attribute):
        return d.attr
    if isinstance(d, ast.Name):
        return d.id
    return ""


def _class_is_interface(cls: ast.ClassDef) -> bool:
    if BASE_CLASS_NAME.search(cls.name):
        return True
    for b in list(cls.bases) + [k.value for k in cls.keywords]:
        name = _deco_name(b.value if isinstance(b, ast.Subscript) else b)
        if name in INTERFACE_BASES or name.endswith("Base") or name.startswith("Base"):
            return True
    for stmt in cls.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if any(_deco_name(d) in ABSTRACT_DECOS for d in stmt.decorator_list):
                return True
    return False


def _stub_kind(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str | None, bool]:
    body = list(fn.body)
    first = body[0] if body else None
    has_doc = bool(
        isinstance(first, ast.Expr)
        and isinstance(getattr(first, "value", None), ast.Constant)
        and isinstance(first.value.value, str)
    )
    if has_doc:
        body = body[1:]
    if not body:
        return "empty", has_doc
    if all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                        and s.value.value is Ellipsis) for s in body):
        return "pass", has_doc
    if len(body) == 1 and isinstance(body[0], ast.Raise) and body[0].exc is not None:
        exc = body[0].exc
        target = exc.func if isinstance(exc, ast.Call) else exc
        if isinstance(target, ast.Name) and target.id == "NotImplementedError":
            # every literal piece of the message: f"{type(self).__name__} must implement x()",
            # "%s must implement x()" % name, "...".format(...) say it as a constant would
            msg = " ".join(str(n.value) for a in getattr(exc, "args", ()) for n in ast.walk(a)
                           if isinstance(n, ast.Constant) and isinstance(n.value, str))
            return "notimpl:" + msg, has_doc
    return None, has_doc


def _type_checking_only(node: ast.AST) -> bool:
    """`if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): declarations for the type checker,
    never run, so a `...` body there is a signature, not a stub."""
    return isinstance(node, ast.If) and _deco_name(node.test) == "TYPE_CHECKING"


def _subclassed(tree: ast.Module) -> set[str]:
    """Names of the classes the module itself subclasses: their stub methods are the
    override-me defaults of a base class."""
    return {_deco_name(b.value if isinstance(b, ast.Subscript) else b)
            for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for b in node.bases}


def python_ast(sf: ss.SourceFile, tree: ast.Module, out: list[ss.Finding]) -> None:
    bases = _subclassed(tree)

    def visit(node: ast.AST, cls: ast.ClassDef | None) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child):
                continue
            if isinstance(child, ast.ClassDef):
                visit(child, child)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                check_fn(child, cls)
                visit(child, None)
            else:
                visit(child, cls)

    def check_fn(fn: ast.FunctionDef | ast.AsyncFunctionDef, cls: ast.ClassDef | None) -> None:
        if not ss.node_added(sf, fn):
            return
        # The stub statements themselves must be new: a stub the old version already had,
        # whose docstring or signature the change merely edits, is not added by this change.
        stmts = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
        if stmts and not any(ss.node_added(sf, s) for s in stmts):
            return
        kind, _ = _stub_kind(fn)
        if kind is None or kind == "empty":
            return
        if any(_deco_name(d) in ABSTRACT_DECOS for d in fn.decorator_list):
            return
        if cls is not None and (_class_is_interface(cls) or cls.name in bases):
            return
        if kind.startswith("notimpl:"):
            if OVERRIDE_HINT.search(kind):
                return
            out.append(_finding(sf, fn.body[-1].lineno,
                                f"{fn.name}() only raises NotImplementedError",
                                cls.name if cls else None, fn.name))
            return
        # a bare pass/... body: a documented no-op hook, a dunder or a named no-op is deliberate
        doc = ast.get_docstring(fn) or ""
        if (NOOP_DOC.search(doc) or NOOP_NAME.search(fn.name)
                or (fn.name.startswith("__") and fn.name.endswith("__"))):
            return
        message = f"{fn.name}() has an empty placeholder body"
        out.append(_finding(sf, fn.body[-1].lineno, message, cls.name if cls else None,
                            fn.name))

    visit(tree, None)


def _report_unless_deliberate(
    sf: ss.SourceFile,
    lines: list[ss.LexLine],
    idx: int,
    decides: Callable[[ss.LexLine, int], bool | None],
    message: str,
    out: list[ss.Finding],
) -> None:
    """Report the not-implemented error at ``lines[idx]`` unless it is deliberate: its message
    asks for an override, or ``decides`` (a line above it and the error's indent -> True or
    False, None to read on up) finds it in an abstract or base class."""
    ll = lines[idx]
    if any(OVERRIDE_HINT.search(s) for s in ll.strings):
        return
    indent = ss.indent(ll.text)
    method = cls = None
    for prev in reversed(lines[:idx]):
        deliberate = decides(prev, indent)
        if deliberate is not None:
            if deliberate:
                return
            cls = ss.rx(r"\bclass\s+([\w$]+)").search(prev.text)
            break
        head = METHOD_HEAD.match(prev.code)
        if (method is None and head and head[1] not in KEYWORDS
                and ss.indent(prev.text) < indent):
            method = head[1]
    out.append(_finding(sf, ll.no, message, cls and cls[1], method))


def _python_decides(prev: ss.LexLine, indent: int) -> bool | None:
    t = prev.text.strip()
    if t.startswith("@") and ss.rx(r"abstract|overload").search(t):
        return True
    if ss.rx(r"if\s+(typing\.)?TYPE_CHECKING\s*:").match(t) and ss.indent(prev.text) < indent:
        return True
    m = ss.rx(r"class\s+(\w+)\s*(\((.*)\))?").match(t)
    if m and ss.indent(prev.text) < indent:
        bases = m.group(3) or ""
        return bool(
            BASE_CLASS_NAME.search(m.group(1)) or ss.rx(r"\b(ABC|Protocol)\b").search(bases)
        )
    return None


def _curly_decides(extended: set[str]) -> Callable[[ss.LexLine, int], bool | None]:
    def decides(prev: ss.LexLine, indent: int) -> bool | None:
        m = ss.rx(r"\s*(export\s+)?(default\s+)?(abstract\s+)?class\s+(\w+)").match(prev.text)
        if m and ss.indent(prev.text) < indent:
            return bool(m.group(3) or BASE_CLASS_NAME.search(m.group(4))
                        or m.group(4) in extended)
        return None
    return decides


def python_lines(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    """No full file to parse: judge NotImplementedError lines by what the hunk shows above them."""
    lines = sf.lexed()
    for idx, ll in sf.added_indexed():
        if ss.rx(r"\braise\s+NotImplementedError\b").search(ll.code):
            _report_unless_deliberate(sf, lines, idx, _python_decides,
                                      "raises NotImplementedError instead of implementing", out)


# What raises a not-implemented error, by language (others: Java, C#, Kotlin ...).
THROW = {
    "js": ss.Later(r"\bthrow\s+new\s+\w*Error\s*\("),
    "go": ss.Later(r"\bpanic\s*\("),
}
THROW_OTHER = ss.Later(r"\bthrow\s+new\s+\w*(Error|Exception)\s*\(")


def curly_lines(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    lines = sf.lexed()
    throw = THROW.get(sf.lang or "", THROW_OTHER)
    # classes this file extends: a method of theirs that throws is the base's override-me
    extended = {m[1] for ll in lines for m in ss.rx(r"\bextends\s+([\w$]+)").finditer(ll.code)}
    for idx, ll in sf.added_indexed():
        if throw.search(ll.code) and any(NOT_IMPL_MSG.search(s) for s in ll.strings):
            _report_unless_deliberate(sf, lines, idx, _curly_decides(extended),
                                      "throws a not-implemented error instead of implementing",
                                      out)


# A TODO or FIXME that says what the code should do but does not, or a comment that
# admits the body is temporary ("for now", "until the store is wired up").
TODO = ss.Later(
    r"\b(TODO|FIXME|XXX|HACK)\b|\bfor now\b|\btemporar(y|ily)\b|"
    r"\buntil\b.{0,60}\b(wired|implemented|hooked|ready|done|available)\b",
    ss.I,
    words=("todo", "fixme", "xxx", "hack", "for now", "temporar", "until"),
)
_CONST = (r"(-?\d+(\.\d+)?|true|false|True|False|None|nil|null|\"\"|''|"
          r"\[\s*\]|\{\s*\}|\(\s*\)|[\"'][^\"']*[\"'])")
# One constant, or several (Go's `return true, nil`).
CONST_RETURN = ss.Later(rf"^\s*return\s+{_CONST}(\s*,\s*{_CONST})*\s*;?\s*$")
FUNC_HEAD = ss.Later(
    r"^\s*((async\s+)?def\s+\w+.*:|func\s.*\{|(export\s+)?(async\s+)?function\b.*\{|"
    r".*\)\s*(:\s*[\w<>\[\]|. ]+)?\s*(=>\s*)?\{)\s*$"
)


def todo_constant_stubs(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    """A function whose whole body is a TODO and a constant return: a stub that pretends to
    compute (RUBRIC S1, "a constant return where a computation is needed")."""
    lines = [ll for ll in sf.lexed() if ll.text.strip()]
    for k, ll in enumerate(lines):
        if not ll.added or not TODO.search(ll.comment) or ll.code.strip():
            continue
        h = k - 1
        while h > 0 and (lines[h].doc or lines[h].in_string) and lines[h - 1].code.strip():
            h -= 1  # over a docstring
        head = lines[h] if h >= 0 else None
        if head is None or not FUNC_HEAD.match(head.code):
            continue
        body = lines[k + 1 : k + 3]
        if not body or not CONST_RETURN.match(body[0].text.split("//")[0].split("#")[0]):
            continue
        end_ok = (len(body) == 1 or ss.rx(r"^\s*\}").match(body[1].code) is not None
                  or (sf.lang == "python" and ss.indent(body[1].text)
                      <= ss.indent(head.text)))
        if end_ok and body[0].added:
            message = ("stub returns a constant under a TODO or a 'for now': "
                       f"{body[0].text.strip()[:40]!r}")
            out.append(ss.Finding(sf.path, body[0].no, message))


def scan(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    if sf.is_test or sf.path.endswith(".pyi"):
        return  # test doubles and type stubs are empty on purpose
    for ll in sf.added_lexed():
        text = ll.comment or (" ".join(ll.strings) if ll.doc else "")
        if ll.doc and not ll.strings and ll.in_string:
            text = ll.text
        # "you could implement this method in a subclass" documents an extension point
        m = next((m for m in ADMISSION.finditer(text or "")
                  if not OVERRIDE_HINT.search(text[m.end():m.end() + 60])), None)
        if m:
            out.append(ss.Finding(sf.path, ll.no, f"placeholder admitted: {m.group(0)!r}"))
    todo_constant_stubs(sf, out)
    if sf.lang == "python":
        if ss.may_hold(sf, PY_STUB, fold=False):
            ss.by_tree(sf, out, python_ast, python_lines)
    else:
        curly_lines(sf, out)


# A method head, as the lines above a not-implemented error show it (Python or JS/TS);
# compiled where first used (only a stub in a class reaches it).
METHOD_HEAD = ss.Later(
    r"^\s*(?:(?:public|private|protected|static|async|override|get|set|def)\s+)*\*?\s*"
    r"([\w$]+)\s*(?:<[^>]*>)?\s*\("
)
KEYWORDS = {"if", "for", "while", "switch", "catch", "with", "function", "return", "await"}
# A subclass's head, its base (the last part of a dotted name) in group 2: Python's bases
# may span lines; JS/TS `class X extends Base` (a class expression too).
SUBCLASS_HEAD = {
    "python": (r"^([ \t]*)class\s+\w+\s*\([^)]*?(?<![\w.])(?:\w+\.)*({names})\b",
               "class[[:space:]].*({names})", ("*.py",)),
    "js": (r"^([ \t]*)[^\n]*?\bclass\b(?:\s+[\w$]+)?\s*(?:<[^{{\n]*>)?\s+extends\s+"
           r"(?:[\w$]+\.)*({names})(?![\w$])",
           "extends[[:space:]].*({names})",
           ("*.js", "*.jsx", "*.mjs", "*.cjs", "*.ts", "*.tsx", "*.mts", "*.cts")),
}


def _overridden(text: str, lang: str, wanted: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The (class, method) pairs of ``wanted`` that a subclass in ``text`` overrides: it
    defines the method at its body's own level."""
    if not wanted:
        return set()
    import re  # re.escape: only for a file that defines a stub to look for

    names = "|".join(sorted({re.escape(c) for c, _ in wanted}))
    lines = text.split("\n")
    found = set()
    for m in ss.rx(SUBCLASS_HEAD[lang][0].format(names=names), ss.M).finditer(text):
        start = text.count("\n", 0, m.start())
        body = _class_body(lines, start, len(m[1].expandtabs()))
        level = min((ss.indent(t) for t in body), default=0)
        defined = {h[1] for t in body if ss.indent(t) == level
                   for h in [METHOD_HEAD.match(t) or ss.rx(r"\s*([\w$]+)\s*=").match(t)]
                   if h and not t.rstrip().endswith(";")}
        found |= {(c, meth) for c, meth in wanted if c == m[2] and meth in defined}
    return found


def _class_body(lines: list[str], start: int, indent: int) -> list[str]:
    """The non-blank lines of the class whose head starts at ``lines[start]``: those below
    it indented deeper than the head, up to the first that is not (a `}` or the next
    statement)."""
    body = []
    for t in lines[start + 1:]:
        if not t.strip() or t.lstrip().startswith(")"):  # the end of Python's bases
            continue
        if ss.indent(t.expandtabs()) <= indent:
            break
        body.append(t)
    return body


def _repo_files(payload: dict[str, Any], lang: str, wanted: set[tuple[str, str]]) -> list[str]:
    """Files of the repository that may hold a subclass of a class in ``wanted``: of the
    head commit (or snapshot) when the change names one, else git's files of the work tree
    (untracked ones too, ignored ones not). No git repository (a bare diff), none found, or
    git could not say: the findings stand."""
    import re  # re.escape: only for a file that defines a stub to look for

    from slopjudge.changes.gitio import ChangesetError, git

    names = "|".join(sorted({re.escape(c) for c, _ in wanted}))
    head = (payload.get("changeset") or {}).get("head")
    try:
        out = git(ss.workspace(payload), [
            "grep", "-l", "-I", "-E", *([] if head else ["--untracked"]),
            "-e", SUBCLASS_HEAD[lang][1].format(names=names), *([head] if head else []),
            "--", *SUBCLASS_HEAD[lang][2]], ok=(0, 1))
    except ChangesetError:
        return []
    prefix = f"{head}:" if head else ""
    return [p.removeprefix(prefix) for p in out.decode("utf-8", "replace").splitlines()]


def unless_overridden(payload: dict[str, Any], changed: list[ss.SourceFile],
                      findings: list[ss.Finding]) -> list[ss.Finding]:
    """``findings`` without the stubs that a subclass overrides: one in the change's files,
    else one in the repository's (searched only for what the change leaves open)."""
    open_ = {(f.lang, f.cls, f.method) for f in findings if isinstance(f, Overridable)}
    for lang in sorted({lang for lang, _, _ in open_}):
        wanted = {(c, m) for la, c, m in open_ if la == lang}
        texts = {sf.path: "\n".join(nl.text for nl in sf.new_lines())
                 for sf in changed if sf.lang == lang}
        for text in texts.values():
            wanted -= _overridden(text, lang, wanted)
        for path in _repo_files(payload, lang, wanted) if wanted else []:
            found = None if path in texts else ss.repo_text(payload, path)
            wanted -= _overridden(found or "", lang, wanted)
        open_ -= {(la, c, m) for la, c, m in open_ if la == lang and (c, m) not in wanted}
    return [f for f in findings
            if not isinstance(f, Overridable) or (f.lang, f.cls, f.method) in open_]


def main() -> None:
    payload = ss.load_payload()
    changed = list(ss.code_files(payload))
    out: list[ss.Finding] = []
    for sf in changed:
        scan(sf, out)
    ss.finish(unless_overridden(payload, changed, out), ADVICE)


if __name__ == "__main__":
    ss.main_guard(main)
