"""Split a shell command line into simple commands, well enough to judge them.

Not a shell: it splits on `;`, `&&`, `||`, `|`, `&` and newlines, follows
`cd`, unwraps `sudo`, `env`, `nohup`, `time`, `command`, `exec`, `xargs`,
`VAR=value` prefixes, and recurses into `sh -c '...'`, `bash -c`, `eval` and
`$(...)`. Pipes are kept so `curl ... | sh` can be seen.

A command substitution inside a word is replaced by a placeholder before
splitting (`$(pwd)` and `` `pwd` `` by `$PWD`, any other by `SUBST_MARK`), so
`rm -rf $(pwd)/..` stays one command with one target. Here-document bodies
are cut out of the command and kept on the command that reads them.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

WRAPPERS = {
    "sudo", "doas", "env", "nohup", "time", "command", "exec", "nice", "ionice", "timeout",
    "stdbuf", "xargs", "builtin", "unbuffer",
}
# The common wrapper options that take an argument (skipped along with the option).
_SUDO_ARG_OPTS = ("-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t")
_RUNNER_ARG_OPTS = ("-n", "-c", "-s", "-k", "-I", "-P", "-L")
WRAPPER_ARG_OPTS = {
    "sudo": _SUDO_ARG_OPTS,
    "doas": _SUDO_ARG_OPTS,
    "env": ("-u", "-C", "-S"),
    "nice": _RUNNER_ARG_OPTS,
    "ionice": _RUNNER_ARG_OPTS,
    "timeout": _RUNNER_ARG_OPTS,
    "xargs": _RUNNER_ARG_OPTS,
}
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish"}
SEPARATORS = {";", "&&", "||", "&", "\n", ";;", "(", ")", "{", "}"}
REDIRECT_OPS = (">", ">>", ">|", "<", "&>", "&>>", "<<", "<<<", ">&")
REDIRECT_FD_RE = re.compile(r"\d?[<>]{1,2}&?")  # 2>, 1>>, 2>& ...


SUBST_MARK = "$__command_output__"  # stands for a `$(...)` whose output is unknown
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
_PWD_SUBST = re.compile(r"^\s*pwd(\s+-[LP])?\s*$")


@dataclass
class Simple:
    argv: list[str]
    cwd: str  # the working directory the command would run in, `cd` followed
    piped_from: list[str] | None = None  # argv of the command whose output feeds this one
    redirects: list[tuple[str, str]] = field(default_factory=list)  # (operator, target)
    heredoc: str = ""  # the here-document bodies this command reads


def cut_heredocs(command: str) -> tuple[str, list[str]]:
    """The command without here-document bodies, and the bodies in order."""
    lines = command.split("\n")
    out: list[str] = []
    bodies: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        for m in _HEREDOC.finditer(line):
            word, strip_tabs = m.group(3), m.group(1) == "-"
            body: list[str] = []
            while i < len(lines):
                text = lines[i].lstrip("\t") if strip_tabs else lines[i]
                i += 1
                if text == word:
                    break
                body.append(lines[i - 1])
            bodies.append("\n".join(body))
    return "\n".join(out), bodies


def substitutions(command: str) -> tuple[str, list[str]]:
    """``command`` with each `$(...)` / `` `...` `` (outside single quotes)
    replaced by a placeholder word, and the inner commands found."""
    out: list[str] = []
    inner: list[str] = []
    i, n, quote = 0, len(command), ""
    while i < n:
        c = command[i]
        if quote == "'":
            out.append(c)
            if c == "'":
                quote = ""
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            out.append(command[i:i + 2])
            i += 2
            continue
        if c == "'" and not quote:
            quote = "'"
        elif c == '"':
            quote = "" if quote == '"' else '"'
        if c == "`":
            end = command.find("`", i + 1)
            end = n if end < 0 else end
            body = command[i + 1:end]
            inner.append(body)
            out.append("$PWD" if _PWD_SUBST.match(body) else SUBST_MARK)
            i = end + 1
            continue
        if c == "$" and command.startswith("$(", i):
            arith = command.startswith("$((", i)
            depth, j = 0, i + 1
            while j < n:
                if command[j] == "(":
                    depth += 1
                elif command[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            body = command[i + 2:j]
            if arith:
                out.append("0")
            else:
                inner.append(body)
                out.append("$PWD" if _PWD_SUBST.match(body) else SUBST_MARK)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), inner


def _tokens(command: str) -> list[str]:
    lex = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lex.whitespace_split = True
    lex.commenters = "#"
    try:
        return list(lex)
    except ValueError:
        # unbalanced quotes: fall back to a plain split so the command is still looked at
        return command.replace(";", " ; ").replace("|", " | ").split()


def unwrap(argv: list[str]) -> list[str]:
    i = 0
    while i < len(argv):
        word = argv[i]
        if re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            i += 1
            continue
        base = os.path.basename(word)
        if base in WRAPPERS:
            i += 1
            # skip the wrapper's own options (and an option's argument for the common ones)
            while i < len(argv) and argv[i].startswith("-"):
                opt = argv[i]
                i += 1
                if opt in WRAPPER_ARG_OPTS.get(base, ()):
                    i += 1
            if base == "timeout" and i < len(argv) and re.match(r"^\d", argv[i]):
                i += 1
            continue
        break
    return argv[i:]


def split(command: str, cwd: str, home: str | None = None, depth: int = 0) -> list[Simple]:
    home = home or os.path.expanduser("~")
    out: list[Simple] = []
    if depth > 4:
        return out
    command, bodies = cut_heredocs(command)
    # command substitutions are commands too
    command, inner = substitutions(command)
    for sub in inner:
        out.extend(split(sub, cwd, home, depth + 1))
    toks = _tokens(command)
    cur: list[str] = []
    redirects: list[tuple[str, str]] = []
    prev_pipe: list[str] | None = None
    pending_pipe: list[str] | None = None
    i = 0

    def flush(next_piped: bool) -> None:
        nonlocal cur, redirects, prev_pipe, pending_pipe, cwd
        argv = unwrap(cur)
        if argv:
            simple = Simple(argv, cwd, pending_pipe, redirects)
            if any(op.startswith("<<") and op != "<<<" for op, _ in redirects) and bodies:
                simple.heredoc = bodies.pop(0)
            out.append(simple)
            name = os.path.basename(argv[0])
            if name == "cd":
                target = argv[1] if len(argv) > 1 else home
                cwd = resolve(target, cwd, home)
            elif name in SHELLS and "-c" in argv[1:]:
                k = argv.index("-c")
                if k + 1 < len(argv):
                    out.extend(split(argv[k + 1], cwd, home, depth + 1))
            elif name == "eval" and len(argv) > 1:
                out.extend(split(" ".join(argv[1:]), cwd, home, depth + 1))
        pending_pipe = argv if (next_piped and argv) else None
        cur, redirects = [], []

    while i < len(toks):
        t = toks[i]
        if t in ("|", "|&"):
            flush(True)
        elif t in SEPARATORS or set(t) <= set(";&|()") and t:
            flush(False)
        elif t in REDIRECT_OPS or REDIRECT_FD_RE.fullmatch(t):
            if i + 1 < len(toks):
                redirects.append((t, toks[i + 1]))
                i += 1
        else:
            cur.append(t)
        i += 1
    flush(False)
    return out


def resolve(path: str, cwd: str, home: str) -> str:
    p = path
    if p == "~" or p.startswith("~/"):
        p = home + p[1:]
    p = re.sub(r"^\$\{?HOME\}?", home, p)
    p = re.sub(r"^\$\{?PWD\}?", cwd, p)
    if not os.path.isabs(p):
        p = os.path.join(cwd, p)
    return os.path.normpath(p)


def inside(path: str, root: str) -> bool:
    root = os.path.normpath(root)
    return path == root or path.startswith(root.rstrip("/") + "/")


def temp_roots() -> list[str]:
    roots = ["/tmp", "/var/tmp", "/private/tmp"]
    if os.environ.get("TMPDIR"):
        roots.append(os.environ["TMPDIR"])
    return sorted({os.path.normpath(r) for r in roots} | {os.path.realpath(r) for r in roots})


def is_scratch(path: str, workspace: str) -> bool:
    """A path under a system temp folder (not the folder itself) counts as scratch space.

    When the workspace itself lives in a temp folder, the workspace's own
    parent stays off limits, so `../x` is still outside.
    """
    parent = os.path.dirname(os.path.normpath(workspace))
    if inside(path, parent) and any(inside(parent, r) and parent != r for r in temp_roots()):
        return False
    return any(inside(path, r) and path != r for r in temp_roots())
