"""PreToolUse: judge a tool call before it runs.

Fast path first: settings, the cached rules and the ``on``/``tools`` filter
need nothing heavy; with no applicable rule the hook exits 0 without
building a changeset. Otherwise a file tool's proposed edit becomes the
changeset (old content from disk, new content after the tool input), as is
every file of a Codex ``apply_patch`` (its own tool, or ``apply_patch`` run
through the shell); Bash and other tools carry an empty one and the command
in ``event.tool_input``.

Answers (exit 0): nothing (allow), a ``deny`` naming every refusing rule and
check, or ``ask`` when the only refusals are judge passes under
``min_confidence`` on ``on_uncertain: ask`` rules. A check that errors
denies (fail closed). An internal error exits 2 with one line on stderr:
Claude Code lets the tool run on any other non-zero exit.
"""

from __future__ import annotations

import os
from typing import Any

from ..model import CheckResult, Event, Rule
from . import common


def proposed_changeset(event: Event, workspace: str) -> Any:
    """The proposed change; for an edit that cannot be reproduced, what it is known to touch."""
    from ..model import Changeset

    if not event.tool_name:
        return Changeset()
    from .. import edits

    try:
        proposed = edits.proposed_changes(event.tool_name, event.tool_input or {}, workspace,
                                          cwd=event.cwd)
    except edits.EditError as exc:
        # Judged on what is known (its files, its new text): a guarded path is
        # never let through because the edit did not apply.
        common.note(f"{event.tool_name} cannot be reproduced ({exc}); judging its target "
                    "files and new text")
        return edits.unapplied_changeset(event.tool_name, event.tool_input or {}, workspace,
                                         cwd=event.cwd)
    if proposed is None:
        return Changeset()  # Bash, MCP and other tools: the command is in the event
    # A file outside the workspace keeps its absolute path: rules with
    # workspace-relative ``paths`` do not see it; a rule guarding where files
    # are written does.
    from .. import changeset

    return changeset.from_proposed_edits(workspace, proposed)


def is_uncertain(result: CheckResult, rule: Rule | None) -> bool:
    """A judge pass refused only for falling short of ``min_confidence``, on an
    ``on_uncertain: ask`` rule: the person decides instead of a deny."""
    return rule is not None and rule.on_uncertain == "ask" and result.uncertain


def _lines(results: list[CheckResult], rules: dict[str, Rule], workspace: str,
           where: str) -> list[str]:
    lines: list[str] = []
    for r in results:
        lines.append(f"{r.rule}: {common.result_reason(r, where)}")
        lines.append(f"  check {r.id}{common.rule_note(rules.get(r.rule))}")
        lines.extend(common.finding_lines(r.findings, workspace, "  - "))
    return lines


def decide(
    results: list[CheckResult], rules: list[Rule], event: Event, workspace: str,
    events_file: str | None,
) -> dict[str, Any] | None:
    """The PreToolUse answer for these results; None lets the call through."""
    stopping = common.refusing(results)
    if not stopping:
        return None
    by_id = {r.id: r for r in rules}
    asks = [r for r in stopping if is_uncertain(r, by_id.get(r.rule))]
    denies = [r for r in stopping if r not in asks]
    tool = event.tool_name or "tool call"
    where = common.events_where(events_file, workspace)
    if denies:
        n = len({r.rule for r in denies})
        text = "\n".join(
            _lines(denies, by_id, workspace, where)
            + [f"slopjudge refused this {tool} ({n} rule{'s' if n > 1 else ''}). "
               "Change the call so it meets the rule, or take another approach that does; "
               "do not work around the rule."]
        )
        decision = "deny"
    else:
        text = "\n".join(
            _lines(asks, by_id, workspace, where)
            + [f"slopjudge's judge was not confident enough about this {tool}: please decide."]
        )
        decision = "ask"
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": common.bound(text, common.MAX_MESSAGE_CHARS, where),
        }
    }


def handle(payload: dict[str, Any]) -> int:
    from .. import config, rulecache

    workspace = config.find_workspace(common.start_dir(payload))
    # Messages name files relative to the workspace, and `tools: [Write(src/**)]`
    # globs paths relative to it (the current directory).
    os.chdir(workspace)
    settings = config.load_settings(workspace)
    loaded = rulecache.load_rules_cached(settings)
    event = common.event_from_payload("pre-tool", payload)
    from .. import engine

    rules = engine.applicable_rules(loaded.rules, event, workspace)
    if not rules:
        return 0
    changeset = proposed_changeset(event, workspace)
    if changeset is None:
        return 0
    options = engine.options_from_settings(settings)
    results = engine.run(rules, event, changeset, workspace=workspace, options=options)
    answer = decide(results, loaded.rules, event, workspace, settings.events_file)
    if answer is not None:
        common.emit(answer)
    return 0


def main(payload: dict[str, Any]) -> int:
    try:
        return handle(payload)
    except Exception as exc:  # fail closed: exit 2 blocks the tool in Claude Code
        if os.environ.get("SLOPJUDGE_DEBUG"):
            raise
        common.note(f"pre-tool hook failed, so the tool call is blocked: "
                    f"{type(exc).__name__}: {' '.join(str(exc).split())}")
        return 2
