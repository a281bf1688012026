"""Split a shell command line into simple commands, well enough to judge them.

The one shell reader: ``tools:`` patterns, ``event.argv`` and the pack's shell rules
(``rules/_lib/shellparse.py``) all see a command as :func:`split` cuts it. Not a shell:
it follows ``cd``, unwraps wrappers (``sudo``, ``env``, ``VAR=x`` ...) and recurses into
``sh -c``, ``eval`` and ``$(...)``; pipes are kept so ``curl ... | sh`` can be seen. A
substitution inside a word becomes a placeholder (``$PWD`` for ``$(pwd)``, else
:data:`SUBST_MARK`), so ``rm -rf $(pwd)/..`` stays one command with one target.
Standard library only: ``tools:`` patterns are matched on the hook fast path.
"""

from __future__ import annotations

import os
import re

# Wrappers run the command after them; each with its common options that take an
# argument (skipped along with the option).
_SUDO_ARG_OPTS = ("-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t")
_RUNNER_ARG_OPTS = ("-n", "-c", "-s", "-k", "-I", "-P", "-L")
WRAPPERS: dict[str, tuple[str, ...]] = {
    "sudo": _SUDO_ARG_OPTS, "doas": _SUDO_ARG_OPTS, "env": ("-u", "-C", "-S"),
    "nice": _RUNNER_ARG_OPTS, "ionice": _RUNNER_ARG_OPTS, "timeout": _RUNNER_ARG_OPTS,
    "xargs": _RUNNER_ARG_OPTS, "nohup": (), "time": (), "command": (), "exec": (),
    "stdbuf": (), "builtin": (), "unbuffer": (),
}
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "fish"}
SEPARATORS = {";", "&&", "||", "&", "\n", ";;", "(", ")", "{", "}"}
# Reserved words that open or continue a compound command: the command after them is
# what runs (`if true; then rm -rf ~; fi` runs `rm -rf ~`), so they are skipped as a
# wrapper is. `!` negates a pipeline; `coproc` runs it in the background.
RESERVED = frozenset({"if", "then", "elif", "else", "while", "until", "do", "!", "{", "coproc"})
REDIRECT_OPS = (">", ">>", ">|", "<", "&>", "&>>", "<<", "<<<", ">&")
REDIRECT_FD_RE = re.compile(r"\d?[<>]{1,2}&?")  # 2>, 1>>, 2>& ...

SUBST_MARK = "$__command_output__"  # stands for a `$(...)` whose output is unknown
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
_PWD_SUBST = re.compile(r"^\s*pwd(\s+-[LP])?\s*$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_FD_NUMBER = re.compile(r"[0-9]+(?=[<>])")  # ASCII digits only, as bash reads them
# What may stand before the start of a word (where `#` starts a comment).
_WORD_START_AFTER = frozenset(" \t\n;&|()<>")


class Simple:
    __slots__ = ("argv", "words", "cwd", "piped_from", "redirects", "heredoc")

    def __init__(self, argv: list[str], cwd: str, piped_from: list[str] | None = None,
                 redirects: list[tuple[str, str]] | None = None, words: list[str] | None = None,
                 heredoc: str = "") -> None:
        self.argv = argv  # the program and its arguments: wrappers and VAR=x dropped
        self.words = argv if words is None else words  # as written (but redirections)
        self.cwd = cwd  # the working directory the command would run in, `cd` followed
        self.piped_from = piped_from  # argv of the command whose output feeds this one
        self.redirects = [] if redirects is None else redirects  # (operator, target)
        self.heredoc = heredoc  # the here-document bodies this command reads


def shell_text(command: object) -> str | None:
    """A shell command as one line of text; Codex also sends it as an argv list
    (``["bash", "-lc", "<script>"]`` runs the script)."""
    if isinstance(command, str):
        return command
    if not isinstance(command, list) or not command or not all(
            isinstance(w, str) for w in command):
        return None
    if (len(command) >= 3 and os.path.basename(command[0]) in SHELLS
            and command[1] in ("-c", "-lc")):
        return str(command[2])
    import shlex  # where a command is split: a file tool's checks use only resolve()

    return shlex.join(command)


def cut_heredocs(command: str) -> tuple[str, list[str]]:
    """The command without here-document bodies, and the bodies in order."""
    lines = iter(command.split("\n"))
    out: list[str] = []
    bodies: list[str] = []
    for line in lines:
        out.append(line)
        for m in _HEREDOC.finditer(line):
            word, strip_tabs = m.group(3), m.group(1) == "-"
            body: list[str] = []
            for text in lines:  # the same iterator: a body's lines are not the command's
                if (text.lstrip("\t") if strip_tabs else text) == word:
                    break
                body.append(text)
            bodies.append("\n".join(body))
    return "\n".join(out), bodies


def substitutions(command: str) -> tuple[str, list[str]]:
    """``command`` with each `$(...)` / `` `...` `` outside single quotes replaced by a
    placeholder word, comments and redirections' descriptor numbers dropped; and the
    inner commands."""
    out: list[str] = []
    inner: list[str] = []
    i, n, dquote = 0, len(command), False
    while i < n:
        c = command[i]
        if c == "\\" and i + 1 < n:
            out.append(command[i:i + 2])
            i += 2
            continue
        if c == "'" and not dquote:  # single quotes: taken as they are, to the closing one
            j = command.find("'", i + 1) + 1 or n  # past the closing quote, or the end
            out.append(command[i:j])
            i = j
            continue
        word_start = not dquote and (i == 0 or command[i - 1] in _WORD_START_AFTER)
        if c == "#" and word_start:
            j = command.find("\n", i)
            i = n if j < 0 else j
            continue
        # `2>/dev/null`, `2>&1`: a descriptor number is part of the redirection, not an
        # argument (`cp a b 2>x` copies to b, not to `2`); it is dropped.
        if "0" <= c <= "9" and word_start and (fd := _FD_NUMBER.match(command, i)):
            i = fd.end()
            continue
        if c == '"':
            dquote = not dquote
        if c == "`" or (c == "$" and command.startswith("$(", i)):
            j = _closing(command, i)
            body = command[i + (1 if c == "`" else 2):j]
            if command.startswith("$((", i):
                out.append("0")  # arithmetic: a number
            else:
                inner.append(body)
                out.append("$PWD" if _PWD_SUBST.match(body) else SUBST_MARK)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), inner


def _closing(command: str, i: int) -> int:
    """Where the `` `...` `` or ``$(...)`` opening at ``i`` closes (the end when it does not)."""
    if command[i] == "`":
        j = command.find("`", i + 1)
        return len(command) if j < 0 else j
    depth = 0
    for j in range(i + 1, len(command)):  # command[i + 1] is the first "("
        depth += (command[j] == "(") - (command[j] == ")")
        if not depth:
            return j
    return len(command)


def _tokens(command: str) -> list[str]:
    import shlex

    lex = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lex.whitespace_split = True
    lex.commenters = ""  # comments are gone already (see substitutions), by line
    try:
        return list(lex)
    except ValueError:
        # unbalanced quotes: fall back to a plain split so the command is still looked at
        return command.replace(";", " ; ").replace("|", " | ").split()


def unwrap(argv: list[str]) -> list[str]:
    """``argv`` without ``VAR=x`` prefixes and wrappers (``sudo -u x``, ``env``, ``timeout 5``)."""
    i = 0
    while i < len(argv):
        word = argv[i]
        i += 1
        if _ASSIGNMENT.match(word) or word in RESERVED:
            continue
        base = os.path.basename(word)
        if base not in WRAPPERS:
            return argv[i - 1:]
        while i < len(argv) and argv[i].startswith("-"):
            i += 2 if argv[i] in WRAPPERS[base] else 1  # with the option's argument
        if base == "timeout" and i < len(argv) and re.match(r"^\d", argv[i]):
            i += 1
    return []


def split(command: str, cwd: str = ".", home: str | None = None,
          depth: int = 0) -> list[Simple]:
    """The simple commands ``command`` runs, in the order they are found (a
    substitution's commands before the command using its output)."""
    home = home or os.path.expanduser("~")
    out: list[Simple] = []
    if depth > 4:
        return out
    command, bodies = cut_heredocs(command)
    command, inner = substitutions(command)
    for sub in inner:
        out.extend(split(sub, cwd, home, depth + 1))
    toks = iter(_tokens(command))
    cur: list[str] = []
    redirects: list[tuple[str, str]] = []
    pending_pipe: list[str] | None = None

    def flush(next_piped: bool) -> None:
        nonlocal cur, redirects, pending_pipe, cwd
        argv = unwrap(cur)
        if argv:
            reads_body = any(op.startswith("<<") and op != "<<<" for op, _ in redirects)
            out.append(Simple(argv, cwd, pending_pipe, redirects, cur,
                              bodies.pop(0) if reads_body and bodies else ""))
            name = os.path.basename(argv[0])
            if name == "cd":
                cwd = resolve(argv[1] if len(argv) > 1 else home, cwd, home)
            elif name in SHELLS and "-c" in argv[1:-1]:  # the script follows the first -c
                out.extend(split(argv[argv.index("-c") + 1], cwd, home, depth + 1))
            elif name == "eval" and len(argv) > 1:
                out.extend(split(" ".join(argv[1:]), cwd, home, depth + 1))
        pending_pipe = argv if (next_piped and argv) else None
        cur, redirects = [], []

    for t in toks:
        if t in SEPARATORS or set(t) <= set(";&|()") and t:
            flush(t in ("|", "|&"))  # a pipe feeds the next command
        elif t in REDIRECT_OPS or REDIRECT_FD_RE.fullmatch(t):
            target = next(toks, None)
            if target is not None:
                redirects.append((t, target))
        else:
            cur.append(t)
    flush(False)
    return out


def argv_list(command: str) -> list[list[str]]:
    """Each simple command of ``command`` as the words written (``event.argv``)."""
    return [s.words for s in split(command)]


def resolve(path: str, cwd: str, home: str) -> str:
    """``path`` as the shell would name it from ``cwd``: ``~``, ``$HOME``, ``$PWD`` expanded."""
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    path = _expand_leading(_expand_leading(path, "HOME", home), "PWD", cwd)
    return os.path.normpath(os.path.join(cwd, path))  # an absolute path stays as it is


def _expand_leading(path: str, name: str, value: str) -> str:
    """``$NAME`` or ``${NAME}`` at the start of ``path`` replaced by ``value`` (a lone brace
    is taken too, as the pack always has). String steps: a compiled pattern costs more."""
    at = 2 if path.startswith("${") else 1 if path.startswith("$") else 0
    if not at or not path.startswith(name, at):
        return path
    at += len(name)
    return value + path[at + 1 if path.startswith("}", at) else at:]
