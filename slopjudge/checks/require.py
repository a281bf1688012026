"""A rule's ``require:`` (docs/sloprail.md), checked before any of its checks: a skill
loaded (and its pages read) or a citation. Only a ``when`` script's exit 1 waives one:
a doubt (a crash, a timeout) never does."""

from __future__ import annotations

from slopjudge.checks.script import run_rule_script
from slopjudge.jsonobject import parse_json_object
from slopjudge.model import Event, FileChange, Rule
from slopjudge.procs import Registry

TYPE_CHECKING = False  # not typing's: the PreToolUse path imports this module
if TYPE_CHECKING:
    from typing import Any


def unmet(rule: Rule, event: Event, payload: dict[str, Any], files: list[FileChange],
          workspace: str, registry: Registry | None) -> str | None:
    """Why the first unmet requirement is unmet; None when every one holds."""
    for req in rule.require:
        if req.get("when"):
            proc = run_rule_script(rule, req["when"], event, payload, workspace, registry)
            if proc.returncode == 1 and not proc.timed_out and proc.start_error is None:
                continue  # waived
        problem = (_skill(req, event.transcript_path) if req["kind"] == "skill"
                   else _citation(req, payload, files))
        if problem:
            return problem
    return None


def _citation(req: dict[str, Any], payload: dict[str, Any], files: list[FileChange]) -> str:
    pools = req["source_types"]
    said, flag = " or ".join(pools), pools[0].replace("_", "-")

    def grounded(cites: list[dict[str, Any]]) -> bool:
        return any(set(c.get("sourceTypes") or []) & set(pools) for c in cites)

    event = payload.get("event") or {}
    if not files:  # a command: its own `slopjudge cite ... &&`
        if grounded(event.get("citations") or []):
            return ""
        return (f"this command needs a citation ({said}) chained before it: "
                f"`slopjudge cite --{flag} '<exact words>' && <command>`")
    cited = (payload.get("changeset") or {}).get("citations") or []
    missing = [f.path for f in files
               if not grounded([c for c in cited if f.path in (c.get("files") or [])])]
    if not missing:
        return ""
    from slopjudge.changes.citations import session

    tried = [f"a citation ({','.join(c['sourceTypes'])}) of {p} {c['problem']}"
             for c in session(event.get("transcript_path"), payload.get("workspace") or "")
             if "problem" in c for p in c.get("files") or [] if p in missing]
    return (f"{', '.join(missing)}: no citation ({said}) grounds this change; cite it first: "
            f"`slopjudge cite --{flag} '<their exact words>' --path <file>`"
            + (f" ({'; '.join(tried)})" if tried else ""))


def _skill(req: dict[str, Any], transcript: str | None) -> str:
    name, pages = req["skill"], req.get("files") or []
    loaded, read = False, set[str]()
    # Only calls that succeeded count: a failed Skill loaded nothing, a failed Read read
    # nothing, and a page named in any other tool's input (an `echo`) was not read.
    for call in _succeeded_calls(transcript):
        given = call.get("input")
        data: dict[str, Any] = given if isinstance(given, dict) else {}
        if call.get("name") == "Skill":
            said = str(data.get("skill") or data.get("command") or "")
            loaded = loaded or said == name or said.endswith(":" + name)
        elif call.get("name") == "Read":
            path = str(data.get("file_path") or "")
            read.update(p for p in pages if path.endswith(f"/{name}/{p}"))
    if not loaded:
        return f"load the `{name}` skill first (the Skill tool), then do this again"
    missing = [p for p in pages if p not in read]
    if missing:
        return f"read {', '.join(missing)} of the `{name}` skill first, then do this again"
    return ""


def _succeeded_calls(transcript: str | None) -> list[dict[str, Any]]:
    """The session's tool calls whose result is in the transcript and is not an error."""
    calls: list[dict[str, Any]] = []
    ok: set[str] = set()
    try:
        with open(transcript or "", encoding="utf-8", errors="replace") as fh:
            lines = fh.readlines()
    except OSError:
        return calls
    for entry in filter(None, map(parse_json_object, lines)):
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if entry.get("type") == "assistant":
            calls += [b for b in blocks if b.get("type") == "tool_use"]
        elif entry.get("type") == "user":
            ok.update(str(b.get("tool_use_id")) for b in blocks
                      if b.get("type") == "tool_result" and not b.get("is_error"))
    return [c for c in calls if str(c.get("id")) in ok]
