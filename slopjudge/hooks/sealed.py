"""Sealed sessions (docs/security.md): the paths an agent must not reach, the Claude Code
settings that keep its shell (the sandbox) and file tools (deny rules) off them
(:func:`claude_settings`), and which of them the settings in effect leave open (:func:`gaps`).

Spelling, as Claude Code 2.1.332 reads it: a sandbox path is relative to the project root,
``~/`` to the home folder; in a permission rule ``//x`` is the absolute ``/x``, ``/x`` is
relative to the project root. Paths inside the project are written relative to it, so the
committed settings hold on a teammate's machine.
"""

from __future__ import annotations

import json
import os
import site
import sys
from typing import Any, NamedTuple

from slopjudge.harnesses.base import dig

DIR, FILE = "dir", "file"
# The settings that make a session sealed, beside the paths (Claude Code's names).
SANDBOX_ON = {"enabled": True, "failIfUnavailable": True, "allowUnsandboxedCommands": False}
MANAGED = "/etc/claude-code/managed-settings.json"


class Guarded(NamedTuple):
    path: str  # absolute, as this machine has it
    kind: str  # DIR or FILE


def claude_config_dir() -> str:
    return os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"),
                                                               ".claude")


def _install_paths() -> list[Guarded]:
    """slopjudge's package and its interpreter's virtualenv (or site-packages folders),
    whose ``.pth`` files run at start."""
    from slopjudge.resources import PACKAGE_DIR

    out = [Guarded(PACKAGE_DIR, DIR)]
    if sys.prefix != sys.base_prefix:
        out.append(Guarded(sys.prefix, DIR))  # a virtualenv: its site-packages and pyvenv.cfg
    else:
        out += [Guarded(p, DIR) for p in site.getsitepackages()]
        if site.ENABLE_USER_SITE:
            out.append(Guarded(site.getusersitepackages(), DIR))
    return out


def guarded(settings: Any) -> tuple[list[Guarded], list[Guarded]]:
    """(paths the agent must not write, paths it must not read), none inside another."""
    from slopjudge import cachesign
    from slopjudge.changes import gitio
    from slopjudge.hooks.backstop import protected

    ws = os.path.realpath(settings.workspace)
    files, trees = protected(settings)
    # The agents' whole folders, not their files among ``files`` (when a folder is a link,
    # those files resolve to outside it).
    write = [Guarded(os.path.join(ws, t), DIR) for t in sorted(trees)]
    write += [Guarded(os.path.join(ws, f), FILE) for f in sorted(files)
              if not f.startswith((".claude/", ".codex/"))]
    write += [Guarded(os.path.join(ws, ".claude"), DIR), Guarded(os.path.join(ws, ".codex"), DIR)]
    # The git folder's files that make git run a program: its config, hooks and info.
    common = gitio.git(ws, ["rev-parse", "--git-common-dir"]).decode().strip()
    write += [Guarded(os.path.join(ws, common, name), kind)
              for name, kind in (("config", FILE), ("hooks", DIR), ("info", DIR))]
    write += _install_paths()
    # The hook wrapper runs the first of these it finds: none may be planted.
    write += [Guarded(os.path.join(ws, v, "bin", "slopjudge"), FILE) for v in (".venv", "venv")]
    write.append(Guarded(os.path.join(os.path.expanduser("~"), ".local", "bin", "slopjudge"),
                         FILE))
    key = cachesign.key_path()
    write.append(Guarded(os.path.dirname(key), DIR))  # the key and the session marks
    write.append(Guarded(claude_config_dir(), DIR))
    if not os.environ.get("CLAUDE_CONFIG_DIR"):
        write.append(Guarded(os.path.join(os.path.expanduser("~"), ".claude.json"), FILE))
    return _outermost(write), [Guarded(key, FILE)]


def _real(path: str) -> str:
    """``path`` with the folders above it resolved, not the name itself: a link the
    wrapper runs (``.venv/bin/slopjudge``) is guarded where it is."""
    head, name = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(head), name) if name else os.path.realpath(head)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _outermost(paths: list[Guarded]) -> list[Guarded]:
    real = list(dict.fromkeys(Guarded(_real(p.path), p.kind) for p in paths))
    return [p for p in real if not any(q.kind == DIR and q.path != p.path
                                       and _under(p.path, q.path) for q in real)]


# --- the settings that seal ------------------------------------------------------------


def spell(path: str, workspace: str) -> str:
    """``path`` as a sandbox setting in the project's settings names it."""
    ws, home = os.path.realpath(workspace), os.path.realpath(os.path.expanduser("~"))
    if _under(path, ws):
        return os.path.relpath(path, ws)
    if _under(path, home) and path != home:
        return "~/" + os.path.relpath(path, home)
    return path


def rule(tool: str, g: Guarded, workspace: str) -> str:
    """The permission rule keeping ``tool`` (Read or Edit) off ``g``."""
    name = spell(g.path, workspace)
    if not name.startswith("~/"):  # /x: relative to the project root; //x: absolute
        name = "/" + name
    return f"{tool}({name}/**)" if g.kind == DIR else f"{tool}({name})"


def claude_settings(settings: Any) -> dict[str, Any]:
    """What ``install claude --sealed`` merges into ``.claude/settings.json``."""
    write, read = guarded(settings)
    ws = settings.workspace
    return {
        "sandbox": {**SANDBOX_ON, "filesystem": {
            "denyWrite": [spell(g.path, ws) for g in write],
            "denyRead": [spell(g.path, ws) for g in read]}},
        "permissions": {"deny": [rule("Edit", g, ws) for g in write]
                        + [rule("Read", g, ws) for g in read]},
    }


# --- which paths the settings in effect leave open ------------------------------------


def _sources(workspace: str) -> list[tuple[str, dict[str, Any]]]:
    """(base folder for relative paths, settings), user, project, local then managed (the
    lowest precedence first); ValueError for a file that cannot be read."""
    user, project = claude_config_dir(), os.path.join(workspace, ".claude")
    files = [(user, os.path.join(user, "settings.json")),
             (workspace, os.path.join(project, "settings.json")),
             (workspace, os.path.join(project, "settings.local.json")),
             (os.path.dirname(MANAGED), MANAGED)]
    out = []
    for base, path in files:
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path} cannot be read ({exc})") from None
        if isinstance(data, dict):
            out.append((base, data))
    return out


def _resolve(entry: str, base: str, workspace: str, *, rule_form: bool) -> str | None:
    """The absolute path a settings entry names; None for a glob slopjudge cannot place."""
    if any(c in entry for c in "*?[{"):
        return None
    if entry.startswith("~/") or entry == "~":
        return _real(os.path.expanduser(entry))
    if rule_form:  # //x: the absolute /x; /x: x under ``base``; x: under the project
        entry, base = (entry[1:], base) if entry.startswith("/") else (entry, workspace)
    return _real(os.path.join(base, entry))


def _covers(entries: list[tuple[str, str]], g: Guarded, workspace: str, *,
            tool: str | None) -> bool:
    """Whether one of ``entries`` ((entry, base)) covers ``g``: sandbox paths, or with a
    ``tool``, its permission rules (``Edit(/x/**)``, ``Edit(/x)``, ``Edit``)."""
    for entry, base in entries:
        if tool is None:
            where, whole = _resolve(entry, base, workspace, rule_form=False), True
        elif entry == tool:
            return True
        elif entry.startswith(tool + "(") and entry.endswith(")"):
            spec = entry[len(tool) + 1:-1]
            whole = spec.endswith("/**")
            where = _resolve(spec.removesuffix("/**"), base, workspace, rule_form=True)
        else:
            continue
        if where and (_under(g.path, where) if whole else where == g.path):
            return True
    return False


def _sandbox_problems(sources: list[tuple[str, dict[str, Any]]]) -> list[str]:
    def effective(key: str) -> Any:  # the last source that sets it decides
        values = [dig(data, "sandbox", key) for _base, data in sources]
        return next((v for v in reversed(values) if v is not None), None)

    problems = [f"sandbox.{k} is not {json.dumps(v)}" for k, v in SANDBOX_ON.items()
                if effective(k) is not v]
    for keys, why in ((("filesystem", "disabled"), "turns filesystem confinement off"),
                      (("enableWeakerNestedSandbox",), "exposes the host's /proc"),
                      (("allowNestedUserNamespaces",), "lets a command undo the sandbox")):
        if any(dig(d, "sandbox", *keys) is True for _b, d in sources):
            problems.append(f"sandbox.{'.'.join(keys)} is true: it {why}")
    excluded = [c for _b, d in sources for c in (dig(d, "sandbox", "excludedCommands") or [])]
    if excluded:
        problems.append("sandbox.excludedCommands runs these outside the sandbox: "
                        + ", ".join(map(str, excluded)))
    return problems


def gaps(settings: Any) -> list[str]:
    """How the agent can reach a guarded path under the settings in effect (none: sealed)."""
    ws = settings.workspace
    sources = _sources(ws)
    unboxed = _sandbox_problems(sources)  # why the sandbox does not hold the shell at all
    reach: dict[str, list[str]] = {}  # "its shell can write" -> the paths, ...

    def listed(*keys: str) -> list[tuple[str, str]]:
        return [(e, base) for base, d in sources for e in (dig(d, *keys) or [])
                if isinstance(e, str)]

    deny_rules = listed("permissions", "deny")
    write, read = guarded(settings)
    for verb, paths, sandbox_key, tool in (("write", write, "denyWrite", "Edit"),
                                           ("read", read, "denyRead", "Read")):
        boxed = listed("sandbox", "filesystem", sandbox_key)
        shell = reach.setdefault(f"its shell can {verb}", [])
        tools = reach.setdefault(f"its file tools can {verb}", [])
        for g in paths:
            ruled = _covers(deny_rules, g, ws, tool=tool)
            # Claude Code adds the Edit and Read deny rules to the sandbox's lists.
            if unboxed or not (ruled or _covers(boxed, g, ws, tool=None)):
                shell.append(spell(g.path, ws))
            if not ruled:
                tools.append(spell(g.path, ws))
    return unboxed + [f"{who}: {', '.join(paths)}" for who, paths in reach.items() if paths]


def report(settings: Any, agent: str) -> str:
    """The line ``hook start`` gives the person: sealed, or what the agent can reach."""
    if agent != "claude":
        return (f"slopjudge: this session is NOT sealed: slopjudge cannot configure {agent}'s "
                "sandbox, so the agent's shell can reach the rules, slopjudge's install, "
                "state and key (docs/security.md)")
    found = gaps(settings)
    if not found:
        return ("slopjudge: this session is sealed: Claude Code's sandbox and deny rules keep "
                "the agent from the rules, settings, git internals, slopjudge's install, "
                "state and key")
    return ("slopjudge: this session is NOT sealed (`slopjudge install claude --sealed` seals "
            "it): " + "; ".join(found))
