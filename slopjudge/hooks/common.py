"""What every hook point shares: the re-entry guard, lenient stdin, the
event, output, and refusal text written for the agent.

Standard library only (plus ``model``): this is on the PreToolUse fast path.
"""

from __future__ import annotations

import json
import os
import sys
from typing import IO, Any

from ..model import CheckResult, Event, Finding, LoadError, Rule

GUARD_VARS = ("SLOPJUDGE_LAUNCHED_BY", "SLOPRAIL_LAUNCHED_BY")
# Claude Code spills hook strings over 10,000 characters to a file; stay well
# under it so the agent reads the refusal itself. The event log keeps it all.
MAX_MESSAGE_CHARS = 2000
MAX_FINDINGS = 8


def reentered() -> bool:
    """True inside a judge slopjudge (or sloprail) launched: its hooks must not run."""
    return any(os.environ.get(v) for v in GUARD_VARS)


def note(message: str) -> None:
    """One line for the person, on stderr."""
    print(f"slopjudge: {message}", file=sys.stderr, flush=True)


def read_payload(stream: IO[str] | None = None) -> dict[str, Any]:
    """The hook's stdin as a dict: empty or unparseable input is ``{}``."""
    stream = sys.stdin if stream is None else stream
    try:
        raw = stream.read() if stream is not None else ""
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        note(f"could not read the hook payload ({exc}); treating it as empty")
        return {}
    if not raw.strip():
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        note(f"hook payload is not JSON ({exc}); treating it as empty")
        return {}
    if not isinstance(data, dict):
        note("hook payload is not a JSON object; treating it as empty")
        return {}
    return data


def _str(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


def flag(payload: dict[str, Any], key: str) -> bool:
    value = payload.get(key)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return value is True or (isinstance(value, int) and value == 1)


def event_from_payload(kind: str, payload: dict[str, Any]) -> Event:
    """The §3 event; fields of the wrong type are dropped, unknown ones ignored."""
    tool_input = payload.get("tool_input")
    return Event(
        kind=kind,
        tool_name=_str(payload, "tool_name"),
        tool_input=tool_input
        if isinstance(tool_input, dict)
        else ({} if kind == "pre-tool" else None),
        session_id=_str(payload, "session_id"),
        transcript_path=_str(payload, "transcript_path"),
        cwd=_str(payload, "cwd"),
    )


def start_dir(payload: dict[str, Any]) -> str:
    """Where to look for the workspace: the payload's cwd, else Claude's project dir, else ours."""
    for candidate in (_str(payload, "cwd"), os.environ.get("CLAUDE_PROJECT_DIR")):
        if candidate and os.path.isdir(candidate):
            return candidate
    return os.getcwd()


def emit(obj: dict[str, Any]) -> None:
    """The one JSON object a hook prints on stdout."""
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def rel(path: str | None, workspace: str) -> str:
    if not path:
        return ""
    if os.path.isabs(path):
        r = os.path.relpath(path, workspace)
        if not r.startswith(".."):
            return r
    return path


def bound(text: str, limit: int, where: str) -> str:
    """Cut ``text`` to ``limit`` characters, saying where the whole of it is."""
    if len(text) <= limit:
        return text
    tail = f"\n… (cut; full text in {where})"
    return text[: max(0, limit - len(tail))].rstrip() + tail


def _one_line(text: str, limit: int = 600) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def finding_lines(findings: list[Finding], workspace: str, indent: str) -> list[str]:
    lines = []
    for f in findings[:MAX_FINDINGS]:
        where = rel(f.path, workspace)
        if where and f.line:
            where = f"{where}:{f.line}"
        msg = _one_line(f.message, 300)
        lines.append(f"{indent}{where}: {msg}" if where else f"{indent}{msg}")
    if len(findings) > MAX_FINDINGS:
        lines.append(f"{indent}… and {len(findings) - MAX_FINDINGS} more findings")
    return lines


def refusing(results: list[CheckResult]) -> list[CheckResult]:
    """Results that stop the change: refusals, and errors (slopjudge fails closed)."""
    return [r for r in results if r.outcome in ("refuse", "error")]


def result_reason(result: CheckResult, where: str = ".slopjudge/events.jsonl",
                  limit: int = 800) -> str:
    """The check's reason, its lines indented under the heading line, cut at ``limit``."""
    reason = (result.reason or "").strip() or "refused without a reason"
    if len(reason) > limit:
        reason = reason[:limit].rstrip() + f" … (cut; full text in {where})"
    reason = "\n    ".join(line.rstrip() for line in reason.splitlines() if line.strip())
    if result.outcome == "error":
        return f"the check could not run, so slopjudge refuses: {reason}"
    return reason


def load_error_line(err: LoadError, workspace: str) -> str:
    path = rel(err.path, workspace)
    return f"{path} does not load: {path}:{err.line}:{err.col}: {err.message}"


def rule_note(rule: Rule | None) -> str:
    if rule is None or not rule.description:
        return ""
    return f" (the rule: {_one_line(rule.description, 200)})"


def events_where(events_file: str | None, workspace: str) -> str:
    return rel(events_file, workspace) if events_file else ".slopjudge/events.jsonl"
