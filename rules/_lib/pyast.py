"""What the pack's scripts use of :mod:`ast`, without importing ``ast``: its import (its
enums, its unparser, ``contextlib``) costs a Write's hook, where every pack script runs
in one process, about 5 ms, more than most scripts' whole work (and a docstring's
cleaning loads ``inspect``, more still). The node classes are ``_ast``'s, as ``ast`` has
them, loaded by the first parse or the first use of one (a node comes from either, so the
functions below find them): ``_ast`` builds all its classes on import, 0.7 ms, which a
change no script parses (most Edits) does without. The functions below are ``ast``'s and
``inspect.cleandoc``, line for line; anything else (``dump``, ``get_source_segment``) is
``ast``'s own, imported on first use."""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _ast import AST, AsyncFunctionDef, ClassDef, Constant, Expr, FunctionDef, Module
    from collections.abc import Iterator
    from typing import Any

PyCF_ONLY_AST = 1024  # _ast.PyCF_ONLY_AST


def _load() -> None:
    """``from _ast import *`` into this module, once."""
    if "AST" not in globals():
        import _ast

        globals().update((k, v) for k, v in vars(_ast).items() if not k.startswith("_"))


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> Any:
    """``ast.parse(source, filename, mode)``."""
    _load()
    return compile(source, filename, mode, PyCF_ONLY_AST, _feature_version=-1)


def iter_fields(node: AST) -> Iterator[tuple[str, Any]]:
    for field in node._fields:
        try:
            yield field, getattr(node, field)
        except AttributeError:
            pass


def iter_child_nodes(node: AST) -> Iterator[AST]:
    _load()  # the node may be ast.parse's, this module's classes not loaded yet
    for _name, field in iter_fields(node):
        if isinstance(field, AST):
            yield field
        elif isinstance(field, list):
            for item in field:
                if isinstance(item, AST):
                    yield item


def walk(node: AST) -> Iterator[AST]:
    # ast.walk's order (breadth first) with a list: a list iterator reaches what is
    # appended while it runs, and collections' import would cost more than the walk.
    todo = [node]
    for node in todo:
        todo.extend(iter_child_nodes(node))
        yield node


def get_docstring(node: AST, clean: bool = True) -> str | None:
    _load()
    if not isinstance(node, (AsyncFunctionDef, FunctionDef, ClassDef, Module)):
        raise TypeError(f"{node.__class__.__name__!r} can't have docstrings")
    if not (node.body and isinstance(node.body[0], Expr)):
        return None
    value = node.body[0].value
    if not (isinstance(value, Constant) and isinstance(value.value, str)):
        return None
    return cleandoc(value.value) if clean else value.value


def cleandoc(doc: str) -> str:
    """``inspect.cleandoc``, whose module costs more than ``ast``."""
    lines = doc.expandtabs().split("\n")
    margin = sys.maxsize  # the least indentation of a non-blank line after the first
    for line in lines[1:]:
        content = len(line.lstrip())
        if content:
            margin = min(margin, len(line) - content)
    if lines:
        lines[0] = lines[0].lstrip()
    if margin < sys.maxsize:
        for i in range(1, len(lines)):
            lines[i] = lines[i][margin:]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


def __getattr__(name: str) -> Any:
    """A node class (loading them all), else ``ast``'s own ``name``."""
    _load()
    if name in globals():
        return globals()[name]
    import ast

    return getattr(ast, name)
