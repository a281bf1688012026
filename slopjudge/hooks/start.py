"""SessionStart: record the session baseline and run the load check (docs/hooks.md). Never
blocks: every problem is reported and the hook exits 0. Empty stdin is the standalone load
check, not a problem.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from slopjudge.hooks import common, state

if TYPE_CHECKING:
    from slopjudge.harnesses.registry import AgentHarness


def record_baseline(settings: Any, session_id: str | None, source: object) -> None:
    """Keep the first baseline of a session (resume/compact keep theirs); record one otherwise."""
    base = settings.state_dir
    if session_id and source != "startup":
        try:
            if state.load_baseline(base, session_id):
                return
        except state.BaselineError:
            return  # kept for Stop to report: re-recording would accept what changed it
    from slopjudge.changes import gitio
    from slopjudge.hooks.backstop import leave_out_policy

    head = gitio.git(settings.workspace, ["rev-parse", "--verify", "-q", "HEAD^{commit}"],
                     ok=(0, 1)).decode().strip()
    # Left out as Stop leaves them out, or the baseline would hold what Stop cannot see.
    tree = gitio.snapshot_worktree(settings.workspace, leave_out_policy(settings),
                                   submodules=True)
    state.save_baseline(base, session_id, head or None, tree, gitio.internals(settings.workspace))


def load_check(settings: Any) -> tuple[str, str]:
    """The rules that do not load (empty when all do), and sloprail's count line."""
    from slopjudge.loading import rulecache

    loaded = rulecache.load_rules_cached(settings)
    count = len(loaded.rules) + len(loaded.preview_off)  # loaded, whether on or not
    summary = f"slopjudge: {count} rule{'' if count == 1 else 's'} loaded"
    done = ". This only checked that they load: no rule ran."
    if not loaded.errors:
        return "", summary + done
    text = "\n".join(
        ["slopjudge load check: these rules are NOT in force until fixed:"]
        + [f"- {common.load_error_line(e, settings.workspace)}" for e in loaded.errors]
        + ["A person must fix these rule files (`slopjudge validate` checks them); agents "
           "may not edit rules. Until then slopjudge blocks the tool calls a broken "
           "pre-tool rule could concern, and blocks the end of each turn once."])
    return text, f"{summary}, {len({e.path for e in loaded.errors})} could not load (above){done}"


def trust_lines(agent: AgentHarness) -> list[str]:
    """The installed hooks the agent would not run, said loudly at every session start
    (Codex skips an untrusted hook without a word)."""
    problems = agent.trust_problems(common.find_workspace())
    if not problems:
        return []
    common.note("WARNING: some of slopjudge's hooks will NOT run, so what they guard "
                "is not guarded:\n" + "\n".join(f"- {p}" for p in problems))
    return [f"slopjudge's hooks that do not run: {p}" for p in problems] + [
        "Tell the person that these slopjudge hooks do not run, so what they guard is not "
        "guarded, and that `slopjudge doctor` says how to turn them on."]


def seal_line(settings: Any, agent: str) -> str:
    """Whether the session is sealed, or how it is not; a failed check never reads as sealed."""
    from slopjudge.hooks import sealed

    with common.fail_closed() as failure:
        return sealed.report(settings, agent)
    return (f"slopjudge: this session is NOT known to be sealed: the agent's settings could "
            f"not be checked ({failure.why})")


def handle(payload: dict[str, Any], notes: list[str], agent: AgentHarness) -> int:
    from slopjudge.loading import config

    workspace = common.find_workspace()
    settings = config.load_settings(workspace)
    session_id = payload.get("session_id") if isinstance(payload.get("session_id"), str) else None
    if not os.path.exists(os.path.join(workspace, ".git")):
        common.note(f"{workspace} is not in a git repository, so there is no baseline to "
                    "compare with: the stop check cannot judge this session's changes (run "
                    "`git init` and commit to start)")
    else:
        try:
            record_baseline(settings, session_id, payload.get("source"))
        except Exception as exc:  # the load check still runs; stop falls back to HEAD
            common.note(f"could not record the session baseline ({common.one_line(exc)}); "
                        "the stop check will compare with HEAD")
    text, summary = load_check(settings)
    # In a session (not the standalone load check): sealed, or what the agent can reach.
    sealing = f"{seal_line(settings, agent.name)}\n" if payload else ""
    context = "\n".join(([text] if text else []) + notes + [summary])
    # In a session the person sees the notice (Claude Code's systemMessage), not stderr.
    answer = agent.start_answer(
        f"{sealing}{summary}" if payload else None,
        common.bound(context, 8000, "the output of `slopjudge validate`") if text or notes
        else None)
    if answer:
        common.emit(answer)
    # For a person at a terminal (and the hook log): the problems, then always the count.
    print(f"{text}\n" if text else "", f"{sealing}{summary}", sep="", file=sys.stderr, flush=True)
    return 0


def main(payload: dict[str, Any] | None, problem: Exception | None,
         agent: AgentHarness) -> int:
    if problem is not None and not isinstance(problem, common.EmptyPayload):
        common.note(f"could not read the SessionStart payload ({problem}); running the load "
                    "check, and recording the baseline without the session's id")
    notes: list[str] = []
    with common.fail_closed() as trust_failure:
        notes = trust_lines(agent)
    if trust_failure:
        common.note(f"could not check which hooks the agent trusts: {trust_failure.why}")
    with common.fail_closed() as failure:
        return handle(payload or {}, notes, agent)
    common.note(f"session start check failed: {failure.why}")
    return 0  # start never blocks
