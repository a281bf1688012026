"""The one JSON object every script, prepare and template sees (SPEC §3).

Field names follow sloprail's changeset payload so templates port unchanged.
Every key is always present (null when unknown), so templates can run with
strict undefined.
"""

from __future__ import annotations

from typing import Any

from .model import Changeset, Event, FileChange, Rule


def build_payload(
    *,
    event: Event,
    workspace: str,
    changeset: Changeset,
    files: list[FileChange],
    others: list[dict[str, Any]],
    change: str,
    rule: Rule | None = None,
    check_id: str | None = None,
) -> dict[str, Any]:
    return {
        "event": event_payload(event),
        "rule": (
            {"id": rule.id, "dir": rule.dir, "description": rule.description}
            if rule is not None
            else {"id": None, "dir": None, "description": None}
        ),
        "check": {"id": check_id},
        "workspace": workspace,
        "changeset": {
            "base": changeset.base,
            "head": changeset.head,
            "commits": [
                {"sha": c.sha, "subject": c.subject, "body": c.body} for c in changeset.commits
            ],
            "files": [f.to_payload() for f in files],
            "others": others,
        },
        "change": change,
        # Judge context only; present (empty) for scripts so every key exists.
        "additionalContext": {},
        "rubric": "",
    }


def event_payload(event: Event) -> dict[str, Any]:
    """The event, plus ``argv`` for a Bash call: each simple command of it as an
    argv list (split on ``&&``, ``||``, ``;``, ``|``), so scripts need not parse
    shell themselves. Null for every other event."""
    data = event.to_payload()
    data["argv"] = None
    command = (event.tool_input or {}).get("command")
    if event.tool_name == "Bash" and isinstance(command, str):
        from .toolmatch import bash_segments

        data["argv"] = bash_segments(command)
    return data
