"""Which rules and checks a run takes: the event filter, ``--rule`` selection, sharding.
Nothing heavy at module level: every PreToolUse call runs :func:`applicable_rules`."""

from __future__ import annotations

from slopjudge.changes.tools import CHANGE_TOOLS, SHELL_TOOLS
from slopjudge.model import Event, Rule

TYPE_CHECKING = False  # not typing's: this module is on the PreToolUse fast path
if TYPE_CHECKING:
    from typing import Any


def _shell_patch(event: Event) -> bool:
    """A shell call running Codex's ``apply_patch``: judged as that edit."""
    if (event.tool_name or "") not in SHELL_TOOLS:
        return False
    from slopjudge.changes.edits import patch_text

    return patch_text(event.tool_name, event.tool_input) is not None


def event_carries_change(event: Event) -> bool:
    return (event.kind != "pre-tool" or (event.tool_name or "") in CHANGE_TOOLS
            or _shell_patch(event))


def applicable_rules(rules: list[Rule], event: Event, workspace: str | None = None) -> list[Rule]:
    """Rules whose ``on`` has this event and, for pre-tool, whose ``tools`` match.
    ``workspace`` anchors ``Write(src/**)``, else the event's cwd (never the process's)."""
    chosen = []
    calls: list[tuple[str, dict[str, Any] | None]] = [(event.tool_name or "", event.tool_input)]
    if event.kind == "pre-tool" and any(r.tools for r in rules) and _shell_patch(event):
        # `apply_patch <<'EOF'` through the shell is also the apply_patch tool.
        calls.append(("apply_patch", event.tool_input))
    for rule in rules:
        if event.kind not in rule.on:
            continue
        if event.kind == "pre-tool" and rule.tools:
            from slopjudge.changes.toolmatch import tool_matches

            if not any(tool_matches(p, name, tool_input, workspace or event.cwd)
                       for p in rule.tools for name, tool_input in calls):
                continue
        chosen.append(rule)
    return chosen


def select_rules(rules: list[Rule], ids: list[str]) -> tuple[list[Rule], list[str]]:
    """The rules named by ``ids`` plus every rule their checks need; and unknown ids."""
    by_id = {r.id: r for r in rules}
    chosen: set[str] = set()
    todo = [i for i in ids if i in by_id]
    while todo:
        rid = todo.pop()
        if rid not in chosen:
            chosen.add(rid)
            todo += [n.split("/", 1)[0] for c in by_id[rid].checks for n in c.needs
                     if n.split("/", 1)[0] in by_id]
    return [r for r in rules if r.id in chosen], [i for i in ids if i not in by_id]


def shard_checks(rules: list[Rule], index: int, count: int) -> set[str]:
    """Full ids of the checks in shard ``index`` (1-based) of ``count``: checks linked by
    ``needs`` stay together (a shard never waits on another), groups dealt round-robin
    in sorted order (the same split on every machine)."""
    linked: dict[str, set[str]] = {}  # a check (or a need) -> every id linked to it
    for check in (c for r in rules for c in r.checks):
        ids = (check.full_id, *check.needs)
        group = set(ids).union(*(linked.get(i, ()) for i in ids))
        linked.update(dict.fromkeys(group, group))
    ours = {c.full_id for r in rules for c in r.checks}
    ordered = sorted({frozenset(linked[cid] & ours) for cid in ours}, key=min)
    return {cid for members in ordered[index - 1::count] for cid in members}
