"""What the agents share: the four hooks, answers in Claude Code's shape (another agent's
module says where it differs), and the judge side's model sets (a comma list of size
aliases, which each harness maps to its models, and model names).
"""

from __future__ import annotations

import os

from slopjudge.model import SIZE_ALIASES

TYPE_CHECKING = False  # not typing's: the PreToolUse fast path imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

PROMPT_STDIN_LIMIT = 64 * 1024  # a judge prompt over this many bytes goes on stdin

# (event, hook point, matcher, timeout in seconds). The agent lets a tool run when
# its hook times out, so the timeout outlasts the slowest judge (600 s by default).
Hook = tuple[str, str, "str | None", int]
HOOKS: tuple[Hook, ...] = (
    ("SessionStart", "start", None, 60),
    ("PreToolUse", "pre-tool", "*", 660),
    ("Stop", "stop", None, 660),
    ("SubagentStop", "subagent-stop", None, 660),
)


def timed(hooks: tuple[Hook, ...], hook_timeout: int) -> tuple[Hook, ...]:
    """``hooks`` with the settings' ``hook_timeout`` for every point but start: each hook's
    deadline follows that setting, so the agent must give it as long."""
    return tuple((e, p, m, t if p == "start" else hook_timeout) for e, p, m, t in hooks)


class Agent:
    """One coding agent: its hooks (``registry.AgentHarness``) and, as a judge
    (``hookspec.Harness``), the one binary it runs and its model sets."""

    name: str
    hooks: tuple[Hook, ...] = HOOKS
    models: Mapping[str, str]  # size alias -> model name
    prefixes: tuple[str, ...]  # model names this harness runs as given
    missing_message: str

    def __init__(self, binary: str | None = None) -> None:
        self.binary = self.name if binary is None else binary

    def read_payload(self, point: str, payload: dict[str, Any]) -> dict[str, Any]:
        return payload  # the hooks read Claude Code's shape

    def pre_tool_answer(self, decision: str, reason: str) -> dict[str, Any]:
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "permissionDecision": decision,
                                       "permissionDecisionReason": reason}}

    def stop_block(self, reason: str) -> dict[str, Any]:
        return {"decision": "block", "reason": reason}

    def start_answer(self, notice: str | None, context: str | None) -> dict[str, Any]:
        answer: dict[str, Any] = {} if notice is None else {"systemMessage": notice}
        if context is not None:
            answer["hookSpecificOutput"] = {"hookEventName": "SessionStart",
                                            "additionalContext": context}
        return answer

    def end_notice(self, notice: str) -> tuple[dict[str, Any], bool]:
        # Claude Code shows a Stop hook's systemMessage to the person.
        return {"systemMessage": notice}, True

    def install_notes(self, workspace: str) -> list[str]:
        return []

    def trust_problems(self, workspace: str) -> list[str]:
        return []  # Claude Code runs the project's hooks once the folder is trusted

    def check_tools(self, allowed_tools: list[str], disallowed_tools: list[str]) -> None:
        """Every tool rule is taken as is, unless the harness says otherwise."""

    def resolve_model(self, model_set: str, warnings: list[str] | None = None) -> str:
        """First entry of a comma list that suits the harness: an alias or a known name."""
        entries = [e.strip() for e in model_set.split(",") if e.strip()]
        if not entries:
            raise ValueError(
                "empty model set (give --model size-md, a model name, or a comma list)")
        for i, entry in enumerate(entries):
            if entry in self.models:
                if warnings is not None and (rest := ", ".join(entries[i + 1:])):
                    warnings.append(f"model set entries after {entry} are never used: {rest}")
                return self.models[entry]
            if entry.lower().startswith(self.prefixes):
                return entry
        names = ", ".join(p + "*" if p.endswith("-") else p for p in self.prefixes)
        raise ValueError(f"no model in {model_set!r} suits harness {self.name} "
                         f"(use {', '.join(SIZE_ALIASES)}, or a name like {names})")

    def override_models(self, overrides: Mapping[str, str]) -> None:
        """Settings' ``model_aliases`` for this harness: alias -> model name."""
        self.models = {**self.models, **overrides}


def hook_command(command: str, point: str, harness: str) -> str:
    """The hook command for ``point``; another agent's names it, to be answered in its form."""
    return f"{command} hook {point}" + ("" if harness == "claude" else f" --harness {harness}")


def is_ours(handler: Any, point: str) -> bool:
    """A handler slopjudge installed for ``point``: its command runs a program named exactly
    ``slopjudge`` (not another tool whose name merely holds the word)."""
    import shlex

    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return False
    try:
        words = shlex.split(handler["command"])
    except ValueError:
        return False
    if len(words) >= 2 and words[-2] == "--harness":
        words = words[:-2]
    return words[-2:] == ["hook", point] and any(
        os.path.basename(w) == "slopjudge" for w in words[:-2])  # some word before them


def dig(data: Any, *keys: str) -> Any:
    """``data[k1][k2]...``, None where a level is missing or not a mapping."""
    for k in keys:
        data = data.get(k) if isinstance(data, dict) else None
    return data


def alias_overrides(raw: str | None, harness: str) -> dict[str, str]:
    """This harness's part of ``SLOPJUDGE_MODEL_ALIASES``
    (``{"claude": {"size-sm": "claude-haiku-4-5"}, ...}``); ValueError when malformed."""
    import json

    if not raw or not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"SLOPJUDGE_MODEL_ALIASES is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError("SLOPJUDGE_MODEL_ALIASES must map harness names to {alias: model}")
    mine = data.get(harness) or {}
    if not isinstance(mine, dict):
        raise ValueError(f"SLOPJUDGE_MODEL_ALIASES[{harness!r}] must map size aliases to models")
    for alias, model in mine.items():
        if alias not in SIZE_ALIASES:
            raise ValueError(f"SLOPJUDGE_MODEL_ALIASES: {alias!r} is not one of "
                             + ", ".join(SIZE_ALIASES))
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"SLOPJUDGE_MODEL_ALIASES: {harness}.{alias} must name a model")
    return {alias: model.strip() for alias, model in mine.items()}
