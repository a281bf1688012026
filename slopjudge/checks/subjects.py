"""A rule's ``subjects:`` script: the units its judges are asked about (docs/sloprail.md).
Every file the rule sees must be in some subject: one left out would go unjudged."""

from __future__ import annotations

from slopjudge.checks.script import last_line, run_rule_script
from slopjudge.jsonobject import loads
from slopjudge.model import Event, Rule
from slopjudge.procs import Registry

TYPE_CHECKING = False  # not typing's: the PreToolUse path imports this module
if TYPE_CHECKING:
    from typing import Any


def run_subjects(rule: Rule, event: Event, payload: dict[str, Any], workspace: str,
                 registry: Registry | None) -> list[dict[str, Any]] | str:
    """The subjects, or why there are none to judge (an error's reason)."""
    assert rule.subjects is not None
    proc = run_rule_script(rule, rule.subjects, event, payload, workspace, registry)
    if proc.returncode != 0 or proc.timed_out or proc.start_error is not None:
        why = last_line(proc.stderr)[:300] or f"exit status {proc.returncode}"
        return f"the subjects script failed: {why}"
    try:
        found = loads(proc.stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        return f"the subjects script printed no JSON list: {exc}"
    seen = {f["path"] for f in (payload.get("changeset") or {}).get("files") or []}
    ok = isinstance(found, list) and all(
        isinstance(s, dict) and isinstance(s.get("id"), str) and s["id"]
        and isinstance(s.get("files"), list) and s["files"]
        and all(isinstance(p, str) and p in seen for p in s["files"])
        and isinstance(s.get("fingerprint", ""), str) for s in found)
    if not ok:
        return ("the subjects script must print [{\"id\", \"files\", \"fingerprint\"?}] "
                "naming only files this rule sees")
    if not found:
        return f"the subjects script named no subject for the {len(seen)} file(s) this rule sees"
    left = sorted(seen - {p for s in found for p in s["files"]})
    if left:
        return f"the subjects script left {', '.join(left[:20])} in no subject: never judged"
    return [{"id": s["id"], "files": list(s["files"]), "fingerprint": s.get("fingerprint", "")}
            for s in found]
