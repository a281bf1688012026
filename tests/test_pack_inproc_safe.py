"""The default pack's Python scripts run inside the PreToolUse hook process
(checks/inproc.py), which gives each what ``python script.py`` would except what none of
them may do there: start threads or processes, register ``atexit`` handlers, set signal
handlers or timers, end the process. This keeps a change to the pack from doing it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT

PACK = REPO_ROOT / "slopjudge" / "data" / "rules"
SCRIPTS = sorted(PACK.glob("*/*.py"))
FORBIDDEN_MODULES = {"threading", "_thread", "atexit", "signal", "_signal", "subprocess",
                     "multiprocessing", "concurrent", "faulthandler", "asyncio"}
FORBIDDEN_CALLS = {("os", "_exit"), ("os", "fork"), ("os", "forkpty"), ("os", "kill"),
                   ("os", "abort"), ("os", "system"), ("os", "popen"), ("os", "execv"),
                   ("os", "execvp"), ("os", "putenv"), ("os", "chdir"),
                   ("sys", "setrecursionlimit")}


def _problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        found += [f"{path.name}:{node.lineno}: imports {n}" for n in names
                  if n.split(".")[0] in FORBIDDEN_MODULES]
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and (node.value.id, node.attr) in FORBIDDEN_CALLS):
            found.append(f"{path.name}:{node.lineno}: {node.value.id}.{node.attr}")
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for t in targets:
                if isinstance(t, ast.Subscript) and ast.unparse(t.value) == "os.environ":
                    found.append(f"{path.name}:{node.lineno}: changes os.environ")
                if isinstance(t, ast.Attribute) and ast.unparse(t.value) == "sys" and t.attr in (
                        "stdout", "stderr", "stdin", "modules", "excepthook"):
                    found.append(f"{path.name}:{node.lineno}: replaces sys.{t.attr}")
    return found


def test_the_pack_has_python_scripts() -> None:
    assert len(SCRIPTS) >= 10, SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_pack_script_does_nothing_the_hook_process_cannot_give_back(script: Path) -> None:
    assert _problems(script) == []
