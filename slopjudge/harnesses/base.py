"""What the agents share: the four hooks, and answers in Claude Code's shape
(Codex reads the same format and differs only where its module says)."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the PreToolUse fast path imports this module
if TYPE_CHECKING:
    from typing import Any

# (event, hook point, matcher, timeout in seconds). The agent lets a tool run when
# its hook times out, so the timeout outlasts the slowest judge (600 s by default).
Hook = tuple[str, str, "str | None", int]
HOOKS: tuple[Hook, ...] = (
    ("SessionStart", "start", None, 60),
    ("PreToolUse", "pre-tool", "*", 660),
    ("Stop", "stop", None, 660),
    ("SubagentStop", "subagent-stop", None, 660),
)


def pre_tool_answer(decision: str, reason: str) -> dict[str, Any]:
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                   "permissionDecision": decision,
                                   "permissionDecisionReason": reason}}


def stop_block(reason: str) -> dict[str, Any]:
    return {"decision": "block", "reason": reason}


def hook_command(command: str, point: str, harness: str) -> str:
    """The hook command for ``point``: Claude Code's is the plain one (what earlier
    installs wrote); another agent's names itself so its hooks answer in its form."""
    suffix = "" if harness == "claude" else f" --harness {harness}"
    return f"{command} hook {point}{suffix}"


def is_ours(handler: Any, point: str) -> bool:
    """A handler slopjudge installed for ``point``: its command runs a program named
    exactly ``slopjudge`` (the script, the wrapper install writes, ``python -m slopjudge``),
    so another tool whose name merely holds the word is never taken for ours."""
    import os
    import shlex

    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return False
    try:
        words = shlex.split(handler["command"])
    except ValueError:
        return False
    if len(words) >= 2 and words[-2] == "--harness":
        words = words[:-2]
    return (len(words) >= 3 and words[-2:] == ["hook", point]
            and any(os.path.basename(w) == "slopjudge" for w in words[:-2]))
