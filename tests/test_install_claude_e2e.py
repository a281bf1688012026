"""The committed hook wrapper inside a real Claude Code session.

`slopjudge install claude` writes the wrapper; the real CLI (pinned in
package.json) runs `claude -p` against a fake Messages API. First on a
machine where the wrapper can see no slopjudge: the Write is blocked with the
install message and the turn cannot end judged. Then, with slopjudge in the
project's .venv, the very same Write is judged by the rules.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.claude_cli import claude_bin
from tests.fakeapi import FakeMessagesAPI, claude_env, last_user_text, tool_results
from tests.helpers import git
from tests.test_install_wrapper import SCAN

pytestmark = pytest.mark.claude

SLOPJUDGE = str(Path(sys.executable).parent / "slopjudge")
# What a teammate's machine without slopjudge has: git and a shell, no slopjudge, and no
# python3 that can import it.
BARE_PATH = "/usr/bin:/bin"

Turn = Callable[[dict[str, Any], int], list[dict[str, Any]]]


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "repo"
    rule = ws / "rules" / "no-forbidden"
    rule.mkdir(parents=True)
    git(ws, "init", "-q", "-b", "main")
    git(ws, "config", "user.email", "t@example.com")
    git(ws, "config", "user.name", "T")
    (ws / ".gitignore").write_text(".venv/\n")
    (rule / "scan.py").write_text(SCAN)
    (rule / "scan.py").chmod(0o755)
    (rule / "rule.yaml").write_text(
        "description: No FORBIDDEN markers\non: [pre-tool]\ntools: [Write]\n"
        "checks:\n  - id: scan\n    script: scan.py\n")
    proc = subprocess.run([SLOPJUDGE, "install", "claude"], cwd=ws, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "rules and hooks, as a team commits them")
    return ws


def session(ws: Path, script: Turn, **env: str) -> FakeMessagesAPI:
    with FakeMessagesAPI(script) as api:
        full = claude_env(api.url, home=str(ws.parent / "home"))
        full.update(PATH=BARE_PATH, **env)
        proc = subprocess.run(
            [claude_bin(), "-p", "go", "--permission-mode", "acceptEdits",
             "--output-format", "stream-json", "--verbose"],
            cwd=ws, env=full, capture_output=True, text=True, timeout=120,
        )
    assert not api.errors, api.errors
    assert proc.returncode == 0, proc.stderr
    return api


def write_turns(ws: Path) -> list[list[dict[str, Any]]]:
    return [
        [{"type": "tool_use", "name": "Write",
          "input": {"file_path": str(ws / "bad.py"), "content": "x = 1  # FORBIDDEN\n"}}],
        [{"type": "text", "text": "done"}],
    ]


def test_a_write_is_blocked_until_slopjudge_is_installed_then_judged(repo: Path) -> None:
    hooks = json.loads((repo / ".claude" / "settings.json").read_text())["hooks"]
    assert hooks["PreToolUse"][0]["hooks"][0]["command"] == (
        '"$CLAUDE_PROJECT_DIR"/.claude/hooks/slopjudge hook pre-tool')

    # 1. No slopjudge the wrapper can see: the Write is blocked, saying how to install it.
    turns = write_turns(repo)
    api = session(repo, lambda req, n: turns[min(n, 1)], CLAUDE_CODE_STOP_HOOK_BLOCK_CAP="1")
    (blocked,) = tool_results(api.requests[1])
    assert blocked["is_error"]
    assert "BLOCKED by slopjudge: Write could change the repository" in blocked["content"]
    assert ".venv/bin/pip install /path/to/slopjudge" in blocked["content"]
    assert not (repo / "bad.py").exists()
    # The end of the turn is blocked too (then let go by the cap of 1 set above).
    feedback = last_user_text(api.requests[2])
    assert "BLOCKED by slopjudge: the changes of this turn cannot be judged" in feedback
    assert not (repo / ".slopjudge" / "events.jsonl").exists()  # nothing was judged

    # 2. slopjudge in the project's virtualenv: the same Write is judged by the rule.
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "slopjudge").symlink_to(SLOPJUDGE)
    turns = write_turns(repo)
    clean = [{"type": "tool_use", "name": "Write",
              "input": {"file_path": str(repo / "good.py"), "content": "x = 1\n"}}]
    turns.insert(1, clean)
    api = session(repo, lambda req, n: turns[min(n, 2)])
    (denied,) = tool_results(api.requests[1])
    assert denied["is_error"]
    assert "no-forbidden: FORBIDDEN marker in bad.py" in denied["content"]
    assert "not installed" not in denied["content"]
    assert not (repo / "bad.py").exists()
    (allowed,) = tool_results(api.requests[2])
    assert not allowed["is_error"], allowed
    assert (repo / "good.py").read_text() == "x = 1\n"
    assert len(api.requests) == 3  # no Stop block: the turn ended normally
    events = [json.loads(line) for line in
              (repo / ".slopjudge" / "events.jsonl").read_text().splitlines()]
    assert [(e["rule"], e["outcome"]) for e in events] == [
        ("no-forbidden", "refuse"), ("no-forbidden", "pass")]
