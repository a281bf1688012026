#!/usr/bin/env python3
"""destructive-shell: refuse shell commands that destroy work or run code from the network."""

from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import hookio as hio  # noqa: E402
import shellparse as sp  # noqa: E402

FETCHERS = {"curl", "wget", "fetch", "http", "https", "iwr", "Invoke-WebRequest"}
INTERPRETERS = sp.SHELLS | {
    "python", "python3", "perl", "ruby", "node", "php", "pwsh", "powershell",
}
SAFE_VARS = {"HOME", "PWD", "TMPDIR"}
FORCE_PUSH_OPTS = ("--force", "--force-with-lease", "--force-if-includes", "--mirror")
# Patterns stay strings: compiled on first use (`re` keeps them), so a call that
# needs none does not pay for them.
SHORT_FORCE_OPT = r"-[a-zA-Z]*f[a-zA-Z]*"
# `sh <(curl ...)` and `sh -c "$(curl ...)"`
SHELL_RUNS_DOWNLOAD = (
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
        if sp.SUBST_MARK in t:
            if recursive:
                return (f"`rm -r` of a path built from a command's output ({t}), "
                        "which may be empty or point anywhere; name the path")
            continue
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
        if re.search(GLOB, t):
            reason = glob_at_root(t, p, ws, home)
            if reason:
                return f"`rm -r {t}` {reason}"
        if sp.inside(ws, p):
            if p == ws:
                return f"`rm -r {t}` deletes the workspace itself ({p})"
            return f"`rm -r {t}` deletes {p}, which holds the workspace"
        if sp.inside(p, ws):
            if sp.inside(p, os.path.join(ws, ".git")):
                return f"`rm -r {t}` deletes the repository's history (.git)"
            continue
        if sp.is_scratch(p, ws):
            continue
        return f"`rm -r {t}` deletes {p}, outside the workspace {ws}"
    return None


GLOB = r"[*?\[]"


def glob_at_root(t: str, p: str, ws: str, home: str) -> str | None:
    """Why a glob matches the whole of a protected folder (the workspace or an
    ancestor, home, /), or None: the folder is the part before the first glob."""
    parts = p.split("/")
    k = next(i for i, part in enumerate(parts) if re.search(GLOB, part))
    folder = "/".join(parts[:k]) or "/"
    if sp.inside(ws, folder) or folder == os.path.normpath(home):
        return f"matches everything in {folder}"
    if sp.inside(folder, os.path.join(ws, ".git")):
        return "deletes the repository's history (.git)"
    return None


# Tests that pick some files by name, age, size or owner; `-type` alone picks
# every file, so `find . -type f -delete` still wipes the workspace (and .git).
FIND_FILTERS = {"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex",
                "-iregex", "-newer", "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin",
                "-size", "-empty", "-user", "-group", "-nouser", "-nogroup", "-perm", "-links",
                "-inum", "-samefile", "-lname", "-ilname", "-newermt"}


def check_find(s: sp.Simple, ws: str, home: str) -> str | None:
    args = s.argv[1:]
    starts: list[str] = []
    i = 0
    while i < len(args) and args[i] in ("-L", "-H", "-P", "-O0", "-O1", "-O2", "-O3"):
        i += 1
    while i < len(args) and not (args[i].startswith("-") or args[i] in ("(", "!", ",")):
        starts.append(args[i])
        i += 1
    expr = args[i:]
    how = "-delete" if "-delete" in expr else ""
    for k, a in enumerate(expr):
        if a in ("-exec", "-execdir", "-ok", "-okdir") and k + 1 < len(expr):
            prog = os.path.basename(expr[k + 1])
            if prog in ("rm", "rmdir", "shred", "unlink"):
                how = how or f"{a} {prog}"
            if prog == "rm":
                # `-exec rm -rf / \;`: paths written after rm are removed as they stand,
                # whatever find matched ({} is find's match, judged by the start points).
                end = next((j for j in range(k + 1, len(expr)) if expr[j] in (";", "+")),
                           len(expr))
                inner = [w for w in expr[k + 1 : end] if w != "{}"]
                reason = check_rm(sp.Simple(inner, s.cwd), ws, home) if len(inner) > 1 else None
                if reason:
                    return reason
    if not how:
        return None
    filtered = any(a in FIND_FILTERS for a in expr)
    for t in starts or ["."]:
        if sp.SUBST_MARK in t or re.match(r"^\$\{?(?!HOME|PWD|TMPDIR)[A-Za-z_]", t):
            return (f"`find {t} ... {how}` deletes under a path named by a variable or a "
                    "command's output")
        p = sp.resolve(t, s.cwd, home)
        if p == "/" or p == os.path.normpath(home):
            return f"`find {t} ... {how}` deletes files across {p}"
        if sp.inside(p, os.path.join(ws, ".git")):
            return f"`find {t} ... {how}` deletes the repository's history (.git)"
        if sp.inside(ws, p):
            if p != ws:
                return f"`find {t} ... {how}` deletes under {p}, which holds the workspace"
            if not filtered:
                return (f"`find {t} ... {how}` deletes every file in the workspace ({p}); "
                        "pick the files with -name or -path")
            continue
        if sp.inside(p, ws) or sp.is_scratch(p, ws):
            continue
        return f"`find {t} ... {how}` deletes under {p}, outside the workspace {ws}"
    return None


# Device files that are safe to write to.
HARMLESS_DEVICES = (r"^/dev/(null|zero|full|stdout|stderr|stdin|tty|fd/\d+|"
                    r"pts/\d+|random|urandom)$")
DISK_TOOLS = ("mkfs", "mke2fs", "mkswap", "wipefs", "mkdosfs", "mkntfs", "fdisk", "sfdisk",
              "parted", "sgdisk", "blkdiscard")


def device(path: str) -> bool:
    path = os.path.normpath(path)
    return path.startswith("/dev/") and not re.match(HARMLESS_DEVICES, path)


def check_devices(s: sp.Simple, name: str) -> str | None:
    if name == "dd":
        for a in s.argv[1:]:
            if a.startswith("of=") and device(a[3:]):
                return f"`dd {a}` overwrites the device {a[3:]}"
    if name.startswith(DISK_TOOLS):
        for a in s.argv[1:]:
            if device(a):
                return f"`{name} {a}` destroys what is on the device {a}"
    if name in ("shred", "cp", "tee"):
        for a in s.argv[1:]:
            if device(a):
                return f"`{name} ... {a}` overwrites the device {a}"
    for op, target in s.redirects:
        if ">" in op and device(target):
            return f"a redirection `{op} {target}` overwrites the device {target}"
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
            if re.fullmatch(SHORT_FORCE_OPT, a):
                return f"`git push -f` {REWRITES_HISTORY}"
            if a.startswith("+") and len(a) > 1:
                return (
                    f"`git push {a}` (a + refspec) force-pushes; "
                    "push a new commit instead, or ask the person"
                )
    if sub == "clean":
        if "-n" in rest or "--dry-run" in rest:
            return None
        if "--force" in rest or any(re.fullmatch(SHORT_FORCE_OPT, a) for a in rest):
            return (
                "`git clean -f` deletes untracked files for good; "
                "delete the specific files by name, or ask the person"
            )
    if sub == "stash" and rest[:1] in (["drop"], ["clear"]):
        return (f"`git stash {rest[0]}` throws away stashed work for good; "
                "leave the stash, or ask the person")
    paths = rest[rest.index("--") + 1:] if "--" in rest else [a for a in rest
                                                               if not a.startswith("-")]
    everything = [p for p in paths if p in (".", "./", ":/", "*", ":(top)", "/") or p == "*.*"]
    if sub == "checkout" and ("--" in rest or everything) and everything:
        return (f"`git checkout ... {everything[0]}` discards every uncommitted change; "
                "name the files, or ask the person")
    if sub == "checkout" and ("-f" in rest or "--force" in rest):
        return ("`git checkout --force` discards uncommitted changes; "
                "commit or stash them first, or ask the person")
    if sub == "restore" and everything:
        staged_only = ("--staged" in rest or "-S" in rest) and not (
            "--worktree" in rest or "-W" in rest)
        if not staged_only:
            return (f"`git restore {everything[0]}` discards every uncommitted change; "
                    "name the files, or ask the person")
    if sub == "switch" and ("--discard-changes" in rest or "-f" in rest or "--force" in rest):
        return ("`git switch --discard-changes` throws away uncommitted work; "
                "commit or stash it first, or ask the person")
    return None


def main() -> None:
    payload = hio.load_payload()
    # Codex may send the command as an argv list: judged as the line it runs.
    command = sp.shell_text(hio.tool_input(payload).get("command"))
    if not command or not command.strip():
        sys.exit(0)
    ws = os.path.normpath(hio.workspace(payload))
    cwd = hio.event(payload).get("cwd") or ws
    home = os.path.expanduser("~")
    problems: list[str] = []
    if ("curl" in command or "wget" in command) and re.search(SHELL_RUNS_DOWNLOAD, command):
        problems.append(RUNS_DOWNLOAD)
    for s in sp.split(command, str(cwd), home):
        name = os.path.basename(s.argv[0])
        reason = None
        if name == "rm":
            reason = check_rm(s, ws, home)
        elif name == "find":
            reason = check_find(s, ws, home)
        elif name == "git":
            reason = check_git(s)
        elif (
            name in INTERPRETERS
            and s.piped_from
            and os.path.basename(s.piped_from[0]) in FETCHERS
        ):
            reason = f"`{s.piped_from[0]} ... | {name}` {RUNS_DOWNLOAD}"
        reason = reason or check_devices(s, name)
        if reason and reason not in problems:
            problems.append(reason)
    if problems:
        print(hio.dumps({
            "reason": "destructive command refused: " + "; ".join(problems) + ".",
            "findings": [{"path": None, "line": None, "message": p} for p in problems],
        }))
        sys.exit(1)
    sys.exit(0)


if __name__ == "__main__":
    hio.main_guard(main)
