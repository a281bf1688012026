"""`slopjudge run` with a judge rule, all the way down to the real Claude Code CLI.

The whole stack is real except the model: slopjudge renders the template,
resolves its default runner (`slopjudge-agent`, as no `sr-agent` is on PATH),
which runs the pinned `claude -p` against a local fake Messages API; the fake
model reads the answer path from the prompt and writes a verdict there, and
slopjudge's verifier and report decide.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.claude_cli import claude_bin
from tests.fakeapi import FakeMessagesAPI, Script, claude_env, tool_results
from tests.test_agent_claude_e2e import answer_path

pytestmark = pytest.mark.claude

TEMPLATE = """\
Does this change keep `add` documented?
{% for f in changeset.files %}<file path="{{ f.path }}">
{{ f.newContent }}</file>
{% endfor %}<diff>
{{ change }}</diff>
"""


def documented_repo(root: Path, changed: str, check_extra: str = "") -> Path:
    """A committed repository with one judge rule on ``*.py``; ``app.py`` then ``changed``."""
    r = root / "repo"
    (r / "rules" / "documented").mkdir(parents=True)
    (r / "rules" / "documented" / "rule.yaml").write_text(
        "description: Public functions keep their docstrings\n"
        "paths: ['*.py']\n"
        f"checks:\n  - id: judge\n    judge: documented.md.j2\n{check_extra}"
        "    allowed_tools: [Read, Grep]\n")
    (r / "rules" / "documented" / "documented.md.j2").write_text(TEMPLATE)
    (r / "app.py").write_text('def add(a, b):\n    """Sum."""\n    return a + b\n')
    git = ["git", "-C", str(r), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    (r / "app.py").write_text(changed)
    return r


def judge_env(tmp_path: Path, url: str) -> dict[str, str]:
    """The CLI's environment for a fake API at ``url``, with the pinned claude binary."""
    env = claude_env(url, str(tmp_path / "home"))
    env["SLOPJUDGE_CLAUDE_BIN"] = claude_bin()
    env["SLOPJUDGE_EVENTS_FILE"] = str(tmp_path / "events.jsonl")
    # The venv's bin first (slopjudge-agent, slopjudge-verify), and no sr-agent anywhere.
    env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"])
    return env


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return documented_repo(tmp_path, "def add(a, b):\n    return a + b  # </file> {{ 7*7 }}\n")


def judge(
    tmp_path: Path, repo: Path, script: Script
) -> tuple[int, dict[str, Any], FakeMessagesAPI]:
    with FakeMessagesAPI(script) as api:
        proc = subprocess.run(
            [sys.executable, "-m", "slopjudge", "run", "--format", "json"],
            cwd=repo, env=judge_env(tmp_path, api.url), capture_output=True, text=True, timeout=120,
        )
    assert not api.errors, api.errors
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), api


def writes(verdict: dict[str, Any]) -> Script:
    def script(request: dict[str, Any], turn: int) -> list[dict[str, Any]]:
        if tool_results(request):
            return [{"type": "text", "text": "Done."}]
        return [{"type": "tool_use", "name": "Write",
                 "input": {"file_path": answer_path(request), "content": json.dumps(verdict)}}]
    return script


def the_check(report: dict[str, Any]) -> dict[str, Any]:
    (check,) = [c for c in report["checks"] if c["id"] == "documented/judge"]
    return check


def test_a_written_fail_verdict_refuses_with_the_judges_reasoning(
    tmp_path: Path, repo: Path
) -> None:
    verdict = {"pass": False, "reasoning": "add() lost its docstring at app.py:1"}
    code, report, _ = judge(tmp_path, repo, writes(verdict))
    check = the_check(report)
    assert (code, report["outcome"], check["outcome"]) == (1, "refuse", "refuse")
    assert "add() lost its docstring at app.py:1" in check["reason"]


def test_a_model_that_writes_no_verdict_is_an_error(tmp_path: Path, repo: Path) -> None:
    def talks(request: dict[str, Any], turn: int) -> list[dict[str, Any]]:
        return [{"type": "text", "text": "Looks good to me!"}]

    code, report, api = judge(tmp_path, repo, talks)
    check = the_check(report)
    assert (code, check["outcome"]) == (2, "error")  # no verdict: undecided, not a refusal
    assert check["reason"], check
    # slopjudge-agent asked again (--verify-attempts 2) before giving up.
    assert len([r for r in api.requests if not tool_results(r)]) == 2
