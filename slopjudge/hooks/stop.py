"""Stop / SubagentStop: judge the session's changes before the turn ends.

The changeset runs from the baseline recorded at session start to the work
tree now (untracked files included, ``.gitignore`` respected); without a
baseline, from HEAD, and a refusal says so. Rules that do not load refuse
too. A refusal blocks the stop (``{"decision":"block","reason":...}``) so
the agent keeps working; retries (``stop_hook_active``) are judged again.

A per-session counter bounds the loop: at ``stop_block_cap`` refusals in a
row the turn may end, and the person is told the refusal still stands. An
internal error blocks (fail closed) and counts like a refusal.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from ..model import CheckResult, LoadError, Rule
from . import backstop, common, state

CLOSING = ("Fix each of these in the work tree, then finish again; slopjudge checks "
           "the session's changes again at every stop.")


def _changeset(changeset: Any, settings: Any, session_id: str | None) -> tuple[Any, str]:
    """The session's change and a note on what it compares (empty when the baseline is used)."""
    workspace = settings.workspace
    baseline = state.load_baseline(settings.state_dir, session_id)
    if baseline is not None:
        head = changeset.snapshot_worktree(workspace)
        return changeset.from_trees(workspace, baseline["tree"], head), ""
    return (changeset.from_working_tree(workspace, base="HEAD"),
            "(No session baseline was recorded, so this compares HEAD with the work tree.)")


def refusal_text(
    results: list[CheckResult], load_errors: list[LoadError], rules: list[Rule],
    workspace: str, compared: str, where: str,
) -> str:
    by_id = {r.id: r for r in rules}
    lines = ["slopjudge: the changes in this session do not pass these checks yet:"]
    for r in common.refusing(results):
        lines.append(f"- {r.id}: {common.result_reason(r, where)}")
        lines.extend(common.finding_lines(r.findings, workspace, "    "))
        rule = by_id.get(r.rule)
        if rule is not None and rule.description:
            lines.append(f"    rule {rule.id}: {' '.join(rule.description.split())}")
    for err in load_errors:
        lines.append(f"- {common.load_error_line(err, workspace)}")
    if compared:
        lines.append(compared)
    lines.append(CLOSING)
    return "\n".join(lines)


def judge(kind: str, payload: dict[str, Any], settings: Any) -> str | None:
    """The refusal text for this stop, or None when everything passes."""
    from .. import changeset, engine, rulecache

    loaded = rulecache.load_rules_cached(settings)
    event = common.event_from_payload(kind, payload)
    rules = engine.applicable_rules(loaded.rules, event)
    cs, compared = _changeset(changeset, settings, event.session_id)
    results: list[CheckResult] = []
    if rules:
        options = engine.options_from_settings(settings)
        results = engine.run(rules, event, cs, workspace=settings.workspace, options=options)
    # A repository without its rules folder has nothing to enforce: the start
    # check says so, but blocking every stop over it would only trap the agent.
    load_errors = list(loaded.errors) if os.path.isdir(settings.rules_dir) else []
    if not common.refusing(results) and not load_errors:
        return None
    where = common.events_where(settings.events_file, settings.workspace)
    return refusal_text(results, load_errors, loaded.rules, settings.workspace,
                        compared, where)


def counter_name(kind: str, payload: dict[str, Any]) -> str:
    agent = payload.get("agent_id")
    if kind == "subagent-stop":
        return f"subagent-{agent}" if isinstance(agent, str) and agent else "subagent"
    return "stop"


def handle(kind: str, payload: dict[str, Any]) -> int:
    from .. import config

    workspace = config.find_workspace(common.start_dir(payload))
    os.chdir(workspace)  # messages name files relative to the workspace
    settings = None
    try:
        settings = config.load_settings(workspace)
        reason = judge(kind, payload, settings)
        reason = backstop.guard(reason, settings, payload)  # whether or not the rules load
    except Exception as exc:  # fail closed: block, and let the counter bound the loop
        if os.environ.get("SLOPJUDGE_DEBUG"):
            raise
        reason = (f"slopjudge could not check this session's changes: {type(exc).__name__}: "
                  f"{' '.join(str(exc).split())}\nFix the cause if it is in the repository "
                  "(a rule, slopjudge.yaml), then finish again.")
    state_base = settings.state_dir if settings else os.path.join(workspace, ".slopjudge")
    cap = settings.stop_block_cap if settings else 8
    events = settings.events_file if settings else None
    session_id = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
    counter = counter_name(kind, payload)

    if reason is None:
        state.set_count(state_base, session_id, counter, 0)
        return 0
    count = state.get_count(state_base, session_id, counter) if common.flag(
        payload, "stop_hook_active") else 0
    count += 1
    where = common.events_where(events, workspace)
    if cap > 0 and count >= cap:
        state.set_count(state_base, session_id, counter, 0)
        message = common.bound(
            f"slopjudge: letting the turn end after {count} refusals in a row; "
            f"the refusal still stands:\n{reason}", common.MAX_MESSAGE_CHARS, where)
        print(message, file=sys.stderr, flush=True)
        common.emit({"systemMessage": message})
        return 0
    state.set_count(state_base, session_id, counter, count)
    common.emit({"decision": "block",
                 "reason": common.bound(reason, common.MAX_MESSAGE_CHARS, where)})
    return 0


def main(kind: str, payload: dict[str, Any]) -> int:
    try:
        return handle(kind, payload)
    except Exception as exc:  # even the state files failed: still block
        if os.environ.get("SLOPJUDGE_DEBUG"):
            raise
        common.emit({"decision": "block",
                     "reason": f"slopjudge could not check this session's changes: "
                               f"{type(exc).__name__}: {' '.join(str(exc).split())}"})
        return 0
