"""Write-time feedback in a real Claude Code session: the default pack's mechanical rules
judge a Write before it lands, on the lines it adds, so the agent hears of slop when it
writes it and not only at the end of the turn."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.fakeapi import tool_results
from tests.test_hooks_claude_e2e import SLOPJUDGE, events, git, say, session, tool

pytestmark = pytest.mark.claude

SWALLOWED = ("def load(path):\n    try:\n        return open(path).read()\n    except:\n"
             "        pass\n")
CLEAN = "def load(path):\n    with open(path) as fh:\n        return fh.read()\n"
# The pack's judge rules need a model; this session has none, and they do not run at write time.
JUDGE_RULES = ("hardcoded-results", "narration-comments", "weakened-tests")


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "repo"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    git(ws, "config", "user.email", "t@example.com")
    git(ws, "config", "user.name", "T")
    for args in (["init"], ["install", "claude", "--absolute"]):
        proc = subprocess.run([SLOPJUDGE, *args], cwd=ws, capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
    for rule in JUDGE_RULES:
        shutil.rmtree(ws / "rules" / rule)
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "init")
    return ws


def test_slop_is_denied_when_written_and_clean_code_lands(repo: Path) -> None:
    turns = [
        tool("Write", file_path=str(repo / "store.py"), content=SWALLOWED),
        tool("Write", file_path=str(repo / "store.py"), content=CLEAN),
        say("done"),
    ]
    api, proc = session(repo, lambda req, n: turns[min(n, len(turns) - 1)])
    assert proc.returncode == 0, proc.stderr
    (denied,) = tool_results(api.requests[1])
    assert denied["is_error"]
    text = str(denied["content"])
    assert "swallowed-errors: store.py:4: bare except swallows every error silently" in text
    assert "slopjudge refused this Write" in text
    (allowed,) = tool_results(api.requests[2])
    assert not allowed["is_error"], allowed
    assert (repo / "store.py").read_text() == CLEAN
    assert len(api.requests) == 3  # the Stop hook let the clean turn end
    pre_tool = [e for e in events(repo) if e["event"] == "pre-tool"
                and e["rule"] == "swallowed-errors"]
    assert [e["outcome"] for e in pre_tool] == ["refuse", "pass"]
