"""The Claude Code harness of slopjudge-agent: ``claude -p`` as a judge.

The judge runs isolated from the person's setup: ``--settings`` switches off
hooks, MCP servers and plugins (so a judge never fires slopjudge's own hooks),
``--permission-mode default`` makes every tool outside ``--allowed-tools`` a
refusal (``-p`` cannot prompt), and the only write granted is the scoped rule
``Edit(//<answer dir>/**)``, which in Claude Code also admits ``Write`` into
that folder. Read-only folders get the same rule as a denial.

This module also holds the model-set resolution both harnesses share.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping

PROMPT_STDIN_LIMIT = 64 * 1024  # a prompt over this many bytes goes on stdin

ISOLATION_SETTINGS = json.dumps(
    {"hooks": {}, "mcpServers": {}, "enabledPlugins": {}, "disableAllHooks": True},
    separators=(",", ":"),
)

SIZE_ALIASES = ("size-xs", "size-sm", "size-md", "size-lg", "size-xl", "size-xxl")

CLAUDE_MODELS = {
    "size-xs": "haiku",
    "size-sm": "haiku",
    "size-md": "sonnet",
    "size-lg": "opus",
    "size-xl": "opus",
    "size-xxl": "fable",
}
CLAUDE_PREFIXES = ("claude-", "haiku", "sonnet", "opus", "fable")


class ModelSetError(ValueError):
    """A model set names nothing the harness can run."""


def resolve_model_set(
    model_set: str,
    harness: str,
    aliases: Mapping[str, str],
    prefixes: tuple[str, ...],
    warnings: list[str] | None = None,
) -> str:
    """First entry of a comma list that suits the harness: an alias or a known name."""
    entries = [e.strip() for e in model_set.split(",") if e.strip()]
    if not entries:
        raise ModelSetError("empty model set (give --model size-md, a model name, or a comma list)")
    for i, entry in enumerate(entries):
        if entry in aliases:
            if warnings is not None and i + 1 < len(entries):
                rest = ", ".join(entries[i + 1:])
                warnings.append(f"model set entries after {entry} are never used: {rest}")
            return aliases[entry]
        if entry.lower().startswith(prefixes):
            return entry
    known = ", ".join(SIZE_ALIASES)
    names = ", ".join(p.rstrip("-") + ("-*" if p.endswith("-") else "") for p in prefixes)
    raise ModelSetError(
        f"no model in {model_set!r} suits harness {harness} (use {known}, or a name like {names})"
    )


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
    explicit = env.get("SLOPJUDGE_CLAUDE_BIN")
    if explicit:
        if os.sep in explicit:
            return explicit if os.path.isfile(explicit) and os.access(explicit, os.X_OK) else None
        return shutil.which(explicit, path=env.get("PATH"))
    if env.get("CLAUDECODE") or env.get("CLAUDE_CODE_ENTRYPOINT"):
        execpath = env.get("CLAUDE_CODE_EXECPATH")
        if execpath and os.path.isfile(execpath) and os.access(execpath, os.X_OK):
            return execpath
    return shutil.which("claude", path=env.get("PATH"))


class ClaudeHarness:
    """Builds the ``claude -p`` command for one judge attempt."""

    name = "claude"
    missing_message = (
        "claude not found on PATH (install @anthropic-ai/claude-code or set SLOPJUDGE_CLAUDE_BIN)"
    )

    def __init__(self, binary: str = "claude") -> None:
        self.binary = binary

    def resolve_model(self, model_set: str, warnings: list[str] | None = None) -> str:
        return resolve_model_set(model_set, self.name, CLAUDE_MODELS, CLAUDE_PREFIXES, warnings)

    def check_tools(self, allowed_tools: list[str], disallowed_tools: list[str]) -> None:
        """Claude Code takes every rule as is."""

    def argv(
        self,
        *,
        model: str,
        prompt: str,
        allowed_tools: list[str],
        disallowed_tools: list[str],
        writable_dirs: list[str],
        readonly_dirs: list[str],
    ) -> tuple[list[str], bytes]:
        """The command and its stdin. ``writable_dirs[0]`` is the answer folder."""
        argv = [
            self.binary, "-p", "--model", model,
            "--settings", ISOLATION_SETTINGS,
            "--permission-mode", "default",
        ]
        dirs = list(dict.fromkeys([*writable_dirs, *readonly_dirs]))
        if dirs:
            argv += ["--add-dir", *dirs]
        allow = list(dict.fromkeys([*allowed_tools, *_edit_rules(writable_dirs)]))
        if allow:
            argv += ["--allowed-tools", *allow]
        deny = list(dict.fromkeys([*_edit_rules(readonly_dirs), *disallowed_tools]))
        if deny:
            argv += ["--disallowed-tools", *deny]
        data = prompt.encode("utf-8")
        if len(data) > PROMPT_STDIN_LIMIT:
            return argv, data
        return [*argv, "--", prompt], b""
