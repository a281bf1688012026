"""Fail-closed contract, outcomes at the hooks: a check that could not decide blocks and is
worded for the person (never "fix your code"); a stop blocked only by such errors lets the
turn end after one block, saying the block stands; internal errors and SIGTERM/SIGINT block."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.failclosed.hooks_kit import (
    SESSION,
    block_reason,
    clean_env,
    deny_reason,
    executable,
    git,
    hook,
    one_line_block,
    pre_tool,
    start,
    stop,
)
from tests.helpers import kill_quietly, read_pids, wait_gone


def judge_rule(ws: Path, on: str = "[pre-tool, stop]") -> dict[str, str]:
    """A judge rule on Write whose runner fails as an outage does: no verdict at all."""
    folder = ws / "rules" / "careful"
    folder.mkdir()
    (folder / "ask.md.j2").write_text("Is this change careful?\n{{ change }}\n")
    tools = "tools: [Write]\n" if "pre-tool" in on else ""
    (folder / "rule.yaml").write_text(
        f"description: changes are careful\non: {on}\n{tools}"
        "checks:\n  - id: judge\n    judge: ask.md.j2\n")
    mock = ws.parent / "outage.sh"
    executable(mock, "#!/bin/sh\ncat >/dev/null\n"
                     "echo 'sr-agent: harness-failure: authentication' >&2\nexit 1\n")
    return clean_env(SLOPJUDGE_JUDGE_MOCKS=json.dumps({"careful/judge": str(mock)}))


def write(ws: Path, content: str) -> dict[str, object]:
    return pre_tool(ws, "Write", {"file_path": str(ws / "n.txt"), "content": content})


def test_pre_tool_with_only_errors_denies_saying_it_could_not_decide(ws: Path) -> None:
    env = judge_rule(ws)
    reason = deny_reason(hook("pre-tool", ws, write(ws, "fine\n"), env=env)[1])
    assert reason.startswith("careful: the judge could not run: ")
    assert "; this is not a finding in your change" in reason
    assert reason.splitlines()[-1] == (
        "slopjudge could not decide on this Write, so it is blocked. This is not a finding "
        "in your call: a person must fix the cause. Say so in your reply; do not try to get "
        "around the block.")
    assert "Change the call" not in reason and "slopjudge refused" not in reason


def test_pre_tool_with_a_refusal_and_an_error_says_which_is_which(ws: Path) -> None:
    env = judge_rule(ws)
    reason = deny_reason(hook("pre-tool", ws, write(ws, "FORBIDDEN\n"), env=env)[1])
    assert reason.startswith("no-forbidden: added lines contain FORBIDDEN")
    assert "careful: the judge could not run:" in reason
    assert "slopjudge refused this Write (1 rule). Change the call" in reason
    assert "slopjudge could not decide on this Write, so it is blocked" in reason


def test_stop_with_only_errors_blocks_once_for_the_person(ws: Path) -> None:
    env = judge_rule(ws, "[stop]")
    hook("start", ws, start(ws), env=env)
    (ws / "b.txt").write_text("fine\n")
    reason = block_reason(hook("stop", ws, stop(ws), env=env)[1])
    assert reason.startswith("slopjudge could not check this session's changes, so the stop is "
                             "blocked:\n- careful/judge: the judge could not run: ")
    assert "this is not a finding in your change" in reason
    assert "a person must fix the cause" in reason and "Fix each of these" not in reason
    rc, out, err = hook("stop", ws, stop(ws, stop_hook_active=True), env=env)
    assert rc == 0 and out["systemMessage"].startswith(
        "slopjudge: letting the turn end; the block stands, and a person must act on it:")
    assert "careful/judge: the judge could not run" in out["systemMessage"]
    assert "the block stands" in err
    # Every turn is judged again: the next one blocks once more.
    assert block_reason(hook("stop", ws, stop(ws), env=env)[1])


def test_stop_with_a_refusal_and_an_error_keeps_the_agent_on_its_part(ws: Path) -> None:
    env = judge_rule(ws, "[stop]")
    hook("start", ws, start(ws), env=env)
    (ws / "b.txt").write_text("FORBIDDEN\n")
    reason = block_reason(hook("stop", ws, stop(ws), env=env)[1])
    mine, _, theirs = reason.partition("\n\n")
    assert "b.txt:1: FORBIDDEN marker" in mine and "Fix each of these" in mine
    assert "careful/judge" not in mine
    assert theirs.startswith("slopjudge could not decide on these, so they block the stop too:")
    assert "careful/judge: the judge could not run" in theirs
    # A refusal is the agent's to fix: the retry is blocked again.
    assert block_reason(hook("stop", ws, stop(ws, stop_hook_active=True), env=env)[1])


def test_refusals_block_until_the_cap_then_the_turn_ends_saying_so(ws: Path) -> None:
    (ws / "slopjudge.yaml").write_text("stop_block_cap: 2\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "a person's settings")
    (ws / "b.txt").write_text("FORBIDDEN\n")
    reason = block_reason(hook("stop", ws, stop(ws))[1])
    assert "No session baseline was recorded, so this compares HEAD" in reason
    out = hook("stop", ws, stop(ws, stop_hook_active=True))[1]
    assert out["systemMessage"].startswith(
        "slopjudge: letting the turn end after 2 refusals in a row; the refusal still stands:")


def test_internal_errors_block_pre_tool_and_stop(ws: Path) -> None:
    (ws / "slopjudge.yaml").write_text("stop_block_cap: [unclosed\n")
    line = one_line_block(*hook("pre-tool", ws, pre_tool(ws, "Bash", {"command": "ls"})))
    assert line.startswith("slopjudge: pre-tool hook failed, so the tool call is blocked: "
                           "ConfigError: slopjudge.yaml:2:1: broken YAML")
    reason = block_reason(hook("stop", ws, stop(ws))[1])
    assert "slopjudge could not check this session's changes: ConfigError" in reason
    assert "a person must fix the cause" in reason
    out = hook("stop", ws, stop(ws, stop_hook_active=True))[1]
    assert out["systemMessage"].startswith("slopjudge: letting the turn end; the block stands")
    rc, out, err = hook("start", ws, start(ws))
    assert (rc, out) == (0, None) and err.startswith("slopjudge: session start check failed:")


# --- signals ---------------------------------------------------------------------------

def record_pids(pids: Path) -> str:
    """Shell lines that record the script's pid and its child's, each file renamed into place
    whole (a reader polling the folder never sees one created but not yet written)."""
    return "".join(f"echo {var} > {pids}/{name}.tmp && mv {pids}/{name}.tmp {pids}/{name}.pid\n"
                   for var, name in (("$!", "child-$$"), ("$$", "$$")))


def slow_rule(ws: Path, pids: Path) -> None:
    folder = ws / "rules" / "slow"
    folder.mkdir()
    executable(folder / "slow.sh", f"#!/bin/sh\ncat >/dev/null\nsleep 60 &\n{record_pids(pids)}"
                                   "exec sleep 60\n")
    (folder / "rule.yaml").write_text(
        "description: slow\non: [pre-tool, stop]\ntools: [Bash]\n"
        "checks:\n  - script: slow.sh\n    timeout: 120s\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "a person's rule")  # else the backstop holds the stop first
    (ws / "touched.txt").write_text("a change for the stop to judge\n")


def interrupt(point: str, ws: Path, data: dict[str, object], sig: int,
              pids: Path) -> tuple[int, str, str, list[int]]:
    proc = subprocess.Popen([sys.executable, "-m", "slopjudge", "hook", point], cwd=ws,
                            env=clean_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(data).encode())
    proc.stdin.close()
    proc.stdin = None  # sent: communicate() below only collects
    deadline = time.monotonic() + 30
    while len(started := read_pids(pids)) < 2:
        assert time.monotonic() < deadline, "the slow check never started"
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out.decode(), err.decode(), started


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_pre_tool_blocks_and_stops_its_checks(ws: Path, tmp_path: Path,
                                                          sig: int) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    slow_rule(ws, pids)
    rc, out, err, started = interrupt("pre-tool", ws, pre_tool(ws, "Bash", {"command": "ls"}),
                                      sig, pids)
    line = one_line_block(rc, out or None, err)
    assert line == (f"slopjudge: hook pre-tool stopped by {signal.Signals(sig).name}, "
                    "so this call is blocked")
    try:
        assert wait_gone(started) == []
    finally:
        kill_quietly(started)


def test_sigterm_mid_stop_blocks_and_stops_its_checks(ws: Path, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    slow_rule(ws, pids)
    rc, out, err, started = interrupt("stop", ws, stop(ws), signal.SIGTERM, pids)
    # Exit 2 blocks a stop too: the agent keeps working with the line as feedback.
    line = one_line_block(rc, out or None, err)
    assert line == "slopjudge: hook stop stopped by SIGTERM, so this call is blocked"
    try:
        assert wait_gone(started) == []
    finally:
        kill_quietly(started)


def test_a_signal_mid_start_stops_its_processes_and_never_blocks(ws: Path,
                                                               tmp_path: Path) -> None:
    # A git that hangs (as on a slow network file system), first on PATH.
    pids = tmp_path / "pids"
    pids.mkdir()
    fake = tmp_path / "bin"
    executable(fake / "git", f"#!/bin/sh\nsleep 60 &\n{record_pids(pids)}exec sleep 60\n")
    env = clean_env(PATH=f"{fake}:{os.environ['PATH']}")
    proc = subprocess.Popen([sys.executable, "-m", "slopjudge", "hook", "start"], cwd=ws,
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(start(ws)).encode())
    proc.stdin.close()
    proc.stdin = None
    deadline = time.monotonic() + 30
    while len(started := read_pids(pids)) < 2:
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert (proc.returncode, out) == (0, b"")
    assert err.decode() == "slopjudge: hook start stopped by SIGTERM\n"
    try:
        assert wait_gone(started) == []
    finally:
        kill_quietly(started)


@pytest.mark.parametrize("runner, cause", [
    ("auth", "judge unavailable: authentication"),
    ("missing", "judge could not start"),
])
def test_an_outage_is_never_blamed_on_the_change(ws: Path, tmp_path: Path, runner: str,
                                                 cause: str) -> None:
    # The real runner path (no mocks): an authentication failure, a runner not installed.
    judge_rule(ws)
    fake = tmp_path / "sr-agent"
    executable(fake, "#!/bin/sh\ncat >/dev/null\n"
                     "echo 'sr-agent: harness-failure: authentication' >&2\nexit 1\n")
    env = clean_env(SLOPJUDGE_RUNNER=str(fake) if runner == "auth" else str(tmp_path / "nope"))
    reason = deny_reason(hook("pre-tool", ws, write(ws, "fine\n"), env=env)[1])
    assert reason.startswith(f"careful: the judge could not run: {cause}")
    assert "this is not a finding in your change" in reason
    assert "slopjudge could not decide on this Write" in reason and "Change the call" not in reason
    hook("start", ws, start(ws), env=env)
    (ws / "b.txt").write_text("fine\n")
    reason = block_reason(hook("stop", ws, stop(ws), env=env)[1])
    assert f"- careful/judge: the judge could not run: {cause}" in reason
    assert "Fix each of these" not in reason


@pytest.mark.parametrize("stdout", ["/dev/full", "closed"])
def test_stop_that_cannot_write_its_block_exits_2(ws: Path, stdout: str) -> None:
    """A block Claude Code cannot read (stdout full or closed) is still a block: exit 2
    with the reason on stderr, never a traceback and an exit 1 (which lets the turn end)."""
    hook("start", ws, start(ws))
    (ws / "b.txt").write_text("FORBIDDEN\n")
    out = open(stdout, "w") if stdout != "closed" else None  # noqa: SIM115
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "slopjudge", "hook", "stop"],
            input=json.dumps(stop(ws)).encode(), cwd=ws, env=clean_env(), timeout=60,
            stdout=out, stderr=subprocess.PIPE,
            # a closed descriptor 1 in the hook, as `slopjudge hook stop >&-` gives it
            preexec_fn=(lambda: os.close(1)) if out is None else None)
    finally:
        if out is not None:
            out.close()
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    assert "the answer could not be written" in err
    assert "slopjudge: slopjudge" not in err  # one prefix: "slopjudge: could not check ..."


def codex_stop(ws: Path, **fields: object) -> tuple[int, object, str]:
    """``slopjudge hook stop --harness codex``, in this process."""
    from slopjudge.hooks import main_fast
    from tests.helpers import in_process

    rc, out, err = in_process(lambda: main_fast("stop", "codex"),
                              json.dumps(stop(ws, **fields)).encode(), cwd=ws, env=clean_env())
    return rc, json.loads(out) if out.strip() else None, err


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_a_relay_mark_written_in_the_workspace_ends_no_blocked_stop(ws: Path,
                                                                    harness: str) -> None:
    (ws / "b.txt").write_text("FORBIDDEN\n")
    run = (lambda **f: hook("stop", ws, stop(ws, **f))) if harness == "claude" else (
        lambda **f: codex_stop(ws, **f))
    assert block_reason(run()[1])
    # The state folder is the agent's to write (and git-ignored): a mark there is forged.
    (ws / ".slopjudge" / "state" / f"{SESSION}.stop-notice.count").write_text("1\n")
    assert "FORBIDDEN marker" in block_reason(run(stop_hook_active=True)[1])


def test_codex_ends_on_a_relayed_notice_but_not_past_a_protected_change(ws: Path) -> None:
    (ws / "slopjudge.yaml").write_text("stop_block_cap: 2\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "a person's settings")
    (ws / "b.txt").write_text("FORBIDDEN\n")
    assert block_reason(codex_stop(ws)[1])
    asked = block_reason(codex_stop(ws, stop_hook_active=True)[1])
    assert asked.startswith("slopjudge: letting the turn end after 2 refusals in a row")
    assert codex_stop(ws, stop_hook_active=True)[:2] == (0, None)
    # Asked again to relay, the agent changes a protected file instead: the stop blocks.
    assert block_reason(codex_stop(ws)[1])
    assert block_reason(codex_stop(ws, stop_hook_active=True)[1]).startswith("slopjudge: letting")
    (ws / "rules" / "no-forbidden" / "scan.py").write_text("#!/bin/sh\nexit 0\n")
    assert "rules/no-forbidden/scan.py" in block_reason(codex_stop(ws, stop_hook_active=True)[1])


@pytest.mark.parametrize("spelling", [[], ["--harness=claude"]])
def test_an_answer_stdout_cannot_encode_blocks_never_a_broken_allow(
        ws: Path, spelling: list[str]) -> None:
    # A stdout that cannot hold the reason (cp1252, an emoji in a path) must still block:
    # an escaped, invalid JSON answer at exit 0 would be read as plain text, an allow.
    (ws / "rules" / "grp").mkdir()
    (ws / "rules" / "grp" / "\N{ROCKET}.yaml").write_text("a: 1\n")
    proc = subprocess.run(
        [sys.executable, "-m", "slopjudge", "hook", "pre-tool", *spelling],
        input=json.dumps(write(ws, "x = 1\n")).encode(), cwd=ws, capture_output=True,
        env=clean_env(PYTHONIOENCODING="cp1252", CLAUDE_PROJECT_DIR=str(ws)), timeout=60)
    if proc.returncode != 2:
        answer = json.loads(proc.stdout.decode("cp1252"))
        assert answer["hookSpecificOutput"]["permissionDecision"] == "deny", answer
