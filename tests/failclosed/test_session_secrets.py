"""Fail-closed contract, Stop: the key that signs a session baseline and the mark that says
one was recorded. A key made unusable, or a baseline deleted with its mark, is an error at
the stop, never "no key here" or "no baseline recorded" (either would let a change the
agent committed in the session pass as HEAD). Through the real ``slopjudge hook`` process,
with a state folder of the test's own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.failclosed.hooks_kit import block_reason, clean_env, git, hook, make_ws, start, stop


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    return clean_env(XDG_STATE_HOME=str(tmp_path / "state"))


def committed_slop(tmp_path: Path, env: dict[str, str]) -> Path:
    ws = make_ws(tmp_path)
    assert hook("start", ws, start(ws), env=env, process=True)[0] == 0
    (ws / "b.txt").write_text("FORBIDDEN\n")
    git(ws, "add", "b.txt")
    git(ws, "commit", "-q", "-m", "slop")  # HEAD now holds it
    return ws


def test_a_key_readable_by_others_is_an_error(tmp_path: Path, env: dict[str, str]) -> None:
    ws = committed_slop(tmp_path, env)
    key = tmp_path / "state" / "slopjudge" / "key"
    key.chmod(0o644)  # no longer slopjudge's alone: it signs nothing
    # ... and the baseline rewritten, unsigned, to the tree that holds the slop.
    [baseline] = (ws / ".slopjudge" / "state").glob("*.json")
    record = json.loads(baseline.read_text())
    record.pop("mac")
    record.update(tree=git(ws, "rev-parse", "HEAD^{tree}"), head=git(ws, "rev-parse", "HEAD"))
    baseline.write_text(json.dumps(record))
    reason = block_reason(hook("stop", ws, stop(ws), env=env, process=True)[1])
    assert f"slopjudge's key {key} cannot be read safely" in reason, reason


def test_a_key_replaced_is_an_error(tmp_path: Path, env: dict[str, str]) -> None:
    ws = committed_slop(tmp_path, env)
    (tmp_path / "state" / "slopjudge" / "key").write_bytes(b"k" * 32)
    reason = block_reason(hook("stop", ws, stop(ws), env=env, process=True)[1])
    assert "was changed after slopjudge wrote it" in reason, reason


def test_a_baseline_deleted_with_its_mark_is_an_error(tmp_path: Path,
                                                      env: dict[str, str]) -> None:
    ws = committed_slop(tmp_path, env)
    shutil.rmtree(ws / ".slopjudge" / "state")
    shutil.rmtree(tmp_path / "state" / "slopjudge" / "sessions")
    reason = block_reason(hook("stop", ws, stop(ws), env=env, process=True)[1])
    assert "this session has no baseline" in reason, reason


def test_a_key_deleted_is_an_error(tmp_path: Path, env: dict[str, str]) -> None:
    ws = committed_slop(tmp_path, env)
    (tmp_path / "state" / "slopjudge" / "key").unlink()  # a new key signs nothing old
    reason = block_reason(hook("stop", ws, stop(ws), env=env, process=True)[1])
    assert "was changed after slopjudge wrote it" in reason, reason


def test_a_key_that_is_a_link_is_an_error(tmp_path: Path, env: dict[str, str]) -> None:
    ws = committed_slop(tmp_path, env)
    key = tmp_path / "state" / "slopjudge" / "key"
    copy = tmp_path / "key-copy"
    copy.write_bytes(key.read_bytes())
    copy.chmod(0o600)
    key.unlink()
    key.symlink_to(copy)  # the same bytes, but a file the agent could point anywhere
    reason = block_reason(hook("stop", ws, stop(ws), env=env, process=True)[1])
    assert f"slopjudge's key {key} cannot be read safely" in reason, reason
