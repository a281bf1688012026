"""What every hook point shares: the re-entry guard, reading the payload, the one
answer, and refusal text written for the agent. On the PreToolUse fast path: standard
library only (plus ``model``)."""

from __future__ import annotations

import os
import sys

from slopjudge.changes.tools import PATH_FIELDS
from slopjudge.jsonobject import loads
from slopjudge.model import CheckResult, Finding, LoadError, Rule

TYPE_CHECKING = False  # not typing's: this module is on the PreToolUse fast path
if TYPE_CHECKING:
    from typing import Any

GUARD_VARS = ("SLOPJUDGE_LAUNCHED_BY", "SLOPRAIL_LAUNCHED_BY")
# Claude Code spills hook strings over 10,000 characters to a file; stay well
# under it so the agent reads the refusal itself. The event log keeps it all.
MAX_MESSAGE_CHARS = 2000
MAX_FINDINGS = 8


def reentered() -> bool:
    """True inside a judge slopjudge (or sloprail) launched: its hooks must not run."""
    return any(os.environ.get(v) for v in GUARD_VARS)


def note(message: str) -> None:
    print(f"slopjudge: {message}", file=sys.stderr, flush=True)


def one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


class fail_closed:  # lower case: it reads as a statement, ``with fail_closed() as failure:``
    """The hooks' one catch-all: after the block ``failure.why`` says in one line what error
    it caught, for the hook point to block on or report. ``SLOPJUDGE_DEBUG=1`` lets it through."""

    why: str | None = None

    def __enter__(self) -> fail_closed:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> bool:
        if not isinstance(exc, Exception) or os.environ.get("SLOPJUDGE_DEBUG"):
            return False  # no error, or KeyboardInterrupt/SystemExit: not ours to swallow
        self.why = one_line(exc)
        return True

    def __bool__(self) -> bool:
        return self.why is not None


# --- reading the payload ------------------------------------------------------

# Far above any real payload (a Write of a large file included); past it the
# hook cannot know what it is judging, so it does not try.
MAX_PAYLOAD_BYTES = 64 * 1024 * 1024


class PayloadError(Exception):
    """A payload slopjudge cannot read; ``str()`` is one line saying why."""


class EmptyPayload(PayloadError):
    """Nothing on stdin: to ``hook start``, the standalone load check."""


def read_stdin() -> bytes:
    if sys.stdin is None:
        return b""  # no stdin at all (a closed descriptor): the same as empty
    stream = getattr(sys.stdin, "buffer", None)
    try:
        if stream is not None:
            raw = stream.read(MAX_PAYLOAD_BYTES + 1)
        else:  # a text stream put in place of stdin (slopjudge called as a library)
            raw = sys.stdin.read(MAX_PAYLOAD_BYTES + 1).encode("utf-8", "surrogateescape")
    except (OSError, ValueError) as exc:
        raise PayloadError(f"stdin could not be read ({one_line(exc)})") from None
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise PayloadError(f"the payload is larger than {MAX_PAYLOAD_BYTES >> 20} MiB")
    return bytes(raw)


def parse_payload(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise EmptyPayload("stdin is empty")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PayloadError(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        data = loads(text)
    except ValueError as exc:  # JSONDecodeError says line and column
        raise PayloadError(f"not JSON ({' '.join(str(exc).split())})") from None
    except RecursionError:
        raise PayloadError("not JSON slopjudge can read (nested too deeply)") from None
    if not isinstance(data, dict):
        raise PayloadError(f"a JSON {_json_type(data)}, not an object")
    return data


def _json_type(value: Any) -> str:
    return {bool: "boolean", int: "number", float: "number", str: "string", list: "array",
            type(None): "null"}.get(type(value), "value")


PATH_TOOLS = PATH_FIELDS  # the file tools and the field naming their file


def pre_tool_problem(payload: dict[str, Any]) -> str | None:
    """Why a PreToolUse payload lacks what judging it needs, or None."""
    name = payload.get("tool_name")
    if not isinstance(name, str) or not name.strip():
        return "`tool_name` is missing or not a string"
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return f"`tool_input` of {name} is {_json_type(tool_input)}, not an object"
    key = PATH_TOOLS.get(name)
    if key is not None:
        path = tool_input.get(key, tool_input.get("file_path"))
        if not isinstance(path, str) or not path:
            return f"`tool_input.{key}` of {name} is missing or not a string"
    if name == "Bash":
        command = tool_input.get("command")
        if not (isinstance(command, str) or (
                isinstance(command, list) and all(isinstance(c, str) for c in command))):
            return "`tool_input.command` of Bash is missing or not a string"
    return None


def flag(payload: dict[str, Any], key: str) -> bool:
    value = payload.get(key)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return isinstance(value, int) and value == 1  # True included


def find_workspace() -> str:
    """``CLAUDE_PROJECT_DIR``, else the git top level of the working folder, resolved;
    never the payload's ``cwd``: a session that wandered off is still judged by the
    project's rules."""
    from slopjudge.fsutil import find_workspace as top_level

    project = os.environ.get("CLAUDE_PROJECT_DIR")
    start = project if project and os.path.isdir(project) else os.getcwd()
    return os.path.realpath(top_level(start))


def emit(obj: dict[str, Any]) -> None:
    """The one JSON object a hook prints on stdout; OSError when it cannot be written."""
    from slopjudge.hooks import disarm
    from slopjudge.jsonobject import dumps  # json.dumps without json's import (2 ms)

    if sys.stdout is None:  # the descriptor was closed when the hook started
        raise OSError("stdout is closed")

    disarm()  # one answer: the deadline's block must not follow this one
    sys.stdout.write(dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def rel(path: str | None, workspace: str) -> str:
    """``path`` from the workspace root when it is inside, else as given."""
    if path and os.path.isabs(path):
        r = os.path.relpath(path, workspace)
        if not r.startswith(".."):
            return r
    return path or ""


def bound(text: str, limit: int, where: str) -> str:
    """Cut ``text`` to ``limit`` characters, saying where the whole of it is."""
    if len(text) <= limit:
        return text
    tail = f"\n… (cut; full text in {where})"
    return text[: max(0, limit - len(tail))].rstrip() + tail


def _one_line(text: str, limit: int) -> str:
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


def result_reason(result: CheckResult, where: str) -> str:
    """The check's reason, under its heading line; an error's says it is not the change's."""
    reason = (result.reason or "").strip() or (
        "no reason given" if result.outcome == "error" else "refused without a reason")
    if len(reason) > 800:
        reason = reason[:800].rstrip() + f" … (cut; full text in {where})"
    reason = "\n    ".join(line.rstrip() for line in reason.splitlines() if line.strip())
    if result.outcome == "error":
        what = "the judge" if result.kind == "judge" else "the check"
        return f"{what} could not run: {reason}; this is not a finding in your change"
    return reason


def load_error_line(err: LoadError, workspace: str) -> str:
    """The error, its file (named by the loader from the working folder) from the workspace."""
    full = os.path.abspath(err.path)
    inside = (os.path.relpath(p, workspace) for p in (full, os.path.realpath(full)))
    path = next((r for r in inside if r != ".." and not r.startswith(".." + os.sep)), full)
    return f"{path} does not load: {path}:{err.line}:{err.col}: {err.message}"


def broken_rules(errors: list[LoadError], rules_dir: str, kind: str,
                 tool_name: str | None = None, tool_input: dict[str, Any] | None = None,
                 workspace: str | None = None) -> list[LoadError]:
    """The load errors of rules that could concern this event (and tool call); one whose
    ``on`` (or ``tools``) cannot be read concerns all. No rules folder: nothing is broken."""
    if not errors or not os.path.isdir(rules_dir):
        return []
    found = [e for e in errors if e.on is None or kind in e.on]
    if kind == "pre-tool" and any(e.tools for e in found):
        from slopjudge.changes.toolmatch import any_tool_matches

        found = [e for e in found if not e.tools
                 or any_tool_matches(e.tools, tool_name, tool_input, workspace)]
    return found


FIX_BY_PERSON = ("A person must fix the rule file: agents may not edit rules "
                 "(`slopjudge validate` lists every problem).")


def rule_note(rule: Rule | None) -> str:
    if rule is None or not rule.description:
        return ""
    return f" (the rule: {_one_line(rule.description, 200)})"


def events_where(events_file: str | None, workspace: str) -> str:
    return rel(events_file, workspace) if events_file else ".slopjudge/events.jsonl"
