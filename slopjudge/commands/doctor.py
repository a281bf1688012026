"""``slopjudge doctor [--workspace DIR]``: are slopjudge's hooks installed, and will the
agent run them?

For each agent whose settings hold slopjudge's hooks: which are there, whether the
wrapper they call is in place, and what keeps the agent from running them (Codex runs
a hook only once the project and the hook are trusted, and a changed hook command is
untrusted again), each with its remedy. Exit 0 when nothing stands in the way, 1 when
something does.
"""

from __future__ import annotations

import argparse
import os

from slopjudge.harnesses.registry import HARNESSES, AgentHarness


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", metavar="DIR",
                        help="repository to check (default: the one holding the current "
                             "directory)")


def check(workspace: str, agent: AgentHarness) -> tuple[list[str], list[str]] | None:
    """(what is in place, what is wrong) for ``agent``; None when none of its hooks is there."""
    from slopjudge.commands.install import InstallError, _read, wrapper_command, wrapper_relpath
    from slopjudge.harnesses.base import is_ours

    path = os.path.join(workspace, *agent.settings_relpath)
    shown = os.path.relpath(path, workspace)
    try:
        settings = _read(path)
    except InstallError as exc:
        return [], [str(exc)]
    hooks = settings.get("hooks")
    hooks = hooks if isinstance(hooks, dict) else {}
    found, problems = [], []
    uses_wrapper = False
    for event, point, _matcher, _timeout in agent.hooks:
        groups = hooks.get(event)
        groups = groups if isinstance(groups, list) else []
        mine = [h for g in groups if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                for h in g["hooks"] if is_ours(h, point)]
        if mine:
            found.append(event)
            uses_wrapper |= any(h["command"].startswith(wrapper_command(agent)) for h in mine)
    if not found:
        return None
    missing = [e for e, *_ in agent.hooks if e not in found]
    if missing:
        problems.append(f"{shown} lacks slopjudge's {', '.join(missing)} hook"
                        f"{'s' if len(missing) > 1 else ''}: run `slopjudge install {agent.name}`")
    wrapper = os.path.join(workspace, *wrapper_relpath(agent))
    if uses_wrapper and not os.access(wrapper, os.X_OK):
        problems.append(f"the hooks call {os.path.relpath(wrapper, workspace)}, which is "
                        f"missing or not executable: run `slopjudge install {agent.name}`")
    problems += agent.trust_problems(workspace)
    return [f"{agent.name}: {len(found)} hooks in {shown} ({', '.join(found)})"], problems


def run(args: argparse.Namespace) -> int:
    from slopjudge.loading.config import find_workspace

    workspace = os.path.abspath(args.workspace) if args.workspace else find_workspace(os.getcwd())
    any_found, bad = False, False
    for agent in HARNESSES.values():
        result = check(workspace, agent)
        if result is None:
            continue
        any_found = True
        found, problems = result
        for line in found:
            print(f"slopjudge: {line}")
        for problem in problems:
            bad = True
            print(f"slopjudge: PROBLEM ({agent.name}): {problem}")
        if not problems:
            print(f"slopjudge: {agent.name}: nothing known keeps the agent from running them")
    if not any_found:
        print(f"slopjudge: no agent hooks of slopjudge's in {workspace} "
              f"(`slopjudge install {'|'.join(HARNESSES)}` adds them)")
        return 1
    return 1 if bad else 0
