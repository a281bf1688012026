"""The Codex harness of slopjudge-agent: ``codex exec`` as a judge.

Codex enforces access with its OS sandbox rather than per-tool rules. The
judge runs with ``--sandbox workspace-write`` rooted (``-C``) at the private
answer folder: that folder is the one place it may write, because the answer
file must be written there. Everything else, the repository under judgement
included, is read-only to it; ``/tmp`` and ``$TMPDIR`` are excluded from the
writable set, and network access stays off. So the workspace is judged in a
read-only sandbox. User config and hooks are ignored (``--ignore-user-config
--disable hooks``) and the session is not saved (``--ephemeral``).

Another provider or endpoint: user config is ignored, so a provider in
``~/.codex/config.toml`` is not used. ``SLOPJUDGE_CODEX_BASE_URL`` (a Responses API
base URL, such as ``https://proxy.example/v1``) makes the judge talk to it as the
provider ``slopjudge``, authenticated by the key in the variable named by
``SLOPJUDGE_CODEX_API_KEY_ENV`` (default ``OPENAI_API_KEY``); Codex's own retries
are off there, so slopjudge's retry policy (``retries``) is the only one.

Tool rules: Codex has no per-command grants, so a scoped allow rule such as
``Bash(git show:*)`` cannot be honoured and is refused (fail closed); use the
Claude harness for those. Denials need no flag: the sandbox already denies
every write outside the answer folder.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from typing import Any

from slopjudge.hookspec import JudgeAttempt
from slopjudge.judging.runner.harness import PROMPT_STDIN_LIMIT, CommandHarness, explicit_binary

CODEX_MODELS = {
    "size-xs": "gpt-6-luna",
    "size-sm": "gpt-6-luna",
    "size-md": "gpt-6.1-sol",
    "size-lg": "gpt-6.1-sol",
    "size-xl": "gpt-6-astra",
    "size-xxl": "gpt-6-astra",
}
CODEX_PREFIXES = ("gpt-", "codex-", "o1", "o3", "o4")


def find_codex(env: Mapping[str, str]) -> str | None:
    """The codex binary: SLOPJUDGE_CODEX_BIN, else ``codex`` on PATH."""
    if env.get("SLOPJUDGE_CODEX_BIN"):
        return explicit_binary(env, "SLOPJUDGE_CODEX_BIN")
    return shutil.which("codex", path=env.get("PATH"))


class CodexHarness(CommandHarness):
    """Builds the ``codex exec`` command for one judge attempt."""

    name = "codex"
    models = CODEX_MODELS
    prefixes = CODEX_PREFIXES
    missing_message = "codex not found on PATH (install @openai/codex or set SLOPJUDGE_CODEX_BIN)"

    def __init__(self, binary: str = "codex", base_url: str | None = None,
                 key_env: str = "OPENAI_API_KEY") -> None:
        super().__init__(binary)
        self.base_url = base_url
        self.key_env = key_env

    def provider_args(self) -> list[str]:
        """``-c`` overrides selecting the provider at ``base_url`` (none without one)."""
        if not self.base_url:
            return []
        import json

        def q(text: str) -> str:
            return json.dumps(text)  # a JSON string is a TOML basic string

        table = (f"{{name = {q('slopjudge')}, base_url = {q(self.base_url)}, "
                 f"wire_api = {q('responses')}, env_key = {q(self.key_env)}, "
                 "request_max_retries = 0, stream_max_retries = 0}")
        return ["-c", f"model_providers.slopjudge={table}", "-c", 'model_provider="slopjudge"']

    def check_tools(self, allowed_tools: list[str], disallowed_tools: list[str]) -> None:
        """Refuse grants the sandbox cannot express."""
        scoped = [r for r in allowed_tools if "(" in r]
        if scoped:
            raise ValueError(
                "codex cannot scope tool rules: " + " ".join(scoped) + " (use --harness claude)"
            )

    def argv(self, attempt: JudgeAttempt) -> tuple[list[str], bytes]:
        """The command and its stdin. ``writable_dirs[0]`` is the answer folder."""
        argv = [
            self.binary, "exec", "-m", attempt.model,
            "--ignore-user-config", "--disable", "hooks", "--ephemeral", "--skip-git-repo-check",
            # JSONL events: the usage of each turn; the answer still comes through the file.
            "--json", *self.provider_args(),
        ]
        writable = attempt.writable_dirs
        if writable:
            argv += [
                "-C", writable[0],
                "--sandbox", "workspace-write",
                "-c", "sandbox_workspace_write.exclude_slash_tmp=true",
                "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true",
            ]
            for extra in writable[1:]:
                argv += ["--add-dir", extra]
        else:
            argv += ["--sandbox", "read-only"]
        data = attempt.prompt.encode("utf-8")
        if len(data) > PROMPT_STDIN_LIMIT:
            return [*argv, "--", "-"], data
        return [*argv, "--", attempt.prompt], b""

    def parse_output(self, stdout: bytes) -> tuple[bytes, dict[str, Any] | None]:
        """The reply (the last agent message) and the usage of the ``turn.completed``
        events of ``codex exec --json``; output that is no such event stream is the reply
        itself."""
        from slopjudge.usage import codex_events, from_codex_events

        text = stdout.decode("utf-8", "replace")
        events = codex_events(text)
        reply: str | None = None
        for event in events:
            item = event.get("item")
            if (event["type"] == "item.completed" and isinstance(item, dict)
                    and item.get("type") == "agent_message" and isinstance(item.get("text"), str)):
                reply = item["text"]
        if not events:
            return stdout, None
        return (reply or "").encode("utf-8"), from_codex_events(text)


def codex_harness(env: Mapping[str, str]) -> tuple[CodexHarness, bool]:
    """The Codex harness for ``env``, and whether its binary was found."""
    found = find_codex(env)
    harness = CodexHarness(found or "codex", env.get("SLOPJUDGE_CODEX_BASE_URL") or None,
                           env.get("SLOPJUDGE_CODEX_API_KEY_ENV") or "OPENAI_API_KEY")
    return harness, found is not None
