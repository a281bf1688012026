"""Fail-closed contract, Stop: a repository made inside the workspace (``git init sub``)
neither hides the files in it nor breaks the Stop check, with or without a commit of its
own. Either would let an agent end its turn past a refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.failclosed.hooks_kit import block_reason, git, hook, make_ws, start, stop


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    ws = make_ws(tmp_path)
    hook("start", ws, start(ws))
    return ws


@pytest.mark.parametrize("committed", [False, True], ids=["no-commit", "with-commit"])
def test_files_in_a_nested_repository_are_judged(ws: Path, committed: bool) -> None:
    sub = ws / "vendor" / "sub"
    sub.mkdir(parents=True)
    git(sub, "init", "-q", "-b", "main")
    (sub / "b.txt").write_text("FORBIDDEN\n")
    (sub / "deeper").mkdir()
    git(sub / "deeper", "init", "-q")
    (sub / "deeper" / "c.txt").write_text("FORBIDDEN\n")
    if committed:
        git(sub, "-c", "user.email=t@example.com", "-c", "user.name=T", "add", "b.txt")
        git(sub, "-c", "user.email=t@example.com", "-c", "user.name=T",
            "commit", "-q", "-m", "hide")
    rc, out, err = hook("stop", ws, stop(ws))
    reason = block_reason(out)
    assert rc == 0
    assert "vendor/sub/b.txt:1: FORBIDDEN marker" in reason, reason
    assert "vendor/sub/deeper/c.txt:1: FORBIDDEN marker" in reason, reason
    assert "could not check" not in reason, reason


def test_a_clean_nested_repository_passes(ws: Path) -> None:
    sub = ws / "sub"
    sub.mkdir()
    git(sub, "init", "-q")
    (sub / "ok.txt").write_text("fine\n")
    assert hook("stop", ws, stop(ws))[:2] == (0, None)
