#!/usr/bin/env python3
"""debugger-statements: added code that stops the program in a debugger."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import pyast as ast  # noqa: E402 - ast's parts, without its import
import slopscan as ss  # noqa: E402

ADVICE = "Remove the debugger call: it stops every run that reaches it."

DEBUGGER_MODULES = ("pdb", "ipdb", "pudb", "pdbpp")
DEBUGGER_CALLS = ("embed", "IPython.embed", "pdb.run", "pdb.pm")
# Every name the Python check looks for: a file with none of them is not parsed.
PY_ANY = ("breakpoint", "set_trace", "embed", "pdb", "pudb")
# A debugger call or import on a line of a Python file that does not parse.
PY_DEBUGGER_LINE = ss.Later(
    r"\bbreakpoint\s*\(\s*\)|\b(i?pdb|pudb)\.set_trace\s*\(|^\s*import\s+(i?pdb|pudb)\b"
)
JS_DEBUGGER = ss.Later(r"(^|[;{}\s])debugger\s*;?\s*$")
GO_BREAKPOINT = ss.Later(r"\bruntime\s*\.\s*Breakpoint\s*\(\s*\)")


def python_tree(sf: ss.SourceFile, tree: ast.Module, out: list[ss.Finding]) -> None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and ss.node_added(sf, node):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) \
                else [node.module or ""]
            if any(m.split(".")[0] in DEBUGGER_MODULES for m in mods):
                out.append(ss.Finding(sf.path, node.lineno, f"imports the debugger {mods[0]}"))
        elif isinstance(node, ast.Call) and ss.node_added(sf, node):
            name = ss.dotted(node.func)
            if name == "breakpoint" or name.endswith("set_trace") or name in DEBUGGER_CALLS:
                out.append(ss.Finding(sf.path, node.lineno,
                                      f"{name}() stops the program in a debugger"))


def python_lines(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    for ll in sf.added_lexed():
        if PY_DEBUGGER_LINE.search(ll.code):
            out.append(ss.Finding(sf.path, ll.no, "leftover debugger call"))


def scan(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    if sf.lang == "python":
        if ss.may_hold(sf, PY_ANY, fold=False):
            ss.by_tree(sf, out, python_tree, python_lines)
        return
    for ll in sf.added_lexed():
        if sf.lang == "js" and JS_DEBUGGER.search(ll.code):
            out.append(ss.Finding(sf.path, ll.no, "`debugger` statement"))
        elif sf.lang == "go" and GO_BREAKPOINT.search(ll.code):
            out.append(ss.Finding(sf.path, ll.no, "runtime.Breakpoint() stops in a debugger"))


if __name__ == "__main__":
    ss.check_files(scan, ADVICE)
