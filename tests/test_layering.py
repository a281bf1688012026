"""Library code does not depend on its adapters: only ``hooks/``, ``commands/`` and
``cli.py`` may import from ``slopjudge.hooks`` or ``slopjudge.commands``."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO_ROOT

PACKAGE = REPO_ROOT / "slopjudge"
ADAPTERS = ("slopjudge.hooks", "slopjudge.commands")
ALLOWED = ("slopjudge.hooks", "slopjudge.commands", "slopjudge.cli")


def _module(path: Path) -> tuple[str, bool]:
    """The dotted name of ``path`` and whether it is a package's ``__init__``."""
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def imported(path: Path, name: str, is_package: bool = False) -> list[tuple[int, str]]:
    """(line, absolute dotted name) of every import in module ``name`` at ``path``,
    those inside functions too."""
    package = name if is_package else name.rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # `from . import hooks` imports a module named by the alias.
            found += [(node.lineno, f"{base}.{alias.name}") for alias in node.names]
    return found


def _within(name: str, roots: tuple[str, ...]) -> bool:
    return any(name == r or name.startswith(r + ".") for r in roots)


def violations() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "data" in path.relative_to(PACKAGE).parts[:1]:
            continue  # the shipped rule pack: not package modules
        module, is_package = _module(path)
        if _within(module, ALLOWED):
            continue
        for line, name in imported(path, module, is_package):
            if _within(name, ADAPTERS):
                out.append(f"{path.relative_to(REPO_ROOT)}:{line}: imports {name}")
    return out


def test_library_modules_do_not_import_hooks_or_commands() -> None:
    assert violations() == []


def test_the_walk_sees_relative_absolute_and_function_level_imports(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from ..hooks.common import note\n"
        "import slopjudge.commands.run\n"
        "def f() -> None:\n"
        "    from .. import hooks\n"
        "    from ..model import Event\n"
        "    from . import split\n",
        encoding="utf-8",
    )
    names = sorted(n for _, n in imported(probe, "slopjudge.checks.probe"))
    assert names == ["slopjudge.checks.split", "slopjudge.commands.run",
                     "slopjudge.hooks", "slopjudge.hooks.common.note", "slopjudge.model.Event"]
    inside = sorted(n for _, n in imported(probe, "slopjudge.checks", is_package=True))
    assert inside[0] == "slopjudge.checks.split" and "slopjudge.hooks" in inside
    assert [n for n in names if _within(n, ADAPTERS)] == [
        "slopjudge.commands.run", "slopjudge.hooks", "slopjudge.hooks.common.note"]
