"""Compiled rule code kept between runs is slopjudge's own: an entry rewritten, moved
under another script's name, or left from an older version of the script is never run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import commit_all, make_repo, sj

CHECK = 'import json, sys\nprint(json.dumps({{"reason": "{0}"}}))\nsys.exit({1})\n'


def script_repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    for rid, (word, code) in {"alpha": ("alpha ran", 1), "beta": ("beta ran", 0)}.items():
        folder = repo / "rules" / rid
        folder.mkdir(parents=True)
        (folder / "rule.yaml").write_text(
            f"description: {rid}\nchecks:\n  - id: scan\n    script: check.py\n",
            encoding="utf-8")
        (folder / "check.py").write_text(CHECK.format(word, code), encoding="utf-8")
    (repo / "src.py").write_text("x = 1\n", encoding="utf-8")
    commit_all(repo, "rules")
    (repo / "src.py").write_text("x = 2\n", encoding="utf-8")
    return repo


def reasons(repo: Path, env: dict[str, str]) -> dict[str, tuple[str, str]]:
    import json

    res = sj("run", "--working-tree", "--format", "json", cwd=repo, env=env)
    report = json.loads(res.stdout)
    return {c["id"]: (c["outcome"], c["reason"]) for c in report["checks"]}


def entries(state: Path) -> list[Path]:
    folder = state / "slopjudge" / "code"
    return sorted(folder.glob("*.code")) if folder.is_dir() else []


def written_entries(repo: Path, env: dict[str, str], state: Path) -> list[Path]:
    """The code cache's entries after one run; skips where checks are not forked."""
    reasons(repo, env)
    found = entries(state)
    if not found:
        pytest.skip("this machine runs Python checks in a fresh interpreter (no cgroup)")
    return found


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    if sys.platform != "linux":
        pytest.skip("Python checks run in a fork on Linux only")
    state = tmp_path / "state"
    return script_repo(tmp_path), {"XDG_STATE_HOME": str(state)}, state


def test_entries_are_written_and_reused(setup: tuple[Path, dict[str, str], Path]) -> None:
    repo, env, state = setup
    first = reasons(repo, env)
    assert first == {"alpha/scan": ("refuse", "alpha ran"), "beta/scan": ("pass", "beta ran")}
    if not entries(state):
        pytest.skip("this machine runs Python checks in a fresh interpreter (no cgroup)")
    stamps = {p: p.stat().st_mtime_ns for p in entries(state)}
    assert reasons(repo, env) == first
    assert {p: p.stat().st_mtime_ns for p in entries(state)} == stamps  # read, not rewritten


def test_swapped_entries_are_not_run(setup: tuple[Path, dict[str, str], Path]) -> None:
    """beta's signed code under alpha's name would turn alpha's refusal into a pass."""
    repo, env, state = setup
    found = written_entries(repo, env, state)
    # Which entry is whose: the one whose body mentions "beta ran".
    beta = [p for p in found if b"beta ran" in p.read_bytes()]
    alpha = [p for p in found if b"alpha ran" in p.read_bytes()]
    assert len(beta) == 1 and len(alpha) == 1
    alpha[0].write_bytes(beta[0].read_bytes())
    assert reasons(repo, env)["alpha/scan"] == ("refuse", "alpha ran")


def test_rewritten_entry_is_not_run(setup: tuple[Path, dict[str, str], Path]) -> None:
    repo, env, state = setup
    found = written_entries(repo, env, state)
    # An attacker without the key: valid marshal data of code that passes, old MAC kept.
    passing = subprocess.run(
        [sys.executable, "-c",
         "import marshal, sys; sys.stdout.buffer.write(marshal.dumps(compile("
         "'import sys; sys.exit(0)', 'x', 'exec')))"],
        capture_output=True, check=True).stdout
    for entry in found:
        head, _, _body = entry.read_bytes().partition(b"\n")
        mac, _, _ = _body.partition(b"\n")
        entry.write_bytes(head + b"\n" + mac + b"\n" + passing)
    assert reasons(repo, env)["alpha/scan"] == ("refuse", "alpha ran")


def test_edited_script_is_compiled_again(setup: tuple[Path, dict[str, str], Path]) -> None:
    repo, env, state = setup
    reasons(repo, env)
    check = repo / "rules" / "beta" / "check.py"
    check.write_text(CHECK.format("beta changed", 1), encoding="utf-8")
    os.utime(check, ns=(1, 1))  # same-looking stats do not matter: the source is the key
    assert reasons(repo, env)["beta/scan"] == ("refuse", "beta changed")


def test_no_entry_is_kept_when_the_key_is_inside_the_project(tmp_path: Path) -> None:
    # The rules folder deeper than rules/<rule>/ (rules_dir: ci/rules) and the state
    # folder inside the repository: the agent could read that key and sign code.
    if sys.platform != "linux":
        pytest.skip("Python checks run in a fork on Linux only")
    repo = script_repo(tmp_path)
    (repo / "ci").mkdir()
    os.rename(repo / "rules", repo / "ci" / "rules")
    (repo / "slopjudge.yaml").write_text("rules_dir: ci/rules\n", encoding="utf-8")
    env = {"XDG_STATE_HOME": str(repo / ".state")}
    assert reasons(repo, env) == {"alpha/scan": ("refuse", "alpha ran"),
                                  "beta/scan": ("pass", "beta ran")}
    assert entries(repo / ".state") == []
