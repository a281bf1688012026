"""``slopjudge install|uninstall claude|codex``: the hooks in ``.claude/settings.json`` or
``.codex/hooks.json`` (docs/hooks.md), by default calling a wrapper committed beside them:
an absolute path into one person's virtualenv does not exist on a teammate's machine, and
an agent lets every tool run when a hook command cannot start (``data/hook-wrapper.sh``
finds slopjudge and fails closed)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from slopjudge import cachesign
from slopjudge.commands._shared import fail, require_git
from slopjudge.errors import ChangesetError, SlopjudgeError
from slopjudge.fsutil import Unreadable, read_if_present, read_or, which, write_atomic
from slopjudge.harnesses.base import dig, hook_command, is_ours, timed
from slopjudge.harnesses.registry import HARNESSES, HOOKS, AgentHarness, Hook
from slopjudge.loading.config import display_path, find_workspace, load_settings
from slopjudge.resources import data_path

WRAPPER_TEMPLATE = data_path("hook-wrapper.sh")
WRAPPER_MARK = "# slopjudge hook wrapper (written by `slopjudge install"


def wrapper_relpath(harness: AgentHarness) -> tuple[str, ...]:
    return (harness.settings_relpath[0], "hooks", "slopjudge")


def wrapper_command(harness: AgentHarness) -> str:
    return f'"{harness.root}"/' + "/".join(wrapper_relpath(harness))


class InstallError(SlopjudgeError):
    """A settings file slopjudge will not touch; ``str()`` is one line."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("harness", choices=sorted(HARNESSES), help="the agent to install hooks for")
    parser.add_argument("--print", dest="print_only", action="store_true",
                        help="print the hooks snippet as JSON; write nothing")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--absolute", action="store_true",
                     help="call this machine's slopjudge by its absolute path instead of the "
                          "committed wrapper (for a single machine)")
    how.add_argument("--command", dest="hook_command", metavar="CMD",
                     help="call slopjudge with this command instead of the wrapper")
    parser.add_argument("--workspace", metavar="DIR", help="repository to install into "
                        "(default: the one holding the current directory)")
    parser.add_argument("--sealed", action="store_true",
                        help="also configure the agent's sandbox so that its shell and file "
                             "tools cannot reach the rules, settings, git internals or "
                             "slopjudge's install, state and key (Claude Code only)")


def default_command() -> str:
    """The slopjudge script beside this interpreter, so hooks work without PATH."""
    from slopjudge.judging.verifier import _installed

    if found := _installed("slopjudge") or which("slopjudge"):
        return shlex.quote(os.path.abspath(found))
    return f"{shlex.quote(sys.executable)} -m slopjudge"


def merge(settings: dict[str, Any], command: str,
          events: tuple[Hook, ...] = HOOKS, harness: str = "claude") -> dict[str, Any]:
    """``settings`` with slopjudge's hooks set (Codex reads this shape too), the rest kept."""
    _merge_in(settings, {"hooks": {event: [] for event, *_ in events}}, [], [])
    for event, point, matcher, timeout in events:
        groups = settings["hooks"][event]
        handler = {"type": "command", "command": hook_command(command, point, harness),
                   "timeout": timeout}
        if not _take_ours(groups, point, (matcher, handler))[1]:
            groups.append({**({"matcher": matcher} if matcher is not None else {}),
                           "hooks": [handler]})
    return settings


def _take_ours(groups: list[Any], point: str,
               new: tuple[str | None, dict[str, Any]] | None = None) -> tuple[int, bool]:
    """Take slopjudge's handlers for ``point`` out of ``groups`` (a group left empty goes
    too), but with ``new`` (matcher, handler) replace the first in a group of that matcher
    in place; how many were taken, and whether one was replaced."""
    taken, placed = 0, False
    for group in list(groups):
        if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
            continue
        kept = []
        for handler in group["hooks"]:
            if not is_ours(handler, point):
                kept.append(handler)
            elif new is not None and not placed and group.get("matcher") == new[0]:
                kept.append(new[1])
                placed = True
            else:
                taken += 1  # a stale or duplicate slopjudge entry
        if kept != group["hooks"]:
            group["hooks"] = kept
            if not kept:
                groups.remove(group)
    return taken, placed


def _read(path: str) -> dict[str, Any]:
    shown = display_path(path)
    try:
        text = read_if_present(path) or b""
        data = json.loads(text) if text.strip() else {}
    except Unreadable as exc:
        raise InstallError(f"{shown}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InstallError(f"{shown}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}; "
                           "left untouched") from None
    if not isinstance(data, dict):
        raise InstallError(f"{shown}: not a JSON object; left untouched")
    return data


def _write(path: str, data: dict[str, Any]) -> None:
    write_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _rewrite(path: str, change: Callable[[dict[str, Any]], object]) -> None:
    """The JSON file at ``path`` read, changed and written in one go, or left as it is."""
    data = _read(path)
    try:
        change(data)
    except InstallError as exc:
        raise InstallError(f"{display_path(path)}: {exc}; left untouched") from None
    _write(path, data)


def write_wrapper(workspace: str, harness: str) -> None:
    """The hook wrapper for ``harness``, unless a file slopjudge did not write is there."""
    path = os.path.join(workspace, *wrapper_relpath(HARNESSES[harness]))
    text = Path(WRAPPER_TEMPLATE).read_text(encoding="utf-8").replace("@HARNESS@", harness)
    if os.path.lexists(path):
        try:
            current = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise InstallError(f"{display_path(path)}: cannot read: {exc.strerror or exc}; "
                               "left untouched") from None
        if os.path.islink(path) or WRAPPER_MARK not in current:
            raise InstallError(f"{display_path(path)}: exists and was not written by "
                               "slopjudge; left untouched (move it away, or use --absolute)")
        if current == text and os.access(path, os.X_OK):
            return
    write_atomic(path, text, mode=0o755)


# What `install --sealed` changed in .claude/settings.json, for uninstall to take out exactly
# that: each entry added, each value set (with the one before), each object or list made.
SEAL_RECORD = (".claude", "slopjudge-sealed.json")


def _merge_in(node: dict[str, Any], want: dict[str, Any], path: list[str],
              ops: list[list[Any]]) -> None:
    """``want`` merged into ``node``, objects and lists made where missing (InstallError
    where one is of another type); each change recorded in ``ops``."""
    for key, value in want.items():
        here = [*path, key]
        if isinstance(value, (dict, list)):
            if key not in node:
                node[key] = type(value)()
                ops.append(["made", here])
            if type(node[key]) is not type(value):
                kind = "an object" if isinstance(value, dict) else "a list"
                raise InstallError(f'"{".".join(here)}" is not {kind}')
            if isinstance(value, dict):
                _merge_in(node[key], value, here, ops)
                continue
            for item in value:
                if item not in node[key]:
                    node[key].append(item)
                    ops.append(["added", here, item])
        elif key not in node or node[key] is not value:
            ops.append(["set", here, value, *([node[key]] if key in node else [])])
            node[key] = value


def _unmerge_sealed(data: dict[str, Any], ops: list[list[Any]]) -> None:
    """Undo ``ops`` in reverse; what the person changed since is left as it is."""
    for op in reversed(ops):
        *above, key = op[1]
        parent = dig(data, *above)
        if not isinstance(parent, dict) or key not in parent:
            continue
        if op[0] == "added" and isinstance(parent[key], list) and op[2] in parent[key]:
            parent[key].remove(op[2])
        elif op[0] == "set" and parent[key] is op[2]:
            if len(op) > 3:
                parent[key] = op[3]
            else:
                del parent[key]
        elif op[0] == "made" and parent[key] in ({}, []):
            del parent[key]


def _read_record(workspace: str) -> list[list[Any]]:
    path = os.path.join(workspace, *SEAL_RECORD)
    ops = _read(path).get("ops", [])
    if not isinstance(ops, list) or not all(
            isinstance(op, list) and len(op) >= 2 and op[0] in ("made", "added", "set")
            and isinstance(op[1], list) and op[1] for op in ops):
        raise InstallError(f"{display_path(path)}: not a record slopjudge wrote; left untouched")
    return ops


def seal(workspace: str, settings: Any,
         also: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], None]:
    """``also`` (the hooks), then Claude Code's sandbox and deny rules for a sealed session
    (:mod:`slopjudge.hooks.sealed`): one change, so a file either cannot take is untouched."""
    from slopjudge.hooks import sealed  # about 10 ms: only --sealed needs it

    if cachesign.key() is None:  # made now, so the sandbox has a file to hide
        raise InstallError(f"slopjudge's key {cachesign.key_path()} cannot be read or made "
                           "safely, so nothing can be sealed")
    ops = _read_record(workspace)

    def change(data: dict[str, Any]) -> None:
        also(data)
        _merge_in(data, sealed.claude_settings(settings), [], ops)
        lines = ",\n".join(f"  {json.dumps(op, ensure_ascii=False)}" for op in ops)
        write_atomic(os.path.join(workspace, *SEAL_RECORD), f'{{"ops": [\n{lines}\n]}}\n')

    return change


def run(args: argparse.Namespace) -> int:
    target = HARNESSES[args.harness]
    if args.sealed and args.harness != "claude":
        return fail("codex cannot be sealed: its sandbox settings (sandbox_mode, "
                    "[sandbox_workspace_write] writable_roots) can only add folders it may "
                    "write, so they cannot keep its shell from writing the rules, .slopjudge/ "
                    "or the .venv inside the project, nor from reading slopjudge's key; "
                    "install without --sealed (docs/security.md says what that leaves open)")
    command = args.hook_command or (default_command() if args.absolute else None)
    shown = command or wrapper_command(target)
    if args.print_only and args.sealed:
        return fail("--sealed writes paths of this machine and project; run it without "
                    "--print (`slopjudge uninstall claude` takes it out again)")
    workspace = os.path.abspath(args.workspace) if args.workspace else find_workspace(os.getcwd())
    # The timeout each hook's deadline follows (a longer one in the agent's settings alone
    # would let a call through between the two).
    settings = load_settings(workspace)
    hooks = timed(target.hooks, settings.hook_timeout)
    if args.print_only:
        print(json.dumps(merge({}, shown, hooks, target.name), indent=2))
        if command is None:
            print(f"slopjudge: these hooks call {'/'.join(wrapper_relpath(target))}, which "
                  f"`slopjudge install {args.harness}` writes", file=sys.stderr)
        for line in target.install_notes(""):
            print(line, file=sys.stderr)
        return 0
    require_git(workspace, "no hooks were installed")
    path = os.path.join(workspace, *target.settings_relpath)
    add_hooks = functools.partial(merge, command=shown, events=hooks, harness=args.harness)
    if command is None:  # the hooks call the wrapper, written first
        write_wrapper(workspace, args.harness)
    _rewrite(path, seal(workspace, settings, add_hooks) if args.sealed else add_hooks)
    print(f"slopjudge: hooks installed in {os.path.relpath(path)} (command: {shown})")
    if args.sealed:
        from slopjudge.hooks import sealed  # about 10 ms: only --sealed needs it

        print("slopjudge: Claude Code's sandbox (bubblewrap and socat on Linux) now runs every "
              "shell command; without it Claude Code will not start. Commit "
              f"{'/'.join(SEAL_RECORD)} with the settings: `slopjudge uninstall claude` reads it")
        try:
            print(sealed.report(settings, "claude"))
        except (ValueError, OSError, ChangesetError) as exc:  # a settings file, git
            print(f"slopjudge: could not check what the settings in effect leave open: {exc}")
    if command is None:
        print(f"slopjudge: commit {'/'.join(wrapper_relpath(target))} with the settings: it "
              "finds slopjudge on each machine and blocks writes where it is not installed")
    for line in target.install_notes(workspace):
        print(line)
    for problem in target.trust_problems(workspace):
        print(f"slopjudge: {problem}")
    return 0


def unmerge(settings: dict[str, Any], events: tuple[Hook, ...]) -> int:
    """Take slopjudge's hooks out of ``settings`` (and what that leaves empty); how many."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return 0
    removed = 0
    for event, point, _matcher, _timeout in events:
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        taken = _take_ours(groups, point)[0]
        removed += taken
        if not groups and taken:  # an empty list the person wrote stays
            del hooks[event]
    if not hooks and removed:
        del settings["hooks"]
    return removed


def uninstall(workspace: str, harness: str) -> tuple[int, list[str]]:
    """Remove slopjudge's hooks, wrapper and seal for ``harness``: how many hooks, and the
    files changed or removed (a settings file left empty too)."""
    target = HARNESSES[harness]
    path = os.path.join(workspace, *target.settings_relpath)
    touched: list[str] = []
    data = _read(path)
    removed = unmerge(data, target.hooks)
    record = os.path.join(workspace, *SEAL_RECORD)
    unseal = harness == "claude" and os.path.lexists(record)
    if unseal:
        _unmerge_sealed(data, _read_record(workspace))
    if (removed or unseal) and (data or os.path.lexists(path)):
        if data:
            _write(path, data)
        else:
            os.unlink(path)
        touched.append(path)
    if unseal:
        os.unlink(record)
        touched.append(record)
    wrapper = os.path.join(workspace, *wrapper_relpath(target))
    if WRAPPER_MARK.encode() in read_or(wrapper, b"") and not os.path.islink(wrapper):
        os.unlink(wrapper)
        touched.append(wrapper)
        with contextlib.suppress(OSError):  # the hooks folder, when nothing else is in it
            os.rmdir(os.path.dirname(wrapper))
    return removed, touched
