"""PreToolUse: judge a tool call before it runs (docs/hooks.md says what it answers).

Fast path first: settings, the cached rules and the ``on``/``tools`` filter
need nothing heavy; with no applicable rule the hook exits 0 without
building a changeset. A payload slopjudge cannot read, and an internal error, exit 2:
Claude Code lets the tool run on any other non-zero exit.
"""

from __future__ import annotations

import os

from slopjudge import hooks
from slopjudge.changes.agentevent import event_from_payload, proposed_changeset
from slopjudge.harnesses.claude import CLAUDE
from slopjudge.hooks import common
from slopjudge.model import CheckResult, Event, LoadError, Rule

TYPE_CHECKING = False  # not typing's: this module is on the PreToolUse fast path
if TYPE_CHECKING:
    from typing import Any

    from slopjudge.harnesses.registry import AgentHarness


def _lines(results: list[CheckResult], rules: dict[str, Rule], workspace: str,
           where: str) -> list[str]:
    lines: list[str] = []
    for r in results:
        lines.append(f"{r.rule}: {common.result_reason(r, where)}")
        lines.append(f"  check {r.id}{common.rule_note(rules.get(r.rule))}")
        lines.extend(common.finding_lines(r.findings, workspace, "  - "))
    return lines


def _answer(decision: str, text: str, where: str, agent: AgentHarness) -> dict[str, Any]:
    return agent.pre_tool_answer(decision, common.bound(text, common.MAX_MESSAGE_CHARS, where))


def undecided_closing(tool: str) -> str:
    return (f"slopjudge could not decide on this {tool}, so it is blocked. This is not a "
            "finding in your call: a person must fix the cause. Say so in your reply; "
            "do not try to get around the block.")


def decide(
    results: list[CheckResult], rules: list[Rule], event: Event, workspace: str,
    events_file: str | None, agent: AgentHarness = CLAUDE,
) -> dict[str, Any] | None:
    """The PreToolUse answer for these results; None lets the call through."""
    stopping = [r for r in results if r.outcome in ("refuse", "error")]
    if not stopping:
        return None
    by_id = {r.id: r for r in rules}
    # A judge pass short of ``min_confidence`` on an ``on_uncertain: ask`` rule: the
    # person decides instead of a deny.
    asks = [r for r in stopping if r.uncertain and r.rule in by_id
            and by_id[r.rule].on_uncertain == "ask"]
    denies = [r for r in stopping if r not in asks]
    tool = event.tool_name or "tool call"
    where = common.events_where(events_file, workspace)
    if not denies:
        text = "\n".join(
            _lines(asks, by_id, workspace, where)
            + [f"slopjudge's judge was not confident enough about this {tool}: please decide."]
        )
        return _answer("ask", text, where, agent)
    refusals = [r for r in denies if r.outcome != "error"]
    errors = [r for r in denies if r.outcome == "error"]
    lines = _lines(refusals + errors, by_id, workspace, where)
    if refusals:
        n = len({r.rule for r in refusals})
        lines.append(f"slopjudge refused this {tool} ({n} rule{'s' if n > 1 else ''}). "
                     "Change the call so it meets the rule, or take another approach that "
                     "does; do not work around the rule.")
    if errors:
        lines.append(undecided_closing(tool))
    return _answer("deny", "\n".join(lines), where, agent)


def broken_answer(broken: list[LoadError], event: Event, workspace: str,
                  events_file: str | None, agent: AgentHarness) -> dict[str, Any]:
    """A deny for a call that rules which do not load could concern."""
    tool = event.tool_name or "tool call"
    n = len({e.path for e in broken})
    lines = [f"- {common.load_error_line(e, workspace)}" for e in broken[:common.MAX_FINDINGS]]
    if len(broken) > common.MAX_FINDINGS:
        lines.append(f"- … and {len(broken) - common.MAX_FINDINGS} more load errors")
    text = "\n".join(
        [f"slopjudge cannot enforce {n} rule file{'s' if n > 1 else ''} that could concern "
         f"this {tool}, because {'they do' if n > 1 else 'it does'} not load:"]
        + lines + [common.FIX_BY_PERSON, undecided_closing(tool)])
    return _answer("deny", text, common.events_where(events_file, workspace), agent)


def unknown_tool(event: Event, settings: Any, workspace: str,
                 agent: AgentHarness) -> dict[str, Any] | None:
    """A tool slopjudge does not know whose input names a path: judged from here on as
    the file tool it acts like when it writes one file (``event`` is changed to that);
    the answer ``unknown_tools`` gives when a path it names is outside the workspace or
    protected; None to go on."""
    from slopjudge.changes.tools import as_file_tool, named_paths

    name, data = event.tool_name or "", event.tool_input or {}
    paths = named_paths(name, data)
    if not paths:
        return None
    acts_as = as_file_tool(name, data)
    if acts_as is not None:
        event.tool_name, event.tool_input = acts_as
    from slopjudge.changes.toolmatch import resolve_path
    from slopjudge.hooks import backstop  # not above: it imports typing

    files, trees = backstop.protected(settings)
    guarded = []  # the paths an unknown tool may not touch unjudged, and why
    for full in (resolve_path(p, workspace) for p in paths):
        rel = os.path.relpath(full, os.path.realpath(workspace)).replace(os.sep, "/")
        if rel == ".." or rel.startswith("../"):
            guarded.append(f"{full}, outside the workspace")
        elif backstop.is_protected(rel, files, {*trees, ".git"}):
            guarded.append(f"{rel}, a protected path (rules, settings, hook config, git internals)")
    policy = settings.unknown_tools
    if not guarded or policy == "allow":
        return None
    text = (f"slopjudge does not know the tool {name}, and it names {'; '.join(guarded)}. "
            f"The settings say `unknown_tools: {policy}` for such a call.")
    text += (" Please decide." if policy == "ask" else " Use a file tool slopjudge knows "
             "(Write, Edit) on a path inside the project, or ask the person.")
    return _answer("ask" if policy == "ask" else "deny", text,
                   common.events_where(settings.events_file, workspace), agent)


def handle(payload: dict[str, Any], workspace: str, agent: AgentHarness) -> dict[str, Any] | None:
    """The answer to this call; None lets it through."""
    from slopjudge.loading import config, rulecache

    settings = config.load_settings(workspace)
    hooks.set_deadline(settings.hook_timeout)
    loaded = rulecache.load_rules_cached(settings)
    event = event_from_payload("pre-tool", payload)
    unknown = unknown_tool(event, settings, workspace, agent)
    if unknown is not None:
        return unknown
    if event.tool_name in common.PATH_TOOLS and event.tool_input:
        from slopjudge.changes.toolmatch import resolve_tool_input

        event.tool_input = resolve_tool_input(event.tool_input, workspace)
    broken = common.broken_rules(loaded.errors, settings.rules_dir, "pre-tool",
                                 event.tool_name, event.tool_input, workspace)
    if broken:
        return broken_answer(broken, event, workspace, settings.events_file, agent)
    from slopjudge.checks.selection import applicable_rules

    rules = applicable_rules(loaded.rules, event, workspace)
    if not rules:
        return None
    changeset = proposed_changeset(event, workspace)
    if changeset is None:
        return None
    from slopjudge.checks import engine
    from slopjudge.checks.options import options_from_settings
    from slopjudge.records.record import record_all

    options = options_from_settings(settings, in_process=True)
    results = engine.run(rules, event, changeset, workspace=workspace, options=options)
    record_all(settings.events_file, event, results)
    return decide(results, loaded.rules, event, workspace, settings.events_file, agent)


def main(payload: dict[str, Any] | None, problem: Exception | None, agent: AgentHarness) -> int:
    why = problem or (common.pre_tool_problem(payload) if payload is not None else None)
    if payload is None or why:
        common.note(f"could not read the PreToolUse payload ({why}), so the tool call "
                    "is blocked; this is not a finding in the call")
        return 2
    with common.fail_closed() as failure:
        answer = handle(payload, common.find_workspace(), agent)
        if answer is not None:
            common.emit(answer)
        return 0
    common.note(f"pre-tool hook failed, so the tool call is blocked: {failure.why}")
    return 2
