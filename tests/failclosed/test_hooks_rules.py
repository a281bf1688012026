"""Fail-closed contract, rules that do not load: a broken rule blocks every tool call it
could concern at pre-tool (naming the file for a person to fix), a file whose events cannot
be read counts for every event, and at stop a broken rule blocks once, addressed to the
person, then lets the turn end saying the block stands."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.failclosed.hooks_kit import (
    RULE_FILE,
    block_reason,
    deny_reason,
    git,
    hook,
    pre_tool,
    start,
    stop,
)


def write(ws: Path, rel: str, content: str = "x\n") -> dict[str, object]:
    return pre_tool(ws, "Write", {"file_path": str(ws / rel), "content": content})


def bash(ws: Path, command: str) -> dict[str, object]:
    return pre_tool(ws, "Bash", {"command": command})


def test_the_only_pre_tool_rule_with_a_typo_blocks_what_it_guards(ws: Path) -> None:
    rule = ws / RULE_FILE
    rule.write_text(rule.read_text().replace("checks:", "checkz:"))
    reason = deny_reason(hook("pre-tool", ws, write(ws, RULE_FILE))[1])
    assert reason.startswith("slopjudge cannot enforce 1 rule file that could concern this "
                             "Write, because it does not load:")
    assert f"- {RULE_FILE} does not load: {RULE_FILE}:" in reason
    assert "A person must fix the rule file: agents may not edit rules" in reason
    assert "slopjudge could not decide on this Write, so it is blocked" in reason
    # Every call its `tools` could concern: any Write, and Bash ...
    assert "protect-rules" in deny_reason(hook("pre-tool", ws, write(ws, "fine.txt"))[1])
    assert "protect-rules" in deny_reason(hook("pre-tool", ws, bash(ws, "ls"))[1])
    # ... but not a tool it does not list.
    read = pre_tool(ws, "Read", {"file_path": str(ws / "a.txt")})
    assert hook("pre-tool", ws, read) == (0, None, "")


def test_a_rule_pack_without_run_bits_still_guards_the_rules(ws: Path) -> None:
    # What a wheel install leaves: the scripts lose their run bits. Python scripts
    # still run; a rule whose script cannot run does not load, and blocks.
    for script in (ws / "rules").rglob("*.py"):
        script.chmod(0o644)
    assert RULE_FILE in deny_reason(hook("pre-tool", ws, write(ws, RULE_FILE))[1])
    folder = ws / "rules" / "shell-guard"
    folder.mkdir()
    (folder / "guard.sh").write_text("#!/bin/sh\nexit 0\n")  # no run bit
    (folder / "rule.yaml").write_text("description: x\non: [pre-tool]\ntools: [Bash]\n"
                                      "checks:\n  - script: guard.sh\n")
    reason = deny_reason(hook("pre-tool", ws, bash(ws, "ls"))[1])
    assert "rules/shell-guard/rule.yaml does not load" in reason and "not executable" in reason


def test_a_file_that_does_not_parse_counts_for_every_event(ws: Path) -> None:
    (ws / "rules" / "broken.yaml").write_text("description: [unclosed\non: [stop]\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "a person's broken rule")  # else the backstop holds the stop
    for data in (bash(ws, "ls"), pre_tool(ws, "Read", {"file_path": str(ws / "a.txt")}),
                 pre_tool(ws, "mcp__github__create_issue", {"title": "t"})):
        reason = deny_reason(hook("pre-tool", ws, data)[1])
        assert "- rules/broken.yaml does not load: rules/broken.yaml:" in reason
    reason = block_reason(hook("stop", ws, stop(ws))[1])
    assert "- rules/broken.yaml does not load: rules/broken.yaml:" in reason


def test_an_on_that_cannot_be_read_counts_for_every_event(ws: Path) -> None:
    folder = ws / "rules" / "typo-on"
    folder.mkdir()
    (folder / "rule.yaml").write_text(
        "description: x\non: [pre-tol]\ntools: [Bash]\nchecks:\n  - script: \"true\"\n")
    assert "rules/typo-on/rule.yaml" in deny_reason(hook("pre-tool", ws, bash(ws, "ls"))[1])
    # `tools` read fine, so only Bash is concerned.
    assert hook("pre-tool", ws, pre_tool(ws, "Read", {"file_path": str(ws / "a.txt")}))[:2] == (
        0, None)
    assert "rules/typo-on/rule.yaml" in block_reason(hook("stop", ws, stop(ws))[1])


def test_a_broken_rule_that_cannot_concern_the_call_or_the_stop_leaves_them_be(
        ws: Path) -> None:
    folder = ws / "rules" / "ci-only"
    folder.mkdir()
    (folder / "rule.yaml").write_text(
        "description: x\non: [ci]\nchecks:\n  - script: missing.sh\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "a person's broken rule")  # else the backstop holds the stop
    hook("start", ws, start(ws))
    assert hook("pre-tool", ws, bash(ws, "ls")) == (0, None, "")
    assert hook("stop", ws, stop(ws)) == (0, None, "")
    # Start still lists it: it is not in force.
    out = hook("start", ws, start(ws))[1]
    assert "rules/ci-only/rule.yaml does not load" in out["hookSpecificOutput"][
        "additionalContext"]


def test_no_rules_folder_enforces_nothing_and_start_says_so(ws: Path) -> None:
    import shutil

    shutil.rmtree(ws / "rules")
    out = hook("start", ws, start(ws))[1]
    assert "rules folder not found" in out["hookSpecificOutput"]["additionalContext"]
    assert hook("pre-tool", ws, write(ws, "n.txt", "FORBIDDEN\n"))[:2] == (0, None)
    assert hook("stop", ws, stop(ws))[:2] == (0, None)


@pytest.mark.parametrize("kind", ["stop", "subagent-stop"])
def test_broken_rules_at_stop_are_for_a_person_and_block_once(ws: Path, kind: str) -> None:
    (ws / "rules" / "broken.yaml").write_text(
        "description: x\non: [stop, subagent-stop]\nchecks: []\n")
    hook("start", ws, start(ws))  # a person's broken rule, there before the session
    reason = block_reason(hook(kind, ws, stop(ws, kind))[1])
    assert reason.startswith("slopjudge could not check this session's changes, so the stop "
                             "is blocked:\n- rules/broken.yaml does not load: rules/broken.yaml:")
    assert "A person must fix the rule file: agents may not edit rules" in reason
    assert "you may not edit rules" in reason
    assert "Fix each of these in the work tree" not in reason
    # The retry lets the turn end: the agent cannot fix it, so no loop to the block cap.
    rc, out, err = hook(kind, ws, stop(ws, kind, stop_hook_active=True))
    assert rc == 0 and "decision" not in out
    assert out["systemMessage"].startswith("slopjudge: letting the turn end; the block stands, "
                                           "and a person must act on it:")
    assert "rules/broken.yaml does not load" in out["systemMessage"]
    assert "the block stands" in err
    # The next turn blocks once again: the block stands until a person fixes it.
    assert block_reason(hook(kind, ws, stop(ws, kind))[1])


def test_refusals_with_a_broken_rule_keep_the_agent_working_up_to_the_cap(ws: Path) -> None:
    (ws / "slopjudge.yaml").write_text("stop_block_cap: 3\n")
    (ws / "rules" / "broken.yaml").write_text("description: x\nchecks: []\n")
    hook("start", ws, start(ws))
    (ws / "b.txt").write_text("FORBIDDEN\n")
    reason = block_reason(hook("stop", ws, stop(ws))[1])
    first, _, second = reason.partition("\n\n")
    assert first.startswith("slopjudge: the changes in this session do not pass these checks")
    assert "b.txt:1: FORBIDDEN marker" in first and "Fix each of these" in first
    assert second.startswith("slopjudge could not decide on these, so they block the stop too:")
    assert "rules/broken.yaml does not load" in second
    retry = stop(ws, stop_hook_active=True)
    assert block_reason(hook("stop", ws, retry)[1])  # a refusal the agent can fix: keep going
    out = hook("stop", ws, retry)[1]
    assert out["systemMessage"].startswith("slopjudge: letting the turn end after 3 refusals")
    # Once the agent fixed its part, only the broken rule is left: one block, then the end.
    (ws / "b.txt").write_text("fine\n")
    assert "Fix each of these" not in block_reason(hook("stop", ws, stop(ws))[1])
    assert "systemMessage" in hook("stop", ws, retry)[1]


def test_start_says_a_person_must_fix_broken_rules(ws: Path) -> None:
    rule = ws / RULE_FILE
    rule.write_text(rule.read_text().replace("checks:", "checkz:"))
    rc, out, err = hook("start", ws, start(ws))
    text = out["hookSpecificOutput"]["additionalContext"]
    assert rc == 0 and text.startswith(
        "slopjudge load check: these rules are NOT in force until fixed:")
    assert f"- {RULE_FILE} does not load" in text
    assert "A person must fix these rule files" in text and "agents may not edit rules" in text
    assert f"{RULE_FILE} does not load" in err
