"""Claude Code: hooks in ``.claude/settings.json``, answers as its hook protocol
documents them, ``claude -p`` as a judge, isolated from the person's setup as
docs/judges.md says (hooks, MCP servers and plugins off, no tool outside
``--allowed-tools``; ``Edit(//<answer dir>/**)`` admits ``Write`` there too).
"""

from __future__ import annotations

import os

from slopjudge.fsutil import which
from slopjudge.harnesses import base

TYPE_CHECKING = False  # not typing's: the PreToolUse fast path imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from slopjudge.hookspec import Harness, JudgeAttempt

# JSON, written out: the fast path imports this module and never json.
ISOLATION_SETTINGS = '{"hooks":{},"mcpServers":{},"enabledPlugins":{},"disableAllHooks":true}'


class ClaudeCode(base.Agent):
    name: str = "claude"
    settings_relpath: tuple[str, ...] = (".claude", "settings.json")
    # Claude Code exports the project root to every hook.
    root: str = "$CLAUDE_PROJECT_DIR"
    models = {
        "size-xs": "haiku",
        "size-sm": "haiku",
        "size-md": "sonnet",
        "size-lg": "opus",
        "size-xl": "opus",
        "size-xxl": "fable",
    }
    prefixes = ("claude-", "haiku", "sonnet", "opus", "fable")
    missing_message = (
        "claude not found on PATH (install @anthropic-ai/claude-code or set SLOPJUDGE_CLAUDE_BIN)"
    )

    def judge(self, env: Mapping[str, str]) -> tuple[Harness, bool]:
        """The claude binary: SLOPJUDGE_CLAUDE_BIN, the running Claude Code's, or PATH."""
        named, execpath = env.get("SLOPJUDGE_CLAUDE_BIN"), env.get("CLAUDE_CODE_EXECPATH") or ""
        running = (not named and (env.get("CLAUDECODE") or env.get("CLAUDE_CODE_ENTRYPOINT"))
                   and os.path.isfile(execpath) and os.access(execpath, os.X_OK))
        found = execpath if running else which(named or "claude", env.get("PATH"))
        return ClaudeCode(found or named or "claude"), found is not None

    def argv(self, attempt: JudgeAttempt) -> tuple[list[str], bytes]:
        argv = [
            self.binary, "-p", "--model", attempt.model,
            "--settings", ISOLATION_SETTINGS,
            "--permission-mode", "default",
            # The result object carries the usage and cost; the answer still
            # comes through the answer file and the verifier.
            "--output-format", "json",
        ]
        writable, readonly = attempt.writable_dirs, attempt.readonly_dirs
        for flag, values in (
            ("--add-dir", [*writable, *readonly]),
            ("--allowed-tools", [*attempt.allowed_tools, *_edit_rules(writable)]),
            ("--disallowed-tools", [*_edit_rules(readonly), *attempt.disallowed_tools]),
        ):
            if values:
                argv += [flag, *dict.fromkeys(values)]
        data = attempt.prompt.encode("utf-8")
        if len(data) > base.PROMPT_STDIN_LIMIT:
            return argv, data
        return [*argv, "--", attempt.prompt], b""

    def parse_output(self, stdout: bytes) -> tuple[bytes, dict[str, Any] | None]:
        """The reply text and the usage from ``--output-format json``'s result object;
        output that is not that object (an older CLI) is the reply itself, with no usage."""
        from slopjudge.jsonobject import parse_json_object
        from slopjudge.usage import from_claude_result

        obj = parse_json_object(stdout.decode("utf-8", "replace"))
        if obj is not None and obj.get("type") == "result":
            result = obj.get("result")
            reply = result.encode("utf-8") if isinstance(result, str) else b""
            return reply, from_claude_result(obj)
        return stdout, None


CLAUDE = ClaudeCode()


def _edit_rules(dirs: list[str]) -> list[str]:
    """``Edit(//abs/**)`` for each dir, given and symlink-resolved (the caller drops repeats)."""
    return [f"Edit(/{p.rstrip('/')}/**)"
            for d in dirs for p in (os.path.abspath(d), os.path.realpath(d))]
