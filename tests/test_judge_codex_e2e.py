"""`slopjudge run` with a judge rule through the Codex harness, down to the real CLI.

The whole stack is real except the model: slopjudge renders the template and runs
`slopjudge-agent --harness codex`, which runs the pinned `codex exec` pointed (by
SLOPJUDGE_CODEX_BASE_URL, the documented way to use another endpoint) at a local fake
Responses API; the fake model reads the answer path from the prompt and writes a verdict
there with a shell command, and slopjudge's verifier and report decide.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.codex_cli import codex_bin
from tests.fakeresponses import FakeResponsesAPI, HTTPError, call_outputs, say, shell, user_texts
from tests.test_judge_claude_e2e import documented_repo

pytestmark = pytest.mark.codex

ANSWER_RE = re.compile(r"Write your answer to the file (/\S+?)\. ")
MODEL = "gpt-5.5"  # a model Codex calls its tools for directly (no code mode)


def answer_path(request: dict[str, Any]) -> str:
    for text in user_texts(request):
        m = ANSWER_RE.search(text)
        if m:
            return m.group(1)
    raise AssertionError("no answer path in the prompt")


def judge_env(tmp_path: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLOPJUDGE_", "OPENAI_", "CODEX_"))}
    home = tmp_path / "home"
    (home / "codex").mkdir(parents=True, exist_ok=True)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env.update({
        "HOME": str(home), "CODEX_HOME": str(home / "codex"),
        "SLOPJUDGE_HARNESS": "codex", "SLOPJUDGE_CODEX_BIN": codex_bin(),
        "SLOPJUDGE_CODEX_BASE_URL": url, "SLOPJUDGE_CODEX_API_KEY_ENV": "FAKE_OPENAI_KEY",
        "FAKE_OPENAI_KEY": "test-key",
        # Codex makes its sandbox helper beside CODEX_HOME, never under the temporary folder.
        "TMPDIR": str(tmp_path / "tmp"),
        "SLOPJUDGE_EVENTS_FILE": str(tmp_path / "events.jsonl"),
        # The venv's bin first (slopjudge-agent, slopjudge-verify), and no sr-agent anywhere.
        "PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"]),
    })
    return env


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return documented_repo(tmp_path, "def add(a, b):\n    return a + b\n",
                           f"    model: {MODEL}\n")


def judge(tmp_path: Path, repo: Path, script: Any, *, settings: str = "",
          usage: dict[str, int] | None = None) -> tuple[int, dict[str, Any], FakeResponsesAPI]:
    if settings:
        (repo / "slopjudge.yaml").write_text(settings)
    with FakeResponsesAPI(script, usage=usage) as api:
        proc = subprocess.run(
            [sys.executable, "-m", "slopjudge", "run", "--format", "json"],
            cwd=repo, env=judge_env(tmp_path, api.url), capture_output=True, text=True,
            timeout=300,
        )
    assert not api.errors, api.errors
    assert proc.stdout.strip(), proc.stderr
    return proc.returncode, json.loads(proc.stdout), api


def writes(verdict: dict[str, Any] | str) -> Any:
    text = verdict if isinstance(verdict, str) else json.dumps(verdict)

    def script(request: dict[str, Any], turn: int) -> list[dict[str, Any]]:
        if call_outputs(request):
            return [say("Done.")]
        return [shell(f"printf '%s' {shlex.quote(text)} > {shlex.quote(answer_path(request))}")]
    return script


def the_check(report: dict[str, Any]) -> dict[str, Any]:
    (check,) = [c for c in report["checks"] if c["id"] == "documented/judge"]
    return check


def events(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (tmp_path / "events.jsonl").read_text().splitlines()]


def test_a_written_pass_verdict_passes(tmp_path: Path, repo: Path) -> None:
    code, report, api = judge(tmp_path, repo, writes({"pass": True, "reasoning": "fine"}))
    assert (code, report["outcome"], the_check(report)["outcome"]) == (0, "pass", "pass")
    assert api.requests[0]["model"] == MODEL
    assert "Does this change keep `add` documented?" in "\n".join(user_texts(api.requests[0]))


def test_a_written_fail_verdict_refuses_with_the_judges_reasoning(
    tmp_path: Path, repo: Path
) -> None:
    verdict = {"pass": False, "reasoning": "add() lost its docstring at app.py:1"}
    code, report, _ = judge(tmp_path, repo, writes(verdict))
    check = the_check(report)
    assert (code, report["outcome"], check["outcome"]) == (1, "refuse", "refuse")
    assert "add() lost its docstring at app.py:1" in check["reason"]


def test_a_garbage_answer_is_an_error(tmp_path: Path, repo: Path) -> None:
    code, report, api = judge(tmp_path, repo, writes("PASS!!! looks great"))
    check = the_check(report)
    assert (code, check["outcome"]) == (2, "error")  # undecided, never a pass
    assert len(api.requests) >= 2  # slopjudge-agent asked again before giving up


def test_401_is_an_error_and_not_retried(tmp_path: Path, repo: Path) -> None:
    code, report, api = judge(tmp_path, repo, lambda r, n: HTTPError(401, "invalid api key"))
    check = the_check(report)
    assert (code, check["outcome"]) == (2, "error")
    assert api.statuses == [401]


def test_429_is_retried_then_an_error(tmp_path: Path, repo: Path) -> None:
    code, report, api = judge(tmp_path, repo, lambda r, n: HTTPError(429, "rate limit reached"))
    check = the_check(report)
    assert (code, check["outcome"]) == (2, "error")
    assert api.statuses == [429, 429]  # the call and its one retry (slopjudge's default)


def test_usage_recorded_is_what_the_api_counted(tmp_path: Path, repo: Path) -> None:
    usage = {"input_tokens": 1000, "cached_tokens": 300, "output_tokens": 40}
    code, report, api = judge(tmp_path, repo, writes({"pass": True, "reasoning": "ok"}),
                              usage=usage)
    assert code == 0, report
    calls = len(api.requests)
    (event,) = events(tmp_path)
    recorded = event["usage"]
    # Codex's input_tokens include the cached ones: each token counted once.
    assert recorded["input_tokens"] + recorded["cache_read_input_tokens"] == 1000 * calls
    assert recorded["cache_read_input_tokens"] == 300 * calls
    assert recorded["output_tokens"] == 40 * calls

