"""Fail-closed contract, Stop: only the project's committed ``.gitignore`` files decide
what is not the project's (SPEC §10). A ``.gitignore`` the session writes or edits hides
nothing from Stop. Each test runs the real ``slopjudge hook`` process on a real
repository; the hiding ones let the refused file through before."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.failclosed.hooks_kit import block_reason, hook, make_ws, start, stop
from tests.helpers import commit_all

# Built at run time, so this file itself holds no live-looking key.
LIVE_KEY = 'STRIPE_SECRET_KEY = "sk_' + 'live_51Hx7Ue2eZvKYlo2C8xQm3Tn9pRa4WbZ"\n'


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return make_ws(tmp_path, pack=("protect-rules", "_lib", "hardcoded-secrets"))


def run_stop(ws: Path) -> str:
    rc, out, err = hook("stop", ws, stop(ws), process=True)
    assert rc == 0, err
    return block_reason(out)


def test_a_file_the_session_adds_to_gitignore_is_still_judged(ws: Path) -> None:
    hook("start", ws, start(ws), process=True)
    (ws / "secret.py").write_text(LIVE_KEY)
    with open(ws / ".gitignore", "a") as fh:
        fh.write("secret.py\n")
    reason = run_stop(ws)
    assert "hardcoded-secrets" in reason and "secret.py" in reason, reason


def test_a_gitignore_written_in_a_new_folder_hides_nothing(ws: Path) -> None:
    hook("start", ws, start(ws), process=True)
    (ws / "lib").mkdir()
    (ws / "lib" / ".gitignore").write_text("*\n")  # ignores itself too
    (ws / "lib" / "helpers.py").write_text("FORBIDDEN = 1\n")
    assert "lib/helpers.py:1: FORBIDDEN marker" in run_stop(ws)


def test_without_a_baseline_the_committed_gitignore_decides(ws: Path) -> None:
    (ws / "secret.py").write_text(LIVE_KEY)
    with open(ws / ".gitignore", "a") as fh:
        fh.write("secret.py\n")
    reason = run_stop(ws)  # no session start: Stop compares with HEAD (and says so)
    assert "hardcoded-secrets" in reason and "secret.py" in reason, reason


def test_what_the_committed_gitignore_files_ignore_stays_ignored(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / ".gitignore").write_text("# here only\n/only-here.txt\nbuild/\n!keep.log\n"
                                           "*.log\n")
    commit_all(ws, "a nested .gitignore")
    hook("start", ws, start(ws), process=True)
    # Ignored by the committed files (and never the project's): not judged.
    (ws / "x.pyc").write_text("FORBIDDEN\n")  # the top .gitignore: *.pyc
    (ws / "sub" / "only-here.txt").write_text("FORBIDDEN\n")
    (ws / "sub" / "a" / "build").mkdir(parents=True)
    (ws / "sub" / "a" / "build" / "out.txt").write_text("FORBIDDEN\n")
    (ws / "sub" / "a" / "debug.log").write_text("FORBIDDEN\n")
    # A tool's cache that hides itself with a .gitignore of its own: left out, counted.
    (ws / ".pytest_cache").mkdir()
    (ws / ".pytest_cache" / ".gitignore").write_text("# Created by pytest automatically.\n*\n")
    (ws / ".pytest_cache" / "CACHEDIR.TAG").write_text(
        "Signature: 8a477f597d28d172789f06886806bc55\n")
    (ws / ".pytest_cache" / "README.md").write_text("FORBIDDEN\n")
    assert hook("stop", ws, stop(ws), process=True)[:2] == (0, None)
    # Not ignored by them: judged. The anchored pattern is sub/'s only; the negation
    # comes before *.log, so *.log wins, as git reads it.
    (ws / "sub" / "a" / "only-here.txt").write_text("FORBIDDEN\n")
    (ws / "other.log").write_text("FORBIDDEN\n")
    reason = run_stop(ws)
    assert "sub/a/only-here.txt:1: FORBIDDEN marker" in reason, reason
    assert "other.log:1: FORBIDDEN marker" in reason
    assert "sub/only-here.txt" not in reason.replace("sub/a/only-here.txt", "")
    assert "debug.log" not in reason and "out.txt" not in reason and "x.pyc" not in reason
