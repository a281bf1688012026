"""``slopjudge doctor``: are slopjudge's hooks installed, and will the agent run them (Codex
runs an untrusted hook not at all)? Each problem with its remedy; exit 1 when any."""

from __future__ import annotations

import argparse
import json
import os
import shlex
from typing import Any

from slopjudge.commands.install import InstallError, _read, wrapper_command, wrapper_relpath
from slopjudge.harnesses.base import Hook, is_ours, timed
from slopjudge.harnesses.registry import HARNESSES, AgentHarness
from slopjudge.loading.config import Settings, find_workspace, load_settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", metavar="DIR", help="repository to check "
                        "(default: the one holding the current directory)")


def check(workspace: str, agent: AgentHarness,
          hook_timeout: int) -> tuple[str | None, list[str]] | None:
    """(what is in place, what is wrong) for ``agent``; None when none of its hooks is there."""
    shown = os.path.join(*agent.settings_relpath)
    try:
        settings = _read(os.path.join(workspace, shown))
    except InstallError as exc:
        return None, [str(exc)]
    hooks = settings.get("hooks")
    hooks = hooks if isinstance(hooks, dict) else {}
    found, problems = [], []
    uses_wrapper = False
    for hook in timed(agent.hooks, hook_timeout):
        groups = hooks.get(hook[0])
        mine = [(g, h) for g in (groups if isinstance(groups, list) else [])
                if isinstance(g, dict) and isinstance(g.get("hooks"), list)
                for h in g["hooks"] if is_ours(h, hook[1])]
        for group, handler in mine:
            problems += _differences(shown, agent, hook, group, handler)
        if mine:
            found.append(hook[0])
            uses_wrapper |= any(h["command"].startswith(wrapper_command(agent)) for _g, h in mine)
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
    return f"{agent.name}: {len(found)} hooks in {shown} ({', '.join(found)})", problems


def _differences(shown: str, agent: AgentHarness, hook: Hook, group: dict[str, Any],
                 handler: dict[str, Any]) -> list[str]:
    """How slopjudge's hook differs from what install writes in ways that let the agent act
    unchecked: a narrower matcher, a shorter timeout, or answers in another agent's form."""
    event, point, matcher, timeout = hook
    fix = f"run `slopjudge install {agent.name}`"
    problems = []
    if group.get("matcher") != matcher:
        problems.append(f"{shown}: slopjudge's {event} hook has matcher "
                        f"{json.dumps(group.get('matcher'))}, not {json.dumps(matcher)}, so "
                        f"it does not see every call: {fix}")
    got = handler.get("timeout")
    if not isinstance(got, int | float) or isinstance(got, bool) or got < timeout:
        problems.append(f"{shown}: slopjudge's {event} hook has timeout {json.dumps(got)}, "
                        f"below {timeout} s (the hook's deadline follows `hook_timeout`); the "
                        f"agent goes on when it times out: {fix}")
    words = shlex.split(handler["command"])  # is_ours split it already
    harness = words[-1] if len(words) >= 2 and words[-2] == "--harness" else "claude"
    if harness != agent.name:
        problems.append(f"{shown}: slopjudge's {event} hook answers as {harness}, not "
                        f"{agent.name}, so {agent.name} may not act on it: {fix}")
    return problems


def run(args: argparse.Namespace) -> int:
    workspace = os.path.abspath(args.workspace) if args.workspace else find_workspace(os.getcwd())
    broken = False
    try:
        hook_timeout = load_settings(workspace).hook_timeout
    except ValueError as exc:  # a broken settings file: the rest is still worth saying
        print(f"slopjudge: PROBLEM: {exc}; the hooks' timeouts are checked against the default")
        hook_timeout, broken = Settings.hook_timeout, True
    results = [(agent, check(workspace, agent, hook_timeout)) for agent in HARNESSES.values()]
    installed = [(agent, result) for agent, result in results if result is not None]
    if not installed:
        print(f"slopjudge: no agent hooks of slopjudge's in {workspace} "
              f"(`slopjudge install {'|'.join(HARNESSES)}` adds them)")
        return 1
    for agent, (found, problems) in installed:
        if found:
            print(f"slopjudge: {found}")
        for problem in problems:
            print(f"slopjudge: PROBLEM ({agent.name}): {problem}")
        if not problems:
            print(f"slopjudge: {agent.name}: nothing known keeps the agent from running them")
    return 1 if broken or any(problems for _agent, (_found, problems) in installed) else 0
