"""Claude Code: hooks in ``.claude/settings.json``, answers as its hook protocol
documents them, ``claude -p`` as a judge."""

from __future__ import annotations

from slopjudge.harnesses import base

TYPE_CHECKING = False  # not typing's: the PreToolUse fast path imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from slopjudge.hookspec import Harness


class ClaudeCode:
    name: str = "claude"
    settings_relpath: tuple[str, ...] = (".claude", "settings.json")
    hooks: tuple[base.Hook, ...] = base.HOOKS
    # Claude Code exports the project root to every hook.
    root: str = "$CLAUDE_PROJECT_DIR"

    def read_payload(self, point: str, payload: dict[str, Any]) -> dict[str, Any]:
        return payload  # the hooks read Claude Code's shape

    def pre_tool_answer(self, decision: str, reason: str) -> dict[str, Any]:
        return base.pre_tool_answer(decision, reason)

    def stop_block(self, reason: str) -> dict[str, Any]:
        return base.stop_block(reason)

    def end_notice(self, notice: str) -> tuple[dict[str, Any], bool]:
        # Claude Code shows a Stop hook's systemMessage to the person.
        return {"systemMessage": notice}, True

    def install_notes(self, workspace: str) -> list[str]:
        return []

    def trust_problems(self, workspace: str) -> list[str]:
        return []  # Claude Code runs the project's hooks once the folder is trusted

    def judge(self, env: Mapping[str, str]) -> tuple[Harness, bool]:
        from slopjudge.judging.runner.harness_claude import claude_harness

        return claude_harness(env)


CLAUDE = ClaudeCode()
