"""The package is built in layers, and no module imports one above its own
(docs/architecture.md draws them):

    5  hooks/  commands/  cli.py  __main__.py  precommit.py  testing.py
    4  records/  report/
    3  checks/  judging/  harnesses/ (the agents: their answers, install and judge)
    2  loading/  payload.py
    1  changes/
    0  the base: model, errors, paths (fsutil, pathglob, resources, sessions),
       jsonobject, processes (procs), signing (cachesign), usage, hookspec

Imports inside functions count too. Besides, no two modules import each other,
directly or around a loop, while they are being imported (top-level imports).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO_ROOT

PACKAGE = REPO_ROOT / "slopjudge"
LAYERS: dict[str, int] = {
    "hooks": 5, "commands": 5, "cli": 5, "__main__": 5, "precommit": 5, "testing": 5,
    "records": 4, "report": 4,
    "checks": 3, "judging": 3, "harnesses": 3,
    "loading": 2, "payload": 2,
    "changes": 1,
    "model": 0, "errors": 0, "fsutil": 0, "pathglob": 0, "resources": 0, "sessions": 0,
    "jsonobject": 0, "procs": 0, "cachesign": 0, "usage": 0, "hookspec": 0,
    "": 0,  # slopjudge/__init__.py
}


def _module(path: Path) -> tuple[str, bool]:
    """The dotted name of ``path`` and whether it is a package's ``__init__``."""
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def _type_checking_only(node: ast.AST) -> bool:
    return (isinstance(node, ast.If) and isinstance(node.test, ast.Name)
            and node.test.id == "TYPE_CHECKING")


def imported(path: Path, name: str, is_package: bool = False,
             top_level: bool = False) -> list[tuple[int, str]]:
    """(line, absolute dotted name) of every import in module ``name`` at ``path``:
    those inside functions too, unless ``top_level``. Imports under ``if TYPE_CHECKING``
    never run and do not count."""
    package = name if is_package else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child):
                continue
            if top_level and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                ast.Lambda)):
                continue
            if isinstance(child, ast.Import):
                found.extend((child.lineno, alias.name) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (child.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                # `from . import hooks` imports a module named by the alias.
                found.extend((child.lineno, f"{base}.{alias.name}") for alias in child.names)
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return found


def _modules() -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "data" in path.relative_to(PACKAGE).parts[:1]:
            continue  # the shipped rule pack: not package modules
        name, is_package = _module(path)
        out[name] = (path, is_package)
    return out


def layer_of(module: str) -> int | None:
    """The layer of a ``slopjudge`` module (its first part below ``slopjudge``)."""
    parts = module.split(".")
    return LAYERS.get(parts[1] if len(parts) > 1 else "")


def _target(name: str, modules: dict[str, tuple[Path, bool]]) -> str | None:
    """The slopjudge module an imported name lives in (``a.b.func`` is ``a.b``)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def violations() -> list[str]:
    modules = _modules()
    out = []
    for module, (path, is_package) in modules.items():
        own = layer_of(module)
        if own is None:
            out.append(f"{path.relative_to(REPO_ROOT)}: in no layer (add it to LAYERS)")
            continue
        for line, name in imported(path, module, is_package):
            target = _target(name, modules)
            if target is None:
                continue
            theirs = layer_of(target)
            if theirs is not None and theirs > own:
                out.append(f"{path.relative_to(REPO_ROOT)}:{line}: layer {own} imports "
                           f"{target} of layer {theirs}")
    return out


def import_time_graph() -> dict[str, set[str]]:
    """Module -> the slopjudge modules its top-level imports load (a package's
    ``__init__`` loads with each of its modules)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in modules.items():
        edges = set()
        for _line, name in imported(path, module, is_package, top_level=True):
            target = _target(name, modules)
            if target is not None and target != module:
                edges.add(target)
        parent = module.rpartition(".")[0]
        if parent in modules and not is_package:
            edges.add(parent)
        graph[module] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def test_no_module_imports_a_layer_above_its_own() -> None:
    assert violations() == []


def by_package(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between ``slopjudge``'s packages and top-level modules."""
    def top(module: str) -> str:
        return ".".join(module.split(".")[:2])

    out: dict[str, set[str]] = {}
    for module, edges in graph.items():
        out.setdefault(top(module), set()).update(top(e) for e in edges if top(e) != top(module))
    return out


def test_no_import_cycle_at_import_time() -> None:
    graph = import_time_graph()
    assert "slopjudge.checks.engine" in graph  # the walk found the package
    assert cycles(graph) == []
    # Nor between packages: checks, judging, loading and records once did.
    assert cycles(by_package(graph)) == []


def test_every_top_level_name_has_a_layer() -> None:
    names = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").is_file()) and p.stem != "__init__"}
    assert names - LAYERS.keys() == set()


def test_the_walk_sees_relative_absolute_and_function_level_imports(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from ..hooks.common import note\n"
        "import slopjudge.commands.run\n"
        "TYPE_CHECKING = False\n"
        "if TYPE_CHECKING:\n"
        "    from slopjudge.records import record\n"
        "def f() -> None:\n"
        "    from .. import hooks\n"
        "    from ..model import Event\n"
        "    from . import split\n",
        encoding="utf-8",
    )
    names = sorted(n for _, n in imported(probe, "slopjudge.checks.probe"))
    assert names == ["slopjudge.checks.split", "slopjudge.commands.run",
                     "slopjudge.hooks", "slopjudge.hooks.common.note", "slopjudge.model.Event"]
    top = sorted(n for _, n in imported(probe, "slopjudge.checks.probe", top_level=True))
    assert top == ["slopjudge.commands.run", "slopjudge.hooks.common.note"]
    inside = sorted(n for _, n in imported(probe, "slopjudge.checks", is_package=True))
    assert inside[0] == "slopjudge.checks.split" and "slopjudge.hooks" in inside


def test_a_layer_violation_and_a_cycle_are_seen() -> None:
    assert layer_of("slopjudge.checks.engine") == 3
    assert layer_of("slopjudge.procs") == 0 and layer_of("slopjudge") == 0
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]
