"""The agents' registry and the interface it holds each entry to (the package's
description says what each part is for)."""

from __future__ import annotations

from slopjudge.harnesses.base import HOOKS as HOOKS
from slopjudge.harnesses.base import Hook as Hook
from slopjudge.harnesses.claude import CLAUDE

TYPE_CHECKING = False  # not typing's: the PreToolUse fast path imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Protocol

    from slopjudge.hookspec import Harness
else:
    Protocol = object


class AgentHarness(Protocol):
    name: str
    settings_relpath: tuple[str, ...]  # the hooks file under the project root
    hooks: tuple[Hook, ...]
    # How a hook command names the project root (the wrapper's path is relative to it).
    root: str

    def read_payload(self, point: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The payload as the hooks read it (Claude Code's shape)."""

    def pre_tool_answer(self, decision: str, reason: str) -> dict[str, Any]:
        """The PreToolUse answer for ``decision`` (``deny`` or ``ask``) and its reason."""

    def stop_block(self, reason: str) -> dict[str, Any]:
        """The Stop answer that keeps the agent working, reading ``reason``."""

    def start_answer(self, notice: str | None, context: str | None) -> dict[str, Any]:
        """The SessionStart answer: ``notice`` for the person, ``context`` for the agent
        (None: not said)."""

    def end_notice(self, notice: str) -> tuple[dict[str, Any], bool]:
        """The Stop answer ending a blocked turn with ``notice`` for the person, and whether
        it ends it (False: one more block asks the agent to relay the notice)."""

    def install_notes(self, workspace: str) -> list[str]:
        """What to tell the person after ``slopjudge install`` (one line each)."""

    def trust_problems(self, workspace: str) -> list[str]:
        """Why the installed hooks would not run (empty: nothing known against them)."""

    def judge(self, env: Mapping[str, str]) -> tuple[Harness, bool]:
        """The judge harness for ``env``, and whether its binary was found."""


HARNESSES: dict[str, AgentHarness]  # made on first use, by the module's __getattr__


def __getattr__(attr: str) -> Any:
    if attr != "HARNESSES":
        raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
    # Here: a Claude Code hook that names no harness never loads Codex's module (about
    # 1.7 ms, 0.08x `python -c pass`, measured on a wheel install).
    from slopjudge.harnesses.codex import CODEX

    table: dict[str, AgentHarness] = {CLAUDE.name: CLAUDE, CODEX.name: CODEX}
    globals()["HARNESSES"] = table
    return table


def get(name: str | None) -> AgentHarness:
    """The harness named ``name`` (None: Claude Code); KeyError for an unknown name."""
    if name is None:
        return CLAUDE
    from slopjudge.harnesses.registry import HARNESSES  # the module's __getattr__ makes it

    return HARNESSES[name]
