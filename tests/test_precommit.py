"""This repository as a pre-commit hook repository, run by pre-commit itself.

A scratch repository's ``.pre-commit-config.yaml`` names a local clone of this
repository (its HEAD plus what the work tree changes, committed in the clone);
pre-commit installs it with pip into its own environment and runs the
``slopjudge`` hook of ``.pre-commit-hooks.yaml`` on the staged change.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from slopjudge.precommit import run_args

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SLOPJUDGE = str(BIN / "slopjudge")

PLACEHOLDER = "def area(width: float, height: float) -> float:\n    raise NotImplementedError\n"
CLEAN = "def area(width: float, height: float) -> float:\n    return width * height\n"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
                          cwd=cwd, check=True, capture_output=True, text=True).stdout


def pre_commit_bin() -> str:
    found = BIN / "pre-commit"
    if found.exists():
        return str(found)
    message = "pre-commit is not installed (pip install -e '.[test]' installs it)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)
    raise AssertionError("unreachable")


def clone_of_this_repository(dest: Path) -> str:
    """A clone of HEAD with the work tree's changes committed on top; its commit."""
    if not (ROOT / ".git").exists():
        pytest.skip("this copy of slopjudge is not a git repository")
    subprocess.run(["git", "clone", "-q", "--no-local", str(ROOT), str(dest)], check=True,
                   capture_output=True)
    changed = git(ROOT, "ls-files", "-z", "--modified", "--others", "--exclude-standard")
    for rel in filter(None, changed.split("\0")):
        src = ROOT / rel
        if src.is_symlink() or not src.is_file():
            continue  # node_modules and the like; deleted files are handled below
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)
    for rel in filter(None, git(ROOT, "ls-files", "-z", "--deleted").split("\0")):
        (dest / rel).unlink(missing_ok=True)
    git(dest, "add", "-A")
    if git(dest, "status", "--porcelain"):
        git(dest, "commit", "-q", "-m", "work tree")
    return git(dest, "rev-parse", "HEAD").strip()


REVIEW_RULE = """\
description: A judge looks at every change
on: [ci]
checks:
  - id: judge
    judge: review.md.j2
"""
REVIEW_TEMPLATE = "Review this change.\n{{ change }}\n"
MOCK = """#!/bin/sh
cat >/dev/null
echo '{"pass": false, "reasoning": "the review judge was asked, and refuses"}'
"""


def write_config(ws: Path, clone: Path, rev: str, args: list[str] | None = None) -> None:
    hook: dict[str, object] = {"id": "slopjudge"}
    if args:
        hook["args"] = args
    config = {"repos": [{"repo": str(clone), "rev": rev, "hooks": [hook]}]}
    (ws / ".pre-commit-config.yaml").write_text(json.dumps(config, indent=2))
    git(ws, "add", ".pre-commit-config.yaml")


def test_pre_commit_runs_the_hook_from_a_clone_of_this_repository(tmp_path: Path) -> None:
    pre_commit = pre_commit_bin()
    clone = tmp_path / "slopjudge-clone"
    rev = clone_of_this_repository(clone)
    ws = tmp_path / "project"
    ws.mkdir()
    git(ws, "init", "-q")
    subprocess.run([SLOPJUDGE, "init"], cwd=ws, check=True, capture_output=True)
    (ws / "rules" / "review").mkdir()
    (ws / "rules" / "review" / "rule.yaml").write_text(REVIEW_RULE)
    (ws / "rules" / "review" / "review.md.j2").write_text(REVIEW_TEMPLATE)
    write_config(ws, clone, rev)
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "rules and pre-commit")
    mock = tmp_path / "mock.sh"
    mock.write_text(MOCK)
    mock.chmod(0o755)
    # pre-commit's own environment: no slopjudge of ours leaks in through PATH.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLOPJUDGE_", "PRE_COMMIT", "VIRTUAL_ENV", "GITHUB_"))}
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"),
               PATH=os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                    if Path(p).resolve() != BIN.resolve()))

    def pre_commit_run(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([pre_commit, "run", "--all-files", "--color", "never"], cwd=ws,
                              env={**env, **extra}, capture_output=True, text=True,
                              timeout=900)

    (ws / "src").mkdir()
    (ws / "src" / "area calc.py").write_text(PLACEHOLDER)
    git(ws, "add", "-A")
    proc = pre_commit_run()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "slopjudge" in out and "Failed" in out
    assert "placeholder-code/scan" in out and "src/area calc.py:2" in out
    assert "review/judge" in out and "not judged (dry run)" in out  # judges are not asked

    (ws / "src" / "area calc.py").write_text(CLEAN)
    git(ws, "add", "-A")
    proc = pre_commit_run()
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Passed" in out

    # With --judges in the hook's args, the judge is asked (here a mock standing for the model).
    write_config(ws, clone, rev, ["--judges", "--rule", "review"])
    proc = pre_commit_run(SLOPJUDGE_JUDGE_MOCKS=json.dumps({"review/judge": str(mock)}))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "the review judge was asked, and refuses" in out


def test_the_hook_definition() -> None:
    (hook,) = YAML(typ="safe").load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "slopjudge" and hook["language"] == "python"
    assert hook["entry"] == "slopjudge-pre-commit" and hook["pass_filenames"] is False
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'slopjudge-pre-commit = "slopjudge.precommit:main"' in pyproject


@pytest.mark.parametrize(("argv", "environ", "expected"), [
    ([], {}, ["run", "--dry-run", "--staged"]),
    (["--judges"], {}, ["run", "--staged"]),
    (["--judges", "--rule", "x"], {}, ["run", "--rule", "x", "--staged"]),
    ([], {"PRE_COMMIT_FROM_REF": "a1", "PRE_COMMIT_TO_REF": "b2"},
     ["run", "--dry-run", "--base", "a1", "--head", "b2"]),
    (["--working-tree"], {"PRE_COMMIT_FROM_REF": "a1", "PRE_COMMIT_TO_REF": "b2"},
     ["run", "--working-tree", "--dry-run"]),
    (["--dry-run", "--base=main"], {}, ["run", "--dry-run", "--base=main"]),
])
def test_hook_arguments(argv: list[str], environ: dict[str, str], expected: list[str]) -> None:
    assert run_args(argv, environ) == expected
