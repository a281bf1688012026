"""slopjudge's hooks inside a real Claude Code session.

The real CLI (pinned in package.json) runs `claude -p` in a temporary git
repository whose hooks were installed by `slopjudge install claude`; a fake
Messages API plays the model, turn by turn, and the test reads what the hooks
sent back in the next request (tool results, Stop feedback, session context).
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
from tests.fakeapi import FakeMessagesAPI, all_text, claude_env, last_user_text, tool_results

pytestmark = pytest.mark.claude

SLOPJUDGE = str(Path(sys.executable).parent / "slopjudge")

SCAN = r'''#!/usr/bin/env python3
"""Refuse added lines that contain FORBIDDEN."""
import json, sys
payload = json.load(sys.stdin)
bad = []
for f in payload["changeset"]["files"]:
    for line in f["diff"].splitlines():
        if line.startswith("+") and not line.startswith("+++") and "FORBIDDEN" in line:
            bad.append({"path": f["path"], "message": "FORBIDDEN marker"})
if bad:
    print(json.dumps({"reason": "added lines contain FORBIDDEN; remove the marker",
                      "findings": bad}))
    sys.exit(1)
'''


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "repo"
    (ws / "rules" / "no-forbidden").mkdir(parents=True)
    git(ws, "init", "-q", "-b", "main")
    git(ws, "config", "user.email", "t@example.com")
    git(ws, "config", "user.name", "T")
    (ws / ".gitignore").write_text("*.pyc\n")  # slopjudge hides its own state folder
    scan = ws / "rules" / "no-forbidden" / "scan.py"
    scan.write_text(SCAN)
    scan.chmod(0o755)
    (ws / "rules" / "no-forbidden" / "rule.yaml").write_text(
        "description: No FORBIDDEN markers in added lines\n"
        "on: [pre-tool, stop]\ntools: [Write, Edit]\n"
        "checks:\n  - id: scan\n    script: scan.py\n")
    proc = subprocess.run([SLOPJUDGE, "install", "claude", "--absolute"], cwd=ws,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "init")
    return ws


Turn = Callable[[dict[str, Any], int], list[dict[str, Any]]]


def session(ws: Path, script: Turn) -> tuple[FakeMessagesAPI, subprocess.CompletedProcess[str]]:
    """One `claude -p` run in ``ws`` against a fake model playing ``script``."""
    claude = claude_bin()
    with FakeMessagesAPI(script) as api:
        env = claude_env(api.url, home=str(ws.parent / "home"))
        proc = subprocess.run(
            [claude, "-p", "go", "--permission-mode", "acceptEdits",
             "--output-format", "stream-json", "--verbose"],
            cwd=ws, env=env, capture_output=True, text=True, timeout=60,
        )
    assert not api.errors, api.errors
    return api, proc


def tool(name: str, **inp: Any) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "name": name, "input": inp}]


def say(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def stream(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    out = []
    for line in proc.stdout.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def events(ws: Path) -> list[dict[str, Any]]:
    path = ws / ".slopjudge" / "events.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_write_with_a_violation_is_denied_and_a_clean_one_allowed(repo: Path) -> None:
    turns = [
        tool("Write", file_path=str(repo / "bad.py"), content="x = 1  # FORBIDDEN\n"),
        tool("Write", file_path=str(repo / "good.py"), content="x = 1\n"),
        say("done"),
    ]
    api, proc = session(repo, lambda req, n: turns[min(n, len(turns) - 1)])
    assert proc.returncode == 0, proc.stderr
    (denied,) = tool_results(api.requests[1])
    assert denied["is_error"]
    assert "no-forbidden: added lines contain FORBIDDEN" in denied["content"]
    assert "check no-forbidden/scan" in denied["content"]
    assert not (repo / "bad.py").exists()
    (allowed,) = tool_results(api.requests[2])
    assert not allowed["is_error"], allowed
    assert (repo / "good.py").read_text() == "x = 1\n"
    assert len(api.requests) == 3  # the Stop hook let the clean session end
    assert [e["outcome"] for e in events(repo)] == ["refuse", "pass", "pass"]


def test_stop_sends_the_agent_back_until_the_bash_violation_is_fixed(repo: Path) -> None:
    turns = [
        tool("Bash", command="printf 'ok\\nFORBIDDEN\\n' > made.txt", description="write"),
        say("done"),
        tool("Bash", command="printf 'ok\\n' > made.txt", description="fix"),
        say("fixed"),
    ]
    api, proc = session(repo, lambda req, n: turns[min(n, len(turns) - 1)])
    assert proc.returncode == 0, proc.stderr
    assert len(api.requests) == 4
    feedback = last_user_text(api.requests[2])
    assert "Stop hook feedback" in feedback
    assert "no-forbidden/scan: added lines contain FORBIDDEN" in feedback
    assert "made.txt: FORBIDDEN marker" in feedback
    assert "Fix each of these in the work tree" in feedback
    assert (repo / "made.txt").read_text() == "ok\n"
    assert [e["outcome"] for e in events(repo) if e["event"] == "stop"] == ["refuse", "pass"]


def test_a_rule_that_does_not_load_is_left_to_the_person_and_blocks_stop_once(
        repo: Path) -> None:
    (repo / "rules" / "broken.yaml").write_text("description: broken\non: [whenever]\n"
                                                "checks:\n  - script: missing.sh\n")
    turns = [
        say("done"),
        tool("Write", file_path=str(repo / "rules" / "broken.yaml"),
             content='description: fixed\non: [stop]\nchecks:\n  - script: "true"\n'),
        say("rules/broken.yaml needs a person"),
    ]
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "broken rule")
    api, proc = session(repo, lambda req, n: turns[min(n, len(turns) - 1)])
    assert proc.returncode == 0, proc.stderr
    context = all_text(api.requests[0])
    assert "slopjudge load check: these rules are NOT in force until fixed" in context
    assert "rules/broken.yaml does not load: rules/broken.yaml:" in context
    assert "A person must fix these rule files" in context
    feedback = last_user_text(api.requests[1])
    assert "Stop hook feedback" in feedback and "rules/broken.yaml does not load" in feedback
    assert "A person must fix the rule file" in feedback and "Fix each of these" not in feedback
    # Its events cannot be read, so it counts at pre-tool too: the agent's edit is denied.
    result = tool_results(api.requests[2])[0]
    assert result["is_error"] and "rules/broken.yaml does not load" in str(result["content"])
    assert "broken" in (repo / "rules" / "broken.yaml").read_text()
    # The stop after the block lets the turn end, saying the block stands.
    assert len(api.requests) == 3
    assert "letting the turn end; the block stands" in proc.stdout + proc.stderr


def test_the_block_cap_ends_a_session_that_cannot_fix_its_violation(repo: Path) -> None:
    (repo / "slopjudge.yaml").write_text("stop_block_cap: 3\n")
    turns = [tool("Bash", command="echo FORBIDDEN > stuck.txt", description="x"), say("done")]
    api, proc = session(repo, lambda req, n: turns[min(n, len(turns) - 1)])
    assert proc.returncode == 0, proc.stderr
    # The Bash turn, then three stops: two blocked, the third let through.
    assert len(api.requests) == 4
    assert all("stuck.txt" in last_user_text(r) for r in api.requests[2:])
    said = proc.stdout + proc.stderr
    assert "letting the turn end after 3 refusals in a row; the refusal still stands" in said
    stops = [e["outcome"] for e in events(repo) if e["event"] == "stop"]
    assert stops == ["refuse"] * 3
