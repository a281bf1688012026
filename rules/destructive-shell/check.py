#!/usr/bin/env python3
"""destructive-shell: refuse shell commands that destroy work or run code from the network."""

from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import shellparse as sp  # noqa: E402
import slopscan as ss  # noqa: E402

FETCHERS = {"curl", "wget", "fetch", "http", "https", "iwr", "Invoke-WebRequest"}
INTERPRETERS = sp.SHELLS | {
    "python", "python3", "perl", "ruby", "node", "php", "pwsh", "powershell",
}
SAFE_VARS = {"HOME", "PWD", "TMPDIR"}
FORCE_PUSH_OPTS = ("--force", "--force-with-lease", "--force-if-includes", "--mirror")
SHORT_FORCE_OPT = re.compile(r"-[a-zA-Z]*f[a-zA-Z]*")
# `sh <(curl ...)` and `sh -c "$(curl ...)"`
SHELL_RUNS_DOWNLOAD = re.compile(
    r"\b(ba|z|da|k)?sh\s+(-\w+\s+)*<\(\s*(curl|wget)\b"
    r"|\b(ba|z|da|k)?sh\s+-c\s+[\"']?\$\(\s*(curl|wget)\b"
)
RUNS_DOWNLOAD = (
    "runs a script downloaded from the network; download it, read it, then run the file"
)
REWRITES_HISTORY = "rewrites shared history; push a new commit instead, or ask the person"


def check_rm(s: sp.Simple, ws: str, home: str) -> str | None:
    args = s.argv[1:]
    opts, targets, after_dd = [], [], False
    for a in args:
        if a == "--" and not after_dd:
            after_dd = True
        elif a.startswith("-") and not after_dd and a != "-":
            opts.append(a)
        else:
            targets.append(a)
    recursive = any(
        o in ("--recursive",) or (not o.startswith("--") and set(o[1:]) & {"r", "R"})
        for o in opts
    )
    for t in targets:
        var = re.match(r"^\$\{?([A-Za-z_][A-Za-z0-9_]*)", t)
        if var and var.group(1) not in SAFE_VARS:
            if recursive:
                return (
                    f"`rm -r {t}` deletes a path named by ${var.group(1)}, "
                    "which may be empty or point anywhere"
                )
            continue
        p = sp.resolve(t, s.cwd, home)
        if var and var.group(1) == "TMPDIR":
            p = os.path.normpath(os.environ.get("TMPDIR", "/tmp") + t[len(var.group(0)):])
        if p == "/" or p == os.path.normpath(home) or t in ("~", "/*", "~/*"):
            return f"`rm {' '.join(opts)} {t}` would delete {p}"
        if not recursive:
            continue
        if sp.inside(ws, p):
            return f"`rm -r {t}` deletes the workspace itself ({p})"
        if sp.inside(p, ws):
            if sp.inside(p, os.path.join(ws, ".git")):
                return f"`rm -r {t}` deletes the repository's history (.git)"
            continue
        if sp.is_scratch(p, ws):
            continue
        return f"`rm -r {t}` deletes {p}, outside the workspace {ws}"
    return None


def check_git(s: sp.Simple) -> str | None:
    args = s.argv[1:]
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    if i >= len(args):
        return None
    sub, rest = args[i], args[i + 1 :]
    if sub == "reset" and "--hard" in rest:
        return (
            "`git reset --hard` throws away uncommitted work; "
            "commit or `git stash` it, or ask the person"
        )
    if sub == "push":
        for a in rest:
            if a in FORCE_PUSH_OPTS or a.startswith("--force-with-lease="):
                return f"`git push {a}` {REWRITES_HISTORY}"
            if SHORT_FORCE_OPT.fullmatch(a):
                return f"`git push -f` {REWRITES_HISTORY}"
            if a.startswith("+") and len(a) > 1:
                return (
                    f"`git push {a}` (a + refspec) force-pushes; "
                    "push a new commit instead, or ask the person"
                )
    if sub == "clean":
        if "-n" in rest or "--dry-run" in rest:
            return None
        if "--force" in rest or any(SHORT_FORCE_OPT.fullmatch(a) for a in rest):
            return (
                "`git clean -f` deletes untracked files for good; "
                "delete the specific files by name, or ask the person"
            )
    if sub in ("checkout", "restore") and rest[-1:] == ["."] and ("--" in rest or sub == "restore"):
        return (
            f"`git {sub} ... .` discards every uncommitted change; "
            "name the files, or ask the person"
        )
    return None


def main() -> None:
    payload = ss.load_payload()
    command = ss.tool_input(payload).get("command")
    if not isinstance(command, str) or not command.strip():
        sys.exit(0)
    ws = os.path.normpath(ss.workspace(payload))
    cwd = ss.event(payload).get("cwd") or ws
    home = os.path.expanduser("~")
    problems: list[str] = []
    if SHELL_RUNS_DOWNLOAD.search(command):
        problems.append(RUNS_DOWNLOAD)
    for s in sp.split(command, str(cwd), home):
        name = os.path.basename(s.argv[0])
        reason = None
        if name == "rm":
            reason = check_rm(s, ws, home)
        elif name == "git":
            reason = check_git(s)
        elif (
            name in INTERPRETERS
            and s.piped_from
            and os.path.basename(s.piped_from[0]) in FETCHERS
        ):
            reason = f"`{s.piped_from[0]} ... | {name}` {RUNS_DOWNLOAD}"
        if reason and reason not in problems:
            problems.append(reason)
    if problems:
        import json
        print(json.dumps({
            "reason": "destructive command refused: " + "; ".join(problems) + ".",
            "findings": [{"path": None, "line": None, "message": p} for p in problems],
        }))
        sys.exit(1)
    sys.exit(0)


if __name__ == "__main__":
    ss.main_guard(main)
