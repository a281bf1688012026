"""What the pack's scripts use of :mod:`ast`, without importing ``ast``: its import (its
enums, its unparser, ``contextlib``) costs a Write's hook, where every pack script runs
in one process, about 5 ms, more than most scripts' whole work. The node classes are
``_ast``'s, as ``ast`` has them; the functions below are ``ast``'s, line for line; anything
else (``dump``, ``get_source_segment``, a docstring's cleaning) is ``ast``'s own, imported
on first use."""

from __future__ import annotations

from _ast import *  # noqa: F403 - the node classes, as ast re-exports them
from _ast import AST, AsyncFunctionDef, ClassDef, Constant, Expr, FunctionDef, Module, PyCF_ONLY_AST
from collections import deque

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any


def parse(source: str | bytes, filename: str = "<unknown>", mode: str = "exec") -> Any:
    """``ast.parse(source, filename, mode)``."""
    return compile(source, filename, mode, PyCF_ONLY_AST, _feature_version=-1)


def iter_fields(node: AST) -> Iterator[tuple[str, Any]]:
    for field in node._fields:
        try:
            yield field, getattr(node, field)
        except AttributeError:
            pass


def iter_child_nodes(node: AST) -> Iterator[AST]:
    for _name, field in iter_fields(node):
        if isinstance(field, AST):
            yield field
        elif isinstance(field, list):
            for item in field:
                if isinstance(item, AST):
                    yield item


def walk(node: AST) -> Iterator[AST]:
    todo = deque([node])
    while todo:
        node = todo.popleft()
        todo.extend(iter_child_nodes(node))
        yield node


def get_docstring(node: AST, clean: bool = True) -> str | None:
    """``ast.get_docstring``: None here for a node without one, else ``ast``'s answer."""
    if (isinstance(node, (AsyncFunctionDef, FunctionDef, ClassDef, Module)) and not (
            node.body and isinstance(node.body[0], Expr)
            and isinstance(node.body[0].value, Constant)
            and isinstance(node.body[0].value.value, str))):
        return None
    import ast

    return ast.get_docstring(node, clean)  # type: ignore[arg-type]


def __getattr__(name: str) -> Any:
    import ast

    return getattr(ast, name)
