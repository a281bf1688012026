"""Claude Code: hooks in ``.claude/settings.json``, answers as its hook protocol
documents them, ``claude -p`` as a judge.

The judge runs isolated from the person's setup (docs/judges.md): ``--settings``
switches off hooks, MCP servers and plugins (so a judge never fires slopjudge's own
hooks), ``--permission-mode default`` refuses every tool outside ``--allowed-tools``,
and the one write granted is ``Edit(//<answer dir>/**)``, which in Claude Code also
admits ``Write`` there. Read-only folders get the same rule as a denial.
"""

from __future__ import annotations

import os

from slopjudge.harnesses import base

TYPE_CHECKING = False  # not typing's: the PreToolUse fast path imports this module
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from slopjudge.hookspec import Harness, JudgeAttempt

# JSON, written out: the fast path imports this module and never json.
ISOLATION_SETTINGS = '{"hooks":{},"mcpServers":{},"enabledPlugins":{},"disableAllHooks":true}'

CLAUDE_MODELS = {
    "size-xs": "haiku",
    "size-sm": "haiku",
    "size-md": "sonnet",
    "size-lg": "opus",
    "size-xl": "opus",
    "size-xxl": "fable",
}
CLAUDE_PREFIXES = ("claude-", "haiku", "sonnet", "opus", "fable")


class ClaudeCode(base.Agent):
    name: str = "claude"
    settings_relpath: tuple[str, ...] = (".claude", "settings.json")
    # Claude Code exports the project root to every hook.
    root: str = "$CLAUDE_PROJECT_DIR"

    def judge(self, env: Mapping[str, str]) -> tuple[Harness, bool]:
        found = find_claude(env)
        binary = found or env.get("SLOPJUDGE_CLAUDE_BIN") or "claude"
        return ClaudeHarness(binary), found is not None


CLAUDE = ClaudeCode()


def _edit_rules(dirs: list[str]) -> list[str]:
    """``Edit(//abs/**)`` for each dir, given and symlink-resolved, without repeats."""
    rules: list[str] = []
    for d in dirs:
        for p in (os.path.abspath(d), os.path.realpath(d)):
            rule = f"Edit(/{p.rstrip('/') or ''}/**)"
            if rule not in rules:
                rules.append(rule)
    return rules


def find_claude(env: Mapping[str, str]) -> str | None:
    """The claude binary: SLOPJUDGE_CLAUDE_BIN, the running Claude Code's, or PATH."""
    import shutil

    if env.get("SLOPJUDGE_CLAUDE_BIN"):
        return base.explicit_binary(env, "SLOPJUDGE_CLAUDE_BIN")
    if env.get("CLAUDECODE") or env.get("CLAUDE_CODE_ENTRYPOINT"):
        execpath = env.get("CLAUDE_CODE_EXECPATH")
        if execpath and os.path.isfile(execpath) and os.access(execpath, os.X_OK):
            return execpath
    return shutil.which("claude", path=env.get("PATH"))


class ClaudeHarness(base.CommandHarness):
    """Builds the ``claude -p`` command for one judge attempt."""

    name = "claude"
    models = CLAUDE_MODELS
    prefixes = CLAUDE_PREFIXES
    missing_message = (
        "claude not found on PATH (install @anthropic-ai/claude-code or set SLOPJUDGE_CLAUDE_BIN)"
    )

    def __init__(self, binary: str = "claude") -> None:
        super().__init__(binary)

    def check_tools(self, allowed_tools: list[str], disallowed_tools: list[str]) -> None:
        """Claude Code takes every rule as is."""

    def argv(self, attempt: JudgeAttempt) -> tuple[list[str], bytes]:
        """The command and its stdin. ``writable_dirs[0]`` is the answer folder."""
        argv = [
            self.binary, "-p", "--model", attempt.model,
            "--settings", ISOLATION_SETTINGS,
            "--permission-mode", "default",
            # The result object carries the usage and cost; the answer still
            # comes through the answer file and the verifier.
            "--output-format", "json",
        ]
        writable, readonly = attempt.writable_dirs, attempt.readonly_dirs
        dirs = list(dict.fromkeys([*writable, *readonly]))
        if dirs:
            argv += ["--add-dir", *dirs]
        allow = list(dict.fromkeys([*attempt.allowed_tools, *_edit_rules(writable)]))
        if allow:
            argv += ["--allowed-tools", *allow]
        deny = list(dict.fromkeys([*_edit_rules(readonly), *attempt.disallowed_tools]))
        if deny:
            argv += ["--disallowed-tools", *deny]
        data = attempt.prompt.encode("utf-8")
        if len(data) > base.PROMPT_STDIN_LIMIT:
            return argv, data
        return [*argv, "--", attempt.prompt], b""

    def parse_output(self, stdout: bytes) -> tuple[bytes, dict[str, Any] | None]:
        """The reply text and the usage from ``--output-format json``'s result object.

        Output that is not that object (an older CLI) is the reply itself, with no usage.
        """
        from slopjudge.jsonobject import parse_json_object
        from slopjudge.usage import from_claude_result

        obj = parse_json_object(stdout.decode("utf-8", "replace"))
        if obj is not None and obj.get("type") == "result":
            result = obj.get("result")
            reply = result.encode("utf-8") if isinstance(result, str) else b""
            return reply, from_claude_result(obj)
        return stdout, None
