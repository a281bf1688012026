"""Fail-closed contract: every hook answers before the timeout its install wrote. The agent
lets a call through when its hook times out, so a judge that never answers (or a harness
that keeps failing, attempt + backoff + attempt) must end in a block the hook gives itself.
The real ``slopjudge hook`` process, with ``hook_timeout: 10`` (the deadline is 2 s under
it) so each test takes seconds, not the default 660."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.failclosed.hooks_kit import clean_env, hook, make_ws, pre_tool, start, stop
from tests.helpers import executable

TIMEOUT = 10


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    ws = make_ws(tmp_path, files={"slopjudge.yaml": f"hook_timeout: {TIMEOUT}\n"})
    folder = ws / "rules" / "careful"
    folder.mkdir()
    (folder / "ask.md.j2").write_text("Is this change careful?\n{{ change }}\n")
    (folder / "rule.yaml").write_text(
        "description: changes are careful\non: [pre-tool, stop]\ntools: [Write]\n"
        "checks:\n  - id: judge\n    judge: ask.md.j2\n")
    from tests.failclosed.hooks_kit import git

    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "a judge rule")
    return ws


def never_answers(tmp_path: Path) -> dict[str, str]:
    mock = executable(tmp_path / "judge.sh", "#!/bin/sh\nexec sleep 300\n")
    return clean_env(SLOPJUDGE_JUDGE_MOCKS=json.dumps({"careful/judge": str(mock)}))


def keeps_failing(tmp_path: Path) -> dict[str, str]:
    """A runner whose harness fails after 5 s each time, in a way a retry could fix:
    5 s + the 3 s backoff + 5 s is past the timeout."""
    runner = executable(tmp_path / "runner.sh", "#!/bin/sh\ncat >/dev/null\nsleep 5\n"
                        "echo 'sr-agent: harness-failure: other' >&2\nexit 1\n")
    return clean_env(SLOPJUDGE_RUNNER=str(runner))


def timed(point: str, ws: Path, payload: dict[str, object], env: dict[str, str]
          ) -> tuple[int, object, str, float]:
    began = time.monotonic()
    rc, out, err = hook(point, ws, payload, env=env, process=True, timeout=120)
    return rc, out, err, time.monotonic() - began


@pytest.mark.parametrize("judge", [never_answers, keeps_failing])
def test_a_pre_tool_call_blocks_before_the_installed_timeout(ws: Path, tmp_path: Path,
                                                             judge: object) -> None:
    env = judge(tmp_path)  # type: ignore[operator]
    call = pre_tool(ws, "Write", {"file_path": str(ws / "b.txt"), "content": "x\n"})
    rc, out, err, took = timed("pre-tool", ws, call, env)
    assert (rc, out) == (2, None), err
    assert f"did not decide within 8 s, 2 s before the {TIMEOUT} s timeout" in err, err
    assert "so this call is blocked" in err
    assert took < TIMEOUT, took


@pytest.mark.parametrize("judge", [never_answers, keeps_failing])
def test_a_stop_blocks_before_the_installed_timeout_then_lets_the_turn_end(
        ws: Path, tmp_path: Path, judge: object) -> None:
    env = judge(tmp_path)  # type: ignore[operator]
    hook("start", ws, start(ws), env=env, process=True)
    (ws / "b.txt").write_text("x\n")
    rc, out, err, took = timed("stop", ws, stop(ws), env=env)
    assert (rc, out) == (2, None), err
    assert "hook stop did not decide within 8 s" in err and "so this call is blocked" in err
    assert took < TIMEOUT, took
    # Blocked once for it: at the retry the turn ends, saying the block stands.
    rc, out, err, took = timed("stop", ws, stop(ws, stop_hook_active=True), env=env)
    assert rc == 0 and "the block stands" in out["systemMessage"], (rc, out, err)  # type: ignore[index]
    assert took < TIMEOUT, took


def test_the_deadline_follows_the_timeout_install_writes(tmp_path: Path) -> None:
    """Each hook gives its answer before the timeout `slopjudge install` writes for it, in
    the file it writes, for every agent (past that timeout the agent lets the call run)."""
    import json
    import subprocess
    import sys

    from slopjudge import hooks
    from slopjudge.harnesses.registry import HARNESSES
    from slopjudge.loading.config import Settings

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name, harness in HARNESSES.items():
        subprocess.run([sys.executable, "-m", "slopjudge", "install", name, "--command", "sj",
                        "--workspace", str(tmp_path)], check=True, capture_output=True)
        written = json.loads(tmp_path.joinpath(*harness.settings_relpath).read_text())
        timeouts = {h["command"].split()[2]: h["timeout"] for groups in
                    written["hooks"].values() for g in groups for h in g["hooks"]}
        assert timeouts == hooks.DEFAULT_TIMEOUTS, name
        for point, timeout in timeouts.items():
            assert 0 < timeout - hooks.margin(timeout) < timeout, (name, point)
    assert Settings(workspace="/", rules_dir="/r",
                    template_dirs=[]).hook_timeout == hooks.DEFAULT_TIMEOUTS["stop"]
