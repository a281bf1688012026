"""What a hook call asks to judge: the event from the harness payload and a tool call's
proposed change; ``slopjudge test`` uses it too, so a rule case is judged as the hook
would. Standard library only at import: this is on the PreToolUse fast path.
"""

from __future__ import annotations

import sys

from slopjudge.model import Changeset, Event

TYPE_CHECKING = False  # not typing's: this module is on the PreToolUse fast path
if TYPE_CHECKING:
    from typing import Any


def event_from_payload(kind: str, payload: dict[str, Any]) -> Event:
    """The §3 event; fields of the wrong type are dropped, unknown ones ignored."""
    tool_input = payload.get("tool_input")
    return Event(kind, tool_input=tool_input if isinstance(tool_input, dict)
                 else {} if kind == "pre-tool" else None,
                 **{key: value if isinstance(value := payload.get(key), str) and value else None
                    for key in ("tool_name", "session_id", "transcript_path", "cwd")})


def proposed_changeset(event: Event, workspace: str) -> Any:
    """The proposed change; for an edit that cannot be reproduced, what it is known to touch."""
    from slopjudge.changes import edits

    name, data = event.tool_name or "", event.tool_input or {}  # no name: no file tool
    try:
        proposed = edits.proposed_changes(name, data, workspace, cwd=event.cwd)
    except edits.EditError as exc:
        # Judged on what is known (its files, its new text): a guarded path is
        # never let through because the edit did not apply.
        print(f"slopjudge: {name} cannot be reproduced ({exc}); judging its target files and "
              "new text", file=sys.stderr, flush=True)
        return edits.unapplied_changeset(name, data, workspace, cwd=event.cwd)
    if proposed is None:
        return Changeset()  # Bash, MCP and other tools: the command is in the event
    from slopjudge.changes.proposed import from_proposed_edits
    from slopjudge.changes.toolmatch import resolve_path

    # A patch may name a file through a symlinked folder too: judge the real file.
    proposed = [(resolve_path(path, workspace),
                 None if old is None else resolve_path(old, workspace), new)
                for path, old, new in proposed]
    # A file outside the workspace keeps its absolute path: rules with
    # workspace-relative ``paths`` do not see it; a rule guarding where files
    # are written does.
    return from_proposed_edits(workspace, proposed)
