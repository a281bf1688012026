#!/usr/bin/env python3
"""write-outside-workspace: refuse file edits that land outside the repository."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import hookio as hio  # noqa: E402
import shellparse as sp  # noqa: E402


def real(path: str) -> str:
    """Resolve symlinks through the longest existing prefix.

    A symlink inside the workspace then cannot smuggle a write out of it.
    """
    return os.path.realpath(path)


def main() -> None:
    payload = hio.load_payload()
    ti = hio.tool_input(payload)
    ws = hio.workspace(payload)
    cwd = hio.event(payload).get("cwd") or ws
    targets = [
        ti[k]
        for k in ("file_path", "notebook_path", "path")
        if isinstance(ti.get(k), str) and ti[k]
    ]
    if not targets:
        # A patch (Codex apply_patch) names its files in the changeset: relative to
        # the workspace inside it, absolute outside.
        for f in (payload.get("changeset") or {}).get("files") or []:
            if isinstance(f, dict) and f.get("path"):
                p = str(f["path"])
                targets.append(p if os.path.isabs(p) else os.path.join(ws, p))
    ws_real = real(ws)
    problems = []
    for t in targets:
        p = real(sp.resolve(t, str(cwd), os.path.expanduser("~")))
        if sp.inside(p, ws_real):
            continue
        if sp.is_scratch(p, ws_real):
            continue
        problems.append(f"{t} resolves to {p}, outside the workspace {ws_real}")
    if problems:
        reason = (
            "write refused: " + "; ".join(problems)
            + ". Keep edits inside the repository (scratch files may go under /tmp); "
            "ask the person to change files elsewhere."
        )
        findings = [{"path": t, "line": None, "message": "outside the workspace"} for t in targets]
        print(hio.dumps({"reason": reason, "findings": findings}))
        sys.exit(1)
    sys.exit(0)


if __name__ == "__main__":
    hio.main_guard(main)
