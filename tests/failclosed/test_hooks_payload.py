"""Fail-closed contract, hook payloads: what slopjudge cannot read blocks at pre-tool and
stop and is reported at start; what it does not use is ignored. Each case runs the real
``python -m slopjudge hook <point>`` in a real git repository."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.failclosed.hooks_kit import (
    SESSION,
    block_reason,
    clean_env,
    deny_reason,
    hook,
    make_ws,
    one_line_block,
    pre_tool,
    start,
    stop,
)

# One example of each class of payload slopjudge cannot read, and the words that name it.
UNREADABLE = {
    "empty": (b"", "stdin is empty"),
    "blank": (b" \n\t\n", "stdin is empty"),
    "truncated": (b'{"tool_name": "Write", "tool_input": {"file_path": "x', "not JSON"),
    "array": (b'[{"tool_name": "Write"}]', "a JSON array, not an object"),
    "string": (b'"Write"', "a JSON string, not an object"),
    "null": (b"null", "a JSON null, not an object"),
    "not utf-8": (b'{"tool_name": "Write", "x": "\xff\xfe"}', "not UTF-8 text"),
    "utf-16": ('{"tool_name": "Bash"}'.encode("utf-16"), "not UTF-8 text"),
    "nested too deep": (b"[" * 100_000 + b"]" * 100_000, "not JSON"),
}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_ws(tmp_path_factory.mktemp("payload"))


@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_pre_tool_blocks_a_payload_it_cannot_read(ws: Path, case: str) -> None:
    raw, why = UNREADABLE[case]
    line = one_line_block(*hook("pre-tool", ws, raw))
    assert line.startswith("slopjudge: could not read the PreToolUse payload (")
    assert why in line and "the tool call is blocked" in line


@pytest.mark.parametrize("tool_input, why", [
    ("FORBIDDEN", "`tool_input` of Write is string, not an object"),
    (["a", "b"], "`tool_input` of Write is array, not an object"),
    (None, "`tool_input` of Write is null, not an object"),
    ({"content": "x"}, "`tool_input.file_path` of Write is missing or not a string"),
    ({"file_path": 7, "content": "x"}, "`tool_input.file_path` of Write is missing"),
])
def test_pre_tool_blocks_a_tool_input_of_the_wrong_type(ws: Path, tool_input: object,
                                                        why: str) -> None:
    data = pre_tool(ws, "Write", {})
    data["tool_input"] = tool_input
    line = one_line_block(*hook("pre-tool", ws, data))
    assert why in line


def test_pre_tool_blocks_without_a_tool_name_or_a_bash_command(ws: Path) -> None:
    data = pre_tool(ws, "Bash", {"command": "ls"})
    del data["tool_name"]
    assert "`tool_name` is missing or not a string" in one_line_block(*hook("pre-tool", ws, data))
    data = pre_tool(ws, "Bash", {"command": {"sh": "rm -rf ."}})
    assert "`tool_input.command` of Bash" in one_line_block(*hook("pre-tool", ws, data))


def test_pre_tool_blocks_a_payload_over_the_size_limit(ws: Path) -> None:
    # 64 MiB is the limit: a Write carrying more than that is refused unread.
    content = "x" * (64 * 1024 * 1024)
    data = json.dumps(pre_tool(ws, "Write", {"file_path": str(ws / "big.txt"),
                                             "content": content}))
    line = one_line_block(*hook("pre-tool", ws, data.encode(), timeout=120))
    assert "larger than 64 MiB" in line


def test_unknown_fields_and_odd_types_of_unused_fields_are_ignored(ws: Path) -> None:
    data = pre_tool(ws, "Write", {"file_path": str(ws / "n.txt"), "content": "FORBIDDEN\n",
                                  "new_option": [1, {"x": None}]},
                    effort=["high"], cwd=7, session_id={"id": 1}, transcript_path=3.5,
                    permission_mode=None, brand_new={"nested": [True]})
    assert "n.txt:1: FORBIDDEN marker" in deny_reason(hook("pre-tool", ws, data)[1])
    data["tool_input"]["content"] = "fine\n"
    assert hook("pre-tool", ws, data) == (0, None, "")


def test_reentry_guard_answers_at_once_for_every_point(ws: Path) -> None:
    # Even an unreadable payload: a judge slopjudge launched is never judged by its hooks.
    for var in ("SLOPJUDGE_LAUNCHED_BY", "SLOPRAIL_LAUNCHED_BY"):
        for point in ("start", "pre-tool", "stop", "subagent-stop"):
            assert hook(point, ws, b"\xff not json", env=clean_env(**{var: "r/c"})) == (
                0, None, "")


@pytest.mark.parametrize("kind", ["stop", "subagent-stop"])
@pytest.mark.parametrize("case", ["empty", "truncated", "array", "not utf-8"])
def test_stop_blocks_a_payload_it_cannot_read_once_then_lets_the_turn_end(
        tmp_path: Path, kind: str, case: str) -> None:
    ws = make_ws(tmp_path)
    raw, why = UNREADABLE[case]
    rc, out, err = hook(kind, ws, raw)
    reason = block_reason(out)
    name = "Stop" if kind == "stop" else "SubagentStop"
    assert rc == 0 and reason.startswith(
        "slopjudge could not check this session's changes, so the stop is blocked:\n"
        f"- slopjudge could not read the {name} hook payload (")
    assert why in reason and "a person must fix the cause" in reason
    assert "Fix each of these" not in reason
    # It cannot tell a retry from a first stop, so the next stop lets the turn end,
    # telling the person the block stands; the one after that blocks again.
    rc, out, err = hook(kind, ws, raw)
    assert rc == 0 and "decision" not in out
    assert out["systemMessage"].startswith("slopjudge: letting the turn end; the block stands")
    assert why in out["systemMessage"] and "the block stands" in err
    assert block_reason(hook(kind, ws, raw)[1])


def test_stop_ignores_odd_types_of_fields_it_does_not_need(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    data = stop(ws, session_id=12, stop_hook_active="maybe", agent_id=[1], cwd=None,
                background_tasks="none", brand_new={"x": 1})
    assert hook("stop", ws, data) == (0, None, "")
    (ws / "b.txt").write_text("FORBIDDEN\n")
    assert "b.txt:1: FORBIDDEN marker" in block_reason(hook("stop", ws, data)[1])


def test_start_standalone_with_empty_stdin_is_the_load_check(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "slopjudge", "hook", "start"],
                          stdin=subprocess.DEVNULL, cwd=ws, env=clean_env(),
                          capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == ("slopjudge: 2 rules loaded. This only checked that they load: "
                           "no rule ran.\n")
    assert (ws / ".slopjudge" / "state" / "default.json").exists()


@pytest.mark.parametrize("case", ["truncated", "array", "not utf-8", "nested too deep"])
def test_start_reports_a_payload_it_cannot_read_and_never_blocks(tmp_path: Path,
                                                                 case: str) -> None:
    ws = make_ws(tmp_path)
    (ws / "rules" / "broken.yaml").write_text("description: [unclosed\n")
    raw, why = UNREADABLE[case]
    rc, out, err = hook("start", ws, raw)
    assert rc == 0
    assert err.startswith("slopjudge: could not read the SessionStart payload (") and why in err
    # The load check still ran and said what is not in force.
    assert "rules/broken.yaml does not load" in out["hookSpecificOutput"]["additionalContext"]
    assert (ws / ".slopjudge" / "state" / "default.json").exists()
    # A readable payload records the session's own baseline; odd types of fields
    # slopjudge does not need are ignored.
    assert hook("start", ws, start(ws, source=["x"], model={"id": 1}, extra=None))[0] == 0
    assert (ws / ".slopjudge" / "state" / f"{SESSION}.json").exists()


def test_with_stderr_closed_stdout_holds_only_the_answer(ws: Path) -> None:
    """A hook started with fd 2 closed: its notes must not land in stdout before the deny
    (`print(file=None)` writes stdout), which would make the answer unreadable."""
    payload = pre_tool(ws, "Edit", {"file_path": "a.txt", "old_string": "not there",
                                    "new_string": "FORBIDDEN\n"})
    proc = subprocess.run(["sh", "-c", f'exec "{sys.executable}" -m slopjudge hook pre-tool 2>&-'],
                          input=json.dumps(payload).encode(), cwd=ws, capture_output=True,
                          env=clean_env(), timeout=60)
    assert proc.returncode == 0, proc.stdout
    answer = json.loads(proc.stdout)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "deny", answer
