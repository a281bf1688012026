"""slopjudge-agent driving the real Claude Code CLI, with the model played by a fake API.

Each test runs ``slopjudge-agent --harness claude`` exactly as slopjudge calls
a runner (SPEC §5: prompt on stdin, the repository read-only, ``Read Grep``
allowed), with ``slopjudge-verify`` as the verifier and the pinned CLI from
``node_modules`` as the harness. The fake model finds the answer path in the
prompt and acts on it.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.claude_cli import claude_bin
from tests.fakeapi import FakeMessagesAPI, Script, claude_env, last_user_text, tool_results

pytestmark = pytest.mark.claude

ANSWER_RE = re.compile(r"Write your answer to the file (/\S+?)\. ")
RUN_TIMEOUT = 50


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    git = ["git", "-C", str(r), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    (r / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (r / "rules").mkdir()
    (r / "rules" / "style.yaml").write_text("description: x\nchecks:\n  - script: ./s.sh\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return r


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under root (``.git`` included) with its hash: byte-identical means equal."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() or p.is_symlink():
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def answer_path(request: dict[str, Any]) -> str:
    for msg in request.get("messages") or []:
        content = msg.get("content")
        texts = [content] if isinstance(content, str) else [
            b.get("text", "") for b in content or [] if isinstance(b, dict)
        ]
        for t in texts:
            m = ANSWER_RE.search(str(t))
            if m:
                return m.group(1)
    raise AssertionError("no answer path in the prompt")


def run_agent(
    tmp_path: Path, repo: Path, verifier: str, script: Script, *extra: str,
    prompt: bytes = b"Judge the change to app.py. Reply with a verdict object.",
) -> tuple[subprocess.CompletedProcess[bytes], FakeMessagesAPI]:
    claude = claude_bin()
    out_root = tmp_path / "answers"
    with FakeMessagesAPI(script) as api:
        env = claude_env(api.url, str(tmp_path / "home"))
        env["SLOPJUDGE_CLAUDE_BIN"] = claude
        env["SLOPJUDGE_AGENT_OUTPUT_DIR"] = str(out_root)
        proc = subprocess.run(
            [
                sys.executable, "-m", "slopjudge.judging.runner.agent",
                "--harness", "claude", "--model", "size-md", "--verify", verifier,
                "--add-dir:readonly", str(repo), "--allowed-tools", "Read Grep",
                "--prompt-stdin", *extra,
            ],
            input=prompt, env=env, cwd=repo / "rules", capture_output=True, timeout=RUN_TIMEOUT,
        )
    assert not api.errors, api.errors
    # The private answer folder never outlives the run.
    assert list(out_root.iterdir()) == []
    return proc, api


def write_verdict(verdict: dict[str, Any]) -> Script:
    def script(request: dict[str, Any], turn: int) -> list[dict[str, Any]]:
        if tool_results(request):
            return [{"type": "text", "text": "Done."}]
        return [{
            "type": "tool_use", "name": "Write",
            "input": {"file_path": answer_path(request), "content": json.dumps(verdict)},
        }]
    return script


def test_written_pass_verdict_passes(tmp_path: Path, repo: Path, verifier: str) -> None:
    """A passing verdict, on a prompt over 64k: too long for an argument, it reaches the
    real CLI on stdin whole."""
    verdict = {"pass": True, "reasoning": "the change is small and tested"}
    big = b"Judge the change to app.py.\n" + b"x" * 70_000 + b"\nEND-OF-DIFF-MARKER"
    proc, api = run_agent(tmp_path, repo, verifier, write_verdict(verdict), prompt=big)
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout) == verdict
    err = proc.stderr.decode()
    assert 'JUDGE-PASS-REASON-JSON: "the change is small and tested"' in err
    # The Write into the answer folder was granted, not refused.
    results = tool_results(api.requests[1])
    assert len(results) == 1 and not results[0]["is_error"], results
    # The prompt carried the caller's text, all of it, and the answer-file paragraph.
    first = last_user_text(api.requests[0])
    assert "Judge the change to app.py." in first and "will be read and checked" in first
    assert "x" * 70_000 in first and "END-OF-DIFF-MARKER" in first


def test_written_fail_verdict_refuses_with_reasoning(
    tmp_path: Path, repo: Path, verifier: str
) -> None:
    verdict = {"pass": False, "reasoning": "add() lost its docstring"}
    proc, api = run_agent(tmp_path, repo, verifier, write_verdict(verdict))
    assert proc.returncode == 2
    assert proc.stdout == b""
    lines = proc.stderr.decode().splitlines()
    reasons = [ln for ln in lines if ln.startswith("JUDGE-REASON-JSON: ")]
    assert reasons and json.loads(reasons[-1].split(": ", 1)[1]) == "add() lost its docstring"
    # Final: no second attempt.
    assert sum(1 for r in api.requests if not tool_results(r)) == 1


def test_no_verdict_refuses(tmp_path: Path, repo: Path, verifier: str) -> None:
    def script(request: dict[str, Any], turn: int) -> list[dict[str, Any]]:
        return [{"type": "text", "text": "Looks fine to me, I suppose."}]

    proc, api = run_agent(tmp_path, repo, verifier, script)
    assert proc.returncode == 2
    assert proc.stdout == b""
    err = proc.stderr.decode()
    assert "(after 2 attempts)" in err
    assert "wrote no output" in err
    # Asked twice; the second prompt says why.
    assert len(api.requests) == 2
    assert "REJECTED" in last_user_text(api.requests[1])


def test_bash_and_repo_write_are_refused_and_nothing_changes(
    tmp_path: Path, repo: Path, verifier: str
) -> None:
    before = _snapshot(repo)
    evil = repo / "evil.txt"

    def script(request: dict[str, Any], turn: int) -> list[dict[str, Any]]:
        if tool_results(request):
            return [{"type": "text", "text": "I could not do it."}]
        return [
            {"type": "tool_use", "name": "Bash",
             "input": {"command": "touch pwned", "description": "make a file"}},
            {"type": "tool_use", "name": "Write",
             "input": {"file_path": str(evil), "content": "slop\n"}},
            {"type": "tool_use", "name": "Edit",
             "input": {"file_path": str(repo / "app.py"), "old_string": "a + b",
                       "new_string": "a - b"}},
        ]

    proc, api = run_agent(tmp_path, repo, verifier, script, "--verify-attempts", "1")
    assert proc.returncode == 2
    refused = [tool_results(r) for r in api.requests if tool_results(r)]
    assert len(refused) == 1 and len(refused[0]) == 3
    for result in refused[0]:
        assert result["is_error"], result
        assert re.search(r"denied|permission", result["content"], re.I), result
    assert not evil.exists()
    assert not (repo / "pwned").exists() and not (repo / "rules" / "pwned").exists()
    assert _snapshot(repo) == before
    status = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--ignored"],
        capture_output=True, check=True,
    )
    assert status.stdout == b""


def test_verdict_as_reply_text_is_taken_when_no_file_was_written(
    tmp_path: Path, repo: Path, verifier: str
) -> None:
    verdict = {"pass": True, "reasoning": "answered inline"}

    def script(request: dict[str, Any], turn: int) -> list[dict[str, Any]]:
        return [{"type": "text", "text": json.dumps(verdict)}]

    proc, api = run_agent(tmp_path, repo, verifier, script)
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout) == verdict
    assert len(api.requests) == 1
