#!/usr/bin/env python3
"""protect-rules: refuse agent edits to the rules that judge the agent."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import hookio as hio  # noqa: E402
import shellparse as sp  # noqa: E402

from slopjudge import pathglob  # noqa: E402
from slopjudge.changes.tools import CHANGE_TOOLS  # noqa: E402

# Commands that change files named among their arguments (or, for cp/mv/ln/install, their
# last argument).
MUTATORS = {
    "rm", "rmdir", "mv", "cp", "ln", "install", "truncate", "chmod", "chown", "touch", "tee",
    "dd", "shred", "unlink", "patch", "rsync",
}
INPLACE = {"sed": r"^-[a-zA-Z]*i|^--in-place", "perl": r"^-[a-zA-Z]*i", "ruby": r"^-[a-zA-Z]*i"}
GIT_MUTATING = {"rm", "mv", "checkout", "restore", "apply", "am", "stash", "reset", "clean"}
# Interpreters and the option that takes inline code; their heredoc bodies are code too.
INTERPRETERS = {
    "python": ("-c",), "python2": ("-c",), "python3": ("-c",), "pypy": ("-c",),
    "pypy3": ("-c",), "node": ("-e", "--eval", "-p", "--print"), "deno": ("eval",),
    "bun": ("-e", "--eval"), "perl": ("-e", "-E"), "ruby": ("-e",), "php": ("-r",),
    "lua": ("-e",), "Rscript": ("-e",), "awk": (), "gawk": (), "osascript": ("-e",),
}
# Words in code that change files: a protected path named in code that also
# has one of these is a write. Patterns stay strings: compiled on first use (`re`
# keeps them), so a file tool's call does not pay for them.
CODE_WRITES = (
    r"""open\s*\([^)]*,\s*(?:mode\s*=\s*)?['"][rbtU]*[wax+]|\.write|write_text|write_bytes|writeFile|appendFile"""
    r"""|createWriteStream|unlink|remove|rmtree|rmdir|rename|replace\s*\(|truncate|chmod"""
    r"""|copy|move|symlink|touch|dump\s*\(|File\.write|IO\.write|File\.delete|fopen"""
    r"""|file_put_contents|print\s*>|>>?\s*["']|system\s*\(|subprocess|os\.system|exec\w*\s*\(""")
# A quoted string (not a mapping key) or a bare path-like word.
CODE_WORD = r"""['"]([^'"\n]+)['"](?!\s*:)|([\w.~/-]*[\w~][\w.~/-]*)(?!['"\w])"""


def protected_patterns(payload: dict, ws: str) -> list[str]:
    rule_dir = (payload.get("rule") or {}).get("dir") or os.environ.get("SLOPJUDGE_RULE_DIR")
    if not rule_dir:
        rule_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)) + "/x")
    # this rule lives in <rules>/protect-rules/
    rules_dir = os.path.dirname(os.path.normpath(rule_dir))
    rel = os.path.relpath(rules_dir, ws) if sp.inside(rules_dir, ws) else "rules"
    # Globs anchored at the workspace root (a folder admits every file below it).
    return [
        "/" + pathglob.escape(rel.rstrip("/")),
        "/slopjudge.yaml", "/slopjudge.yml", "/.slopjudge", "/RUBRIC.md", "/templates/**/*.md.j2",
        ".claude/settings.json", ".claude/settings.local.json", ".codex/hooks.json",
        ".claude/hooks/slopjudge", ".codex/hooks/slopjudge",
        ".codex/config.toml",
        # The project's virtualenv, where the hook wrappers look for slopjudge first, guarded
        # whole and the folder itself too (`rm -rf`, `mv`, `ln -sfn` of it): slopjudge, its
        # libraries, the python the wrappers run and any .pth run inside every hook. `.venv`
        # always (one planted where none is would be run); `venv/` when it is one (a `venv/`
        # of the project's own sources is not).
        "/.venv", "/venv/bin/slopjudge",
        *(["/venv"] if any(os.path.lexists(os.path.join(ws, "venv", *part))
                           for part in (("pyvenv.cfg",), ("bin", "slopjudge"))) else []),
    ]


def settings_in_pyproject(f: dict) -> bool:
    """A proposed change of the top-level pyproject.toml that changes slopjudge's settings."""
    if f.get("path") != "pyproject.toml":
        return False
    from slopjudge.loading.config import pyproject_settings  # its one home, the Stop's too

    old, new = f.get("oldContent"), f.get("newContent")
    return pyproject_settings(old if isinstance(old, str) else None) != pyproject_settings(
        new if isinstance(new, str) else None)


def hit(path: str, cwd: str, ws: str, patterns: list[str]) -> str | None:
    """The protected path (relative to the workspace) ``path`` names, or None.

    Symlinks are followed too, so an alias of the rules folder is the rules folder.
    """
    p = sp.resolve(path, cwd, os.path.expanduser("~"))
    for cand, root in ((p, os.path.normpath(ws)), (os.path.realpath(p), os.path.realpath(ws))):
        if not sp.inside(cand, root):
            continue
        rel = os.path.relpath(cand, root)
        for pat in patterns:
            if pathglob.match(pat, rel):
                return rel
    return None


def code_hits(code: str, cwd: str, ws: str, pats: list[str]) -> list[str]:
    """Protected paths that inline code names, when the code writes files."""
    import re  # a shell command's (re is not imported for a Write's checks)

    if not re.search(CODE_WRITES, code):
        return []
    found = []
    for m in re.finditer(CODE_WORD, code):
        text = (m.group(1) or m.group(2) or "").strip()
        # a quoted string may be a whole shell command (`os.system('rm rules/a.yaml')`)
        for word in [text, *text.split()] if " " in text else [text]:
            if word and (r := hit(word, cwd, ws, pats)):
                found.append(r)
    return found


def interpreter_code(s: sp.Simple) -> str:
    """The inline code an interpreter command runs, with its here-document."""
    import re  # a shell command's (re is not imported for a Write's checks)

    name = os.path.basename(s.argv[0])
    base = re.sub(r"[\d.]+$", "", name) if name.startswith(("python", "pypy")) else name
    opts = INTERPRETERS.get(name, INTERPRETERS.get(base))
    if opts is None:
        return ""
    code = [s.heredoc]
    args = s.argv[1:]
    for k, a in enumerate(args):
        if a in opts and k + 1 < len(args):
            code.append(args[k + 1])
        elif any(a.startswith(o) and len(a) > len(o) and not o.startswith("--") for o in opts):
            code.append(a[2:])  # -c'...' glued
    if name in ("awk", "gawk") and args:
        code.append(" ".join(args))
    for op, target in s.redirects:
        if op == "<<<":
            code.append(target)
    return "\n".join(c for c in code if c)


def runs_hook(argv: list[str]) -> bool:
    """`slopjudge hook ...` (or `python -m slopjudge hook ...`): only the agent
    harness runs slopjudge's hooks; by hand they re-record the session baseline."""
    words = argv
    if os.path.basename(words[0]).startswith("python") and words[1:3] == ["-m", "slopjudge"]:
        words = words[2:]
    return os.path.basename(words[0]) == "slopjudge" and words[1:2] == ["hook"]


def main() -> None:
    payload = hio.load_payload()
    ev = hio.event(payload)
    ti = hio.tool_input(payload)
    ws = os.path.normpath(hio.workspace(payload))
    cwd = str(ev.get("cwd") or ws)
    pats = protected_patterns(payload, ws)
    touched: list[str] = []
    tool = ev.get("tool_name") or ""
    if tool in CHANGE_TOOLS or "file_path" in ti or "notebook_path" in ti:
        for key in ("file_path", "notebook_path"):
            if isinstance(ti.get(key), str) and (r := hit(ti[key], cwd, ws, pats)):
                touched.append(r)
    # Every file the proposed change touches (a Codex patch run through the shell
    # too), named relative to the workspace, or absolute outside it.
    for f in (payload.get("changeset") or {}).get("files") or []:
        for key in ("path", "oldPath"):
            p = f.get(key) if isinstance(f, dict) else None
            if p and (r := hit(str(p), ws, ws, pats)):
                touched.append(r)
        if isinstance(f, dict) and settings_in_pyproject(f):
            touched.append("pyproject.toml [tool.slopjudge]")
    command = sp.shell_text(ti.get("command"))  # an argv list (Codex): the line it runs
    if command is not None:
        import re  # a shell command's (re is not imported for a Write's checks)

        for s in sp.split(command, cwd):
            name = os.path.basename(s.argv[0])
            args = [a for a in s.argv[1:] if not a.startswith("-")]
            cands: list[str] = [t for op, t in s.redirects if ">" in op]
            if name in MUTATORS:
                cands += args[-1:] if name in ("cp", "ln", "install", "rsync") else args
                if name == "dd":  # dd writes where `of=` says
                    cands += [a[3:] for a in args if a.startswith("of=")]
                if name == "mv":
                    cands += args
            elif name in INPLACE and any(re.match(INPLACE[name], a) for a in s.argv[1:]):
                cands += args
            elif name == "git" and args and args[0] in GIT_MUTATING:
                staged_only = args[0] == "restore" and (
                    "--staged" in s.argv or "-S" in s.argv) and not (
                    "--worktree" in s.argv or "-W" in s.argv)
                if not staged_only:  # unstaging leaves the file as it is
                    cands += args[1:]
            if runs_hook(s.argv):
                touched.append(".slopjudge/state (a hook run by hand re-records the baseline)")
            code = interpreter_code(s)
            if code:
                touched.extend(code_hits(code, s.cwd, ws, pats))
            for c in cands:
                if r := hit(c, s.cwd, ws, pats):
                    touched.append(r)
    touched = sorted(set(t for t in touched if t))
    if touched:
        reason = (
            f"refused: {', '.join(touched)} holds the rules and hooks that judge this session; "
            "agents may not change them. Say in your reply what change you need and why, "
            "and let the person make it."
        )
        print(hio.dumps({
            "reason": reason,
            "findings": [{"path": t, "line": None, "message": "protected file"} for t in touched],
        }))
        sys.exit(1)
    sys.exit(0)


if __name__ == "__main__":
    hio.main_guard(main)
