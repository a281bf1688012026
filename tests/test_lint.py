"""The code stays lint-clean: ruff over sources, tests, benches, scripts and the default rule
pack's scripts (they ship to every user via `slopjudge init`); mypy over the package.

Both read their settings from pyproject.toml. A tool that is not installed skips its test (the
`test` extra installs both).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tool(name: str) -> str:
    """The tool beside this interpreter (the venv), else on PATH; skip when neither has it."""
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found is None:
        pytest.skip(f"{name} is not installed (pip install -e '.[test]' installs it)")
    return found


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_finds_nothing() -> None:
    proc = _run(
        [_tool("ruff"), "check", "--no-cache", "slopjudge", "tests", "bench", "scripts", "rules"]
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_finds_nothing() -> None:
    proc = _run([_tool("mypy"), "--no-incremental", "slopjudge"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found" in proc.stdout
