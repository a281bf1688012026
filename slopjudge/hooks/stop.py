"""Stop / SubagentStop: judge the session's changes (baseline to work tree) before the
turn ends (docs/hooks.md). What only a person can fix blocks once per turn: at the retry the
turn ends, saying the block stands (an agent that shows no hook message, Codex, is asked to
relay that notice, and the stop after that ends the turn).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from slopjudge import hooks
from slopjudge.hooks import backstop, common, state
from slopjudge.model import CheckResult, LoadError, Rule

if TYPE_CHECKING:
    from slopjudge.harnesses.registry import AgentHarness

CLOSING = ("Fix each of these in the work tree, then finish again; slopjudge checks "
           "the session's changes again at every stop.")
UNDECIDED = ("None of this is a finding in your change, and you may not edit rules, "
             "slopjudge.yaml or hook settings to get past it: a person must fix the cause. "
             "Say in your reply what is above; the block stands until then.")


@dataclass
class Verdict:
    """What one stop found: refusals the agent can fix, and what only a person can."""

    refusals: list[CheckResult] = field(default_factory=list)
    errors: list[CheckResult] = field(default_factory=list)
    broken: list[LoadError] = field(default_factory=list)
    failure: str = ""  # slopjudge itself could not check (unreadable payload, internal error)
    protected: str = ""  # the backstop: protected files changed, for a person to review
    rules: list[Rule] = field(default_factory=list)
    compared: str = ""

    @property
    def blocks(self) -> bool:
        return bool(self.refusals or self.errors or self.broken or self.failure
                    or self.protected)


HEAD_NOTE = "(No session baseline was recorded, so this compares HEAD with the work tree.)"
# Start records one for every session or says why not; without it, a change committed in
# the session would pass as HEAD.
NO_BASELINE = ("this session has no baseline (its start did not record one, or it was "
               "deleted), so slopjudge cannot tell what the session changed; it compared "
               "HEAD with the work tree")


def refusal_text(verdict: Verdict, workspace: str, where: str) -> str:
    """What blocks: the agent's to fix, protected files, then what only a person can fix."""
    by_id = {r.id: r for r in verdict.rules}
    parts: list[list[str]] = []
    if verdict.refusals:
        lines = ["slopjudge: the changes in this session do not pass these checks yet:"]
        for r in verdict.refusals:
            lines.append(f"- {r.id}: {common.result_reason(r, where)}")
            lines.extend(common.finding_lines(r.findings, workspace, "    "))
            rule = by_id.get(r.rule)
            if rule is not None and rule.description:
                lines.append(f"    rule {rule.id}: {' '.join(rule.description.split())}")
        parts.append([*lines, *([verdict.compared] if verdict.compared else []), CLOSING])
    if verdict.protected:
        parts.append([verdict.protected])
    if verdict.errors or verdict.broken or verdict.failure:
        parts.append([
            "slopjudge could not decide on these, so they block the stop too:" if verdict.refusals
            else "slopjudge could not check this session's changes, so the stop is blocked:",
            *([f"- {verdict.failure}"] if verdict.failure else []),
            *(f"- {r.id}: {common.result_reason(r, where)}" for r in verdict.errors),
            *(f"- {common.load_error_line(e, workspace)}" for e in verdict.broken),
            *([common.FIX_BY_PERSON] if verdict.broken else []), UNDECIDED])
    return "\n\n".join("\n".join(part) for part in parts)


def judge(kind: str, payload: dict[str, Any], settings: Any, changeset: Any,
          from_baseline: bool) -> Verdict:
    """What this stop finds in the session's ``changeset`` (the one the backstop read)."""
    from slopjudge.changes.agentevent import event_from_payload
    from slopjudge.checks import engine
    from slopjudge.checks.options import options_from_settings
    from slopjudge.checks.selection import applicable_rules
    from slopjudge.loading import rulecache
    from slopjudge.records.record import recording

    loaded = rulecache.load_rules_cached(settings)
    event = event_from_payload(kind, payload)
    rules = applicable_rules(loaded.rules, event, settings.workspace)
    results: list[CheckResult] = []
    if rules:
        results = engine.run(rules, event, changeset, workspace=settings.workspace,
                             options=options_from_settings(settings),
                             on_result=recording(settings.events_file, event))
    return Verdict(
        refusals=[r for r in results if r.outcome == "refuse"],
        errors=[r for r in results if r.outcome == "error"],
        broken=common.broken_rules(loaded.errors, settings.rules_dir, kind),
        rules=loaded.rules, compared="" if from_baseline else HEAD_NOTE,
    )


def _verdict(kind: str, payload: dict[str, Any] | None, problem: Exception | None,
             workspace: str, session_id: str | None) -> tuple[Verdict, Any]:
    """What this stop finds, and the settings (the defaults when they could not be read)."""
    from slopjudge.changes.gitio import Background
    from slopjudge.loading import config

    settings = config.Settings(workspace=workspace, rules_dir="", template_dirs=[])
    verdict = Verdict()
    with common.fail_closed() as failure:  # fail closed: block, once per turn
        settings = config.load_settings(workspace)
        hooks.set_deadline(settings.hook_timeout)
        # The backstop runs first, before any rule's code is loaded into this
        # process, and whether or not the rules load or the payload reads: an agent
        # that changed what judges it must not get past by breaking the judge too.
        reading = Background(backstop.check_session, settings, session_id)
        # The judging code (slopjudge's, not a rule's) imported while git reads.
        try:
            from slopjudge.checks import engine

            engine.import_ahead()
        except Exception:  # noqa: BLE001, S110 - an import that fails is judge()'s to report
            pass
        protected, session_cs, from_baseline = reading.result()
        verdict.protected = protected or ""
        # Rules a protected change may have rewritten are not run: their verdict
        # would be the agent's. (A changeset that could not be read is such a block.)
        if payload is not None and not verdict.protected:
            verdict = judge(kind, payload, settings, session_cs, from_baseline)
    if failure:
        verdict.failure = f"slopjudge could not check this session's changes: {failure.why}"
    elif payload is None:
        name = "Stop" if kind == "stop" else "SubagentStop"
        verdict.failure = (f"slopjudge could not read the {name} hook payload ({problem}), "
                           "so it could not check this session's changes")
    elif verdict.compared and session_id is not None:
        verdict.failure = NO_BASELINE
    return verdict, settings


def _answer(kind: str, verdict: Verdict, payload: dict[str, Any], session_id: str | None,
            retry: bool, agent: AgentHarness, settings: Any, workspace: str) -> int:
    """Block, let the turn end, or let it be, counting blocks in a row per session."""
    base, where = settings.state_dir, common.events_where(settings.events_file, workspace)
    agent_id = payload.get("agent_id")
    counter = "stop" if kind == "stop" else (
        f"subagent-{agent_id}" if isinstance(agent_id, str) and agent_id else "subagent")
    relay = state.relay_mark(base, session_id, counter)
    relayed = os.path.exists(relay)
    state.remove(relay)
    if not verdict.blocks:
        state.set_count(base, session_id, counter, 0)
        return 0
    # The agent was asked at the last stop to relay the notice: the turn ends (only for such
    # an agent, and never past a change to what judges it).
    if retry and relayed and not agent.end_notice("")[1] and not verdict.protected:
        return 0
    reason = refusal_text(verdict, workspace, where)
    count = (state.get_count(base, session_id, counter) if retry else 0) + 1
    if not verdict.refusals and count > 1:
        ending = "slopjudge: letting the turn end; the block stands, and a person must act on it"
    elif (cap := settings.stop_block_cap) > 0 and count >= cap:
        ending = (f"slopjudge: letting the turn end after {count} refusals in a row; the "
                  "refusal still stands")
    else:
        state.set_count(base, session_id, counter, count)
        common.emit(agent.stop_block(common.bound(reason, common.MAX_MESSAGE_CHARS, where)))
        return 0
    # The turn ends with the message for the person, in a form the agent shows; one that
    # shows none is asked to relay it, and the mark says so at the next stop.
    state.set_count(base, session_id, counter, 0)
    message = common.bound(f"{ending}:\n{reason}", common.MAX_MESSAGE_CHARS, where)
    print(message, file=sys.stderr, flush=True)
    answer, ends = agent.end_notice(message)
    if not ends:
        state.write_mark(relay, base)
    common.emit(answer)
    return 0


def main(kind: str, payload: dict[str, Any] | None, problem: Exception | None,
         agent: AgentHarness) -> int:
    data = payload or {}
    sid = data.get("session_id") if isinstance(data.get("session_id"), str) else None
    # An unreadable payload does not say whether this stop is a retry: a count left by
    # the last stop says it is.
    retry = common.flag(data, "stop_hook_active") or problem is not None
    hooks.stop_retry(retry)
    with common.fail_closed() as failure:
        workspace = common.find_workspace()
        verdict, settings = _verdict(kind, payload, problem, workspace, sid)
        return _answer(kind, verdict, data, sid, retry, agent, settings, workspace)
    # even the state files failed: still block
    reason = f"slopjudge could not check this session's changes: {failure.why}. {UNDECIDED}"
    try:
        common.emit(agent.stop_block(reason))
    except (OSError, ValueError) as exc:  # stdout closed or full: exit 2 blocks as well
        common.note(f"{reason.removeprefix('slopjudge ')} (the answer could not be written: "
                    f"{common.one_line(exc)})")
        return 2
    return 0
