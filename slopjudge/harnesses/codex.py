"""The Codex CLI: hooks in ``.codex/hooks.json``, ``codex exec`` as a judge.

docs/codex.md says what differs from Claude Code (checked against ``@openai/codex``
0.171) and why: a hook runs only once it is trusted (:meth:`Codex.trust_problems` computes
its hash as Codex does), there is no ``ask`` and no Stop message for the person, and
a judge is held by the OS sandbox rather than tool rules.
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

# Codex's keys for hook events in its trust state.
EVENT_KEYS = {"SessionStart": "session_start", "PreToolUse": "pre_tool_use",
              "Stop": "stop", "SubagentStop": "subagent_stop"}
DEFAULT_TIMEOUT = 600  # Codex's, for a handler without one


class Codex(base.Agent):
    name: str = "codex"
    settings_relpath: tuple[str, ...] = (".codex", "hooks.json")
    # Codex runs hooks from the session's folder, which may be below the root.
    root: str = "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
    # Payloads are Claude Code's shape; `apply_patch` is read by the edit code.

    def pre_tool_answer(self, decision: str, reason: str) -> dict[str, Any]:
        if decision == "ask":  # Codex cannot ask: an ask it would ignore and run
            reason += ("\nCodex cannot ask the person, so slopjudge denies this call. Ask the "
                       "person in your reply whether to go ahead")
        # Codex appends ". Command: <cmd>" itself.
        return super().pre_tool_answer("deny", reason.rstrip().rstrip("."))

    def end_notice(self, notice: str) -> tuple[dict[str, Any], bool]:
        return self.stop_block(
            f"{notice}\n\nslopjudge lets this turn end at your next stop: change nothing more "
            "for it. End your reply by telling the person what is above, starting with its "
            "first line word for word."), False

    def install_notes(self, workspace: str) -> list[str]:
        return ["slopjudge: Codex runs these hooks only once the project and each hook are "
                "trusted; `slopjudge doctor` says which are not and how to trust them "
                "(for `codex exec` and for the TUI)"]

    def trust_problems(self, workspace: str, env: Mapping[str, str] | None = None) -> list[str]:
        """Why Codex would not run slopjudge's hooks in ``workspace``, each with its remedy;
        empty when every one is trusted (or none is installed)."""
        import tomllib

        hooks_file = os.path.join(workspace, *self.settings_relpath)
        env = os.environ if env is None else env
        home = env.get("CODEX_HOME") or os.path.join(os.path.expanduser("~"), ".codex")
        config = os.path.join(home, "config.toml")
        try:
            ours = our_hooks(hooks_file)
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            return [f"{hooks_file}: cannot be read ({exc}), so Codex runs none of its hooks"]
        if not ours:
            return []
        try:
            with open(config, "rb") as fh:
                settings = tomllib.load(fh)
        except FileNotFoundError:
            settings = {}
        except (OSError, ValueError) as exc:  # TOMLDecodeError, UnicodeDecodeError
            return [f"{config}: cannot be read ({exc}); slopjudge cannot tell whether Codex "
                    "trusts its hooks"]
        problems = []
        if not any(base.dig(settings, "projects", p, "trust_level") == "trusted"
                   for p in (workspace, os.path.realpath(workspace))):
            problems.append(
                f"Codex does not trust the project {workspace}, so it runs none of its hooks. "
                f"Trust it: run `codex exec --trust` there once, or add to {config}:\n"
                f"[projects.{_toml_str(workspace)}]\ntrust_level = \"trusted\"")
        lines = []
        for key, event, digest in ours:
            if base.dig(settings, "hooks", "state", key, "enabled") is False:
                problems.append(f"Codex has slopjudge's {event} hook turned off ({key}): turn it "
                                f"on in /hooks, or remove `enabled = false` under it in {config}")
            trusted = base.dig(settings, "hooks", "state", key, "trusted_hash")
            if trusted != digest:
                how = "changed since it was trusted" if trusted else "not trusted"
                problems.append(f"Codex does not run slopjudge's {event} hook: it is {how} ({key})")
                lines.append(f"[hooks.state.{_toml_str(key)}]\ntrusted_hash = \"{digest}\"")
        if lines:
            problems.append(
                "To trust them: in the Codex TUI (`codex` in the project), open /hooks and trust "
                f"each of slopjudge's hooks; for `codex exec`, add these lines to {config} "
                "(replace any older entry of the same name):\n" + "\n".join(lines))
        return problems

    models = {
        "size-xs": "gpt-6-luna",
        "size-sm": "gpt-6-luna",
        "size-md": "gpt-6.1-sol",
        "size-lg": "gpt-6.1-sol",
        "size-xl": "gpt-6-astra",
        "size-xxl": "gpt-6-astra",
    }
    prefixes = ("gpt-", "codex-", "o1", "o3", "o4")
    missing_message = "codex not found on PATH (install @openai/codex or set SLOPJUDGE_CODEX_BIN)"
    base_url: str | None = None  # another endpoint (SLOPJUDGE_CODEX_BASE_URL)
    key_env = "OPENAI_API_KEY"  # the variable holding its key

    def judge(self, env: Mapping[str, str]) -> tuple[Harness, bool]:
        found = which(env.get("SLOPJUDGE_CODEX_BIN") or "codex", env.get("PATH"))
        harness = Codex(found or "codex")
        harness.base_url = env.get("SLOPJUDGE_CODEX_BASE_URL") or None
        harness.key_env = env.get("SLOPJUDGE_CODEX_API_KEY_ENV") or "OPENAI_API_KEY"
        return harness, found is not None

    def check_tools(self, allowed_tools: list[str], disallowed_tools: list[str]) -> None:
        """Refuse grants the sandbox cannot express."""
        scoped = [r for r in allowed_tools if "(" in r]
        if scoped:
            raise ValueError(f"codex cannot scope tool rules: {' '.join(scoped)} (use --harness "
                             "claude)")

    def argv(self, attempt: JudgeAttempt) -> tuple[list[str], bytes]:
        argv = [
            self.binary, "exec", "-m", attempt.model,
            "--ignore-user-config", "--disable", "hooks", "--ephemeral", "--skip-git-repo-check",
            # JSONL events: the usage of each turn; the answer still comes through the file.
            "--json",
        ]
        if self.base_url:  # the provider at base_url, by -c overrides
            q = _toml_str
            table = (f"{{name = {q('slopjudge')}, base_url = {q(self.base_url)}, "
                     f"wire_api = {q('responses')}, env_key = {q(self.key_env)}, "
                     "request_max_retries = 0, stream_max_retries = 0}")
            argv += ["-c", f"model_providers.slopjudge={table}", "-c", 'model_provider="slopjudge"']
        writable = attempt.writable_dirs
        if writable:
            argv += [
                "-C", writable[0],
                "--sandbox", "workspace-write",
                "-c", "sandbox_workspace_write.exclude_slash_tmp=true",
                "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true",
            ]
            argv += [word for extra in writable[1:] for word in ("--add-dir", extra)]
        else:
            argv += ["--sandbox", "read-only"]
        data = attempt.prompt.encode("utf-8")
        if len(data) > base.PROMPT_STDIN_LIMIT:
            return [*argv, "--", "-"], data
        return [*argv, "--", attempt.prompt], b""

    def parse_output(self, stdout: bytes) -> tuple[bytes, dict[str, Any] | None]:
        """The last agent message and the usage of ``codex exec --json``'s events; output
        that is no such event stream is the reply itself."""
        from slopjudge.usage import codex_events, from_codex_events

        text = stdout.decode("utf-8", "replace")
        events = codex_events(text)
        if not events:
            return stdout, None
        items = [e.get("item") for e in events if e["type"] == "item.completed"]
        replies = [i["text"] for i in items if isinstance(i, dict)
                   and i.get("type") == "agent_message" and isinstance(i.get("text"), str)]
        return (replies[-1] if replies else "").encode("utf-8"), from_codex_events(text)


CODEX = Codex()


def hook_hash(event: str, group: dict[str, Any], handler: dict[str, Any]) -> str:
    """The hash Codex keeps for a trusted hook: its normalized identity (event, matcher,
    the one handler) as canonical JSON, sha256 (Codex's ``command_hook_hash``)."""
    import hashlib
    import json

    timeout = handler.get("timeout")
    normalized: dict[str, Any] = {
        "type": "command", "command": handler.get("command"),
        "timeout": max(1, timeout if isinstance(timeout, int) else DEFAULT_TIMEOUT),
        "async": bool(handler.get("async", False)),
    }
    if isinstance(handler.get("statusMessage"), str):
        normalized["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": EVENT_KEYS[event], "hooks": [normalized]}
    if event in ("PreToolUse", "SessionStart") and isinstance(group.get("matcher"), str):
        identity["matcher"] = group["matcher"]
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def our_hooks(hooks_file: str) -> list[tuple[str, str, str]]:
    """(key, event, hash) of each of slopjudge's hooks in ``hooks_file``, as Codex has them."""
    import json

    with open(hooks_file, encoding="utf-8") as fh:
        data = json.load(fh)
    found = []
    for event, point, _matcher, _timeout in base.HOOKS:
        groups = base.dig(data, "hooks", event)
        for gi, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = base.dig(group, "hooks")
            for hi, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if base.is_ours(handler, point):
                    key = f"{hooks_file}:{EVENT_KEYS[event]}:{gi}:{hi}"
                    found.append((key, event, hook_hash(event, group, handler)))
    return found


def _toml_str(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string
