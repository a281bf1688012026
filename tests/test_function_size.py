"""A function over 60 lines or over a cyclomatic complexity of 15 is one that
docs/architecture.md ("Long functions") says why of."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO_ROOT

PACKAGE = REPO_ROOT / "slopjudge"
MAX_LINES = 60
MAX_COMPLEXITY = 15


def long_functions() -> set[str]:
    """``path:function`` (path relative to slopjudge/) of every function over MAX_LINES."""
    out = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if "data" in path.relative_to(PACKAGE).parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                if node.end_lineno - node.lineno + 1 > MAX_LINES:
                    out.add(f"{path.relative_to(PACKAGE).as_posix()}:{node.name}")
    return out


def complex_functions() -> set[str]:
    """The same for ruff's C901 over MAX_COMPLEXITY."""
    beside = Path(sys.executable).with_name("ruff")
    ruff = str(beside) if beside.is_file() else shutil.which("ruff")
    assert ruff is not None, "ruff is in the test extras (pip install -e '.[test]')"
    proc = subprocess.run(
        [ruff, "check", "--isolated", "--select", "C901", "--config",
         f"lint.mccabe.max-complexity={MAX_COMPLEXITY}", "--output-format", "json",
         str(PACKAGE)],
        capture_output=True, text=True, timeout=300)
    out = set()
    for item in json.loads(proc.stdout):
        name = re.match(r"`([^`]+)`", item["message"])
        assert name is not None, item["message"]
        rel = Path(item["filename"]).resolve().relative_to(PACKAGE.resolve()).as_posix()
        out.add(f"{rel}:{name.group(1)}")
    return out


def documented() -> set[str]:
    text = (REPO_ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Long functions", 1)[1]
    return set(re.findall(r"^\| `([^`]+:[A-Za-z_][A-Za-z0-9_]*)` \|", section, re.M))


def test_every_long_or_complex_function_is_explained() -> None:
    found = long_functions() | complex_functions()
    assert found - documented() == set()
    assert documented() - found == set(), "rows for functions no longer long or complex"


def test_the_measures_see_what_they_measure() -> None:
    assert "checks/graph.py:execute" not in long_functions()
    assert "procs.py:_collect" in long_functions() & complex_functions()
    assert "loading/loader.py:_link" in complex_functions() - long_functions()
