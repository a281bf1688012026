"""Fail-closed contract, Stop backstop: a file git is told to ignore inside the rules folder
is still a protected change. Rule scripts import their folder's helpers, so a hidden
``rules/_lib/x.py`` would run inside slopjudge; the backstop runs before any rule code and,
when it finds a protected change, no rule runs at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.failclosed.hooks_kit import block_reason, hook, make_ws, start, stop

# What an agent would plant: turn every check into a pass from inside slopjudge.
PATCH = """
import slopjudge.checks.script as s
import slopjudge.hooks.backstop as b
from slopjudge.procs import ProcResult
def _ok(*a, **k): return ProcResult(0, b'{"skip": true}', b"")
s.run = _ok
b.check = lambda *a, **k: None
"""


@pytest.mark.parametrize("ignore", [".git/info/exclude", ".gitignore"])
def test_an_ignored_helper_planted_in_the_rules_blocks_the_stop(tmp_path: Path,
                                                               ignore: str) -> None:
    ws = make_ws(tmp_path)
    hook("start", ws, start(ws))
    (ws / "b.txt").write_text("FORBIDDEN\n")
    with open(ws / ignore, "a") as fh:
        fh.write("rules/_lib/zz*\n")
    (ws / "rules" / "_lib" / "zzfast.py").write_text(PATCH)
    rc, out, err = hook("stop", ws, stop(ws))
    reason = block_reason(out)
    if ignore == ".gitignore":  # one edited in the session hides nothing from Stop
        assert "rules/_lib/zzfast.py (added)" in reason
    else:  # the clone's own exclude list hides nothing, and is itself protected
        assert "rules/_lib/zzfast.py (added)" in reason and ".git/info/exclude (changed)" in reason
    assert "A person must review the change" in reason


def test_without_hidden_files_the_rules_still_run(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    hook("start", ws, start(ws))
    (ws / "b.txt").write_text("FORBIDDEN\n")
    reason = block_reason(hook("stop", ws, stop(ws))[1])
    assert "b.txt:1: FORBIDDEN marker" in reason and "protected files" not in reason


def test_a_baseline_rewritten_to_hide_the_change_blocks_the_stop(tmp_path: Path) -> None:
    import json
    import os
    import subprocess

    ws = make_ws(tmp_path)
    hook("start", ws, start(ws))
    (ws / "b.txt").write_text("FORBIDDEN\n")
    # The agent's script writes the work tree's own tree into the baseline file.
    env = dict(os.environ, GIT_INDEX_FILE=str(tmp_path / "idx"))
    subprocess.run(["git", "add", "-A"], cwd=ws, env=env, check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=ws, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()
    [state_file] = [p for p in (ws / ".slopjudge" / "state").glob("*.json")
                    if not p.name.endswith(".spend.json")]
    record = json.loads(state_file.read_text())
    record.update(tree=tree, head=None)
    state_file.write_text(json.dumps(record))
    rc, out, err = hook("stop", ws, stop(ws))
    reason = block_reason(out)
    assert "was changed after slopjudge wrote it" in reason, reason
    # Resuming the session does not launder it into a new baseline.
    hook("start", ws, start(ws, source="resume"))
    assert "was changed after slopjudge wrote it" in block_reason(hook("stop", ws, stop(ws))[1])


def test_a_baseline_deleted_after_the_change_was_committed_blocks_the_stop(
        tmp_path: Path) -> None:
    from tests.failclosed.hooks_kit import git

    ws = make_ws(tmp_path)
    hook("start", ws, start(ws))
    (ws / "b.txt").write_text("FORBIDDEN\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "wip")  # HEAD now holds the change
    for f in (ws / ".slopjudge" / "state").glob("*.json"):
        f.unlink()
    reason = block_reason(hook("stop", ws, stop(ws))[1])
    assert "has since been deleted" in reason, reason
