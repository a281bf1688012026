"""Fail-closed contract, PreToolUse: tools slopjudge does not know by name (SPEC §10,
"Unknown tools"). A tool whose input names a file it writes (MCP file servers'
``write_file`` and ``edit_file``, any tool with a ``path``/``file_path`` and content) is
judged as the file tool it acts like; ``unknown_tools`` (default deny) decides a call that
names a path outside the workspace or a protected one. Shell rules naming ``Bash`` cover
every shell tool slopjudge accepts. The real ``slopjudge hook pre-tool`` process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.failclosed.hooks_kit import deny_reason, hook, make_ws, pre_tool
from tests.helpers import write_files


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    return make_ws(tmp_path)


def call(ws: Path, tool: str, tool_input: dict[str, Any]) -> tuple[int, Any, str]:
    return hook("pre-tool", ws, pre_tool(ws, tool, tool_input), process=True)


SHAPES = {  # tool, input for a file at PATH with the text TEXT
    "mcp-write": ("mcp__filesystem__write_file", lambda p, t: {"path": p, "content": t}),
    "mcp-edit": ("mcp__filesystem__edit_file", lambda p, t: {
        "path": p, "edits": [{"oldText": "hello", "newText": t.strip()}]}),
    "file_path-field": ("mcp__notes__save", lambda p, t: {"file_path": p, "content": t}),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_inside_the_workspace_the_call_is_judged_like_a_file_tool(ws: Path, shape: str) -> None:
    tool, make = SHAPES[shape]
    path = str(ws / "a.txt")  # "hello\nworld\n"
    reason = deny_reason(call(ws, tool, make(path, "FORBIDDEN\n"))[1])
    assert "no-forbidden:" in reason and "a.txt:1: FORBIDDEN marker" in reason, reason
    assert call(ws, tool, make(path, "fine\n"))[:2] == (0, None)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_outside_the_workspace_the_call_is_denied_by_default(ws: Path, tmp_path: Path,
                                                             shape: str) -> None:
    tool, make = SHAPES[shape]
    target = tmp_path / "home" / ".bashrc"
    write_files(target.parent, {".bashrc": "hello\n"})
    reason = deny_reason(call(ws, tool, make(str(target), "fine\n"))[1])
    assert f"does not know the tool {tool}, and it names {target}, outside the workspace" \
        in reason, reason
    assert "`unknown_tools: deny`" in reason


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_protected_path_is_denied(ws: Path, shape: str) -> None:
    tool, make = SHAPES[shape]
    write_files(ws, {".claude/settings.json": "hello\n"})
    reason = deny_reason(call(ws, tool, make(str(ws / ".claude" / "settings.json"), "{}\n"))[1])
    assert ".claude/settings.json, a protected path" in reason, reason


@pytest.mark.parametrize("policy", ["ask", "allow"])
def test_the_setting_decides_a_path_outside(ws: Path, tmp_path: Path, policy: str) -> None:
    (ws / "slopjudge.yaml").write_text(f"unknown_tools: {policy}\n")
    outside = str(tmp_path / "elsewhere.txt")
    rc, out, err = call(ws, "mcp__filesystem__move_file",
                        {"source": str(ws / "a.txt"), "destination": outside})
    if policy == "allow":
        assert (rc, out) == (0, None), err
    else:
        spec = out["hookSpecificOutput"]
        assert spec["permissionDecision"] == "ask" and outside in spec[
            "permissionDecisionReason"]


def test_an_unknown_setting_value_is_a_clear_error(ws: Path) -> None:
    (ws / "slopjudge.yaml").write_text("unknown_tools: maybe\n")
    rc, out, err = call(ws, "mcp__filesystem__write_file", {"path": "x", "content": "y"})
    assert rc == 2 and "slopjudge.yaml:1:" in err and "one of deny, ask, allow" in err, err


@pytest.mark.parametrize("tool", ["Bash", "shell", "local_shell", "exec_command"])
def test_shell_rules_cover_every_shell_tool(ws: Path, tool: str) -> None:
    folder = ws / "rules" / "no-curl"
    folder.mkdir()
    (folder / "rule.yaml").write_text(
        "description: no curl\non: [pre-tool]\ntools: ['Bash(curl *)']\n"
        "checks:\n  - script: refuse.sh\n")
    (folder / "refuse.sh").write_text("#!/bin/sh\necho 'no curl here'\nexit 1\n")
    (folder / "refuse.sh").chmod(0o755)
    command: Any = ["bash", "-lc", "curl example.invalid"] if tool != "Bash" \
        else "curl example.invalid"
    key = "cmd" if tool == "exec_command" else "command"
    reason = deny_reason(call(ws, tool, {key: command})[1])
    assert "no curl here" in reason, reason
