#!/usr/bin/env python3
"""protect-rules: refuse agent edits to the rules that judge the agent."""

from __future__ import annotations

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import shellparse as sp  # noqa: E402
import slopscan as ss  # noqa: E402

FILE_TOOLS = {"Write", "Edit", "MultiEdit", "NotebookEdit", "apply_patch"}
# Commands that change files named among their arguments (or, for cp/mv/ln/install, their
# last argument).
MUTATORS = {
    "rm", "rmdir", "mv", "cp", "ln", "install", "truncate", "chmod", "chown", "touch", "tee",
    "dd", "shred", "unlink", "patch",
}
INPLACE = {"sed": re.compile(r"^-[a-zA-Z]*i|^--in-place"), "perl": re.compile(r"^-[a-zA-Z]*i"),
           "ruby": re.compile(r"^-[a-zA-Z]*i")}
GIT_MUTATING = {"rm", "mv", "checkout", "restore", "apply", "am", "stash", "reset", "clean"}


def protected_patterns(payload: dict, ws: str) -> list[str]:
    rule_dir = (payload.get("rule") or {}).get("dir") or os.environ.get("SLOPJUDGE_RULE_DIR")
    if not rule_dir:
        rule_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)) + "/x")
    # this rule lives in <rules>/protect-rules/
    rules_dir = os.path.dirname(os.path.normpath(rule_dir))
    rel = os.path.relpath(rules_dir, ws) if sp.inside(rules_dir, ws) else "rules"
    return [
        rel.rstrip("/") + "/**", rel.rstrip("/"),
        "slopjudge.yaml", "slopjudge.yml", ".slopjudge/**", "RUBRIC.md", "templates/**/*.md.j2",
        ".claude/settings.json", ".claude/settings.local.json", ".codex/hooks.json",
        ".claude/hooks/slopjudge", ".codex/hooks/slopjudge",
    ]


def hit(path: str, cwd: str, ws: str, patterns: list[str]) -> str | None:
    p = sp.resolve(path, cwd, os.path.expanduser("~"))
    if not sp.inside(p, os.path.normpath(ws)):
        return None
    rel = os.path.relpath(p, ws)
    for pat in patterns:
        if ss.glob_match(rel, pat) or rel == pat:
            return rel
    return None


def main() -> None:
    payload = ss.load_payload()
    ev = ss.event(payload)
    ti = ss.tool_input(payload)
    ws = os.path.normpath(ss.workspace(payload))
    cwd = str(ev.get("cwd") or ws)
    pats = protected_patterns(payload, ws)
    touched: list[str] = []
    tool = ev.get("tool_name") or ""
    if tool in FILE_TOOLS or "file_path" in ti or "notebook_path" in ti:
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
    command = ti.get("command")
    if isinstance(command, str):
        for s in sp.split(command, cwd):
            name = os.path.basename(s.argv[0])
            args = [a for a in s.argv[1:] if not a.startswith("-")]
            cands: list[str] = [t for op, t in s.redirects if ">" in op]
            if name in MUTATORS:
                cands += args[-1:] if name in ("cp", "ln", "install") else args
                if name == "mv":
                    cands += args
            elif name in INPLACE and any(INPLACE[name].match(a) for a in s.argv[1:]):
                cands += args
            elif name == "git" and args and args[0] in GIT_MUTATING:
                cands += args[1:]
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
        print(json.dumps({
            "reason": reason,
            "findings": [{"path": t, "line": None, "message": "protected file"} for t in touched],
        }))
        sys.exit(1)
    sys.exit(0)


if __name__ == "__main__":
    ss.main_guard(main)
