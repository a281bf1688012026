"""What the fail-closed hook tests share: a real git repository holding a real rule
pack (the shipped protect-rules plus a script rule), and the hook entry point the
console script calls, run in this process; tests where the process itself matters
(signals, the first call of each point) run ``python -m slopjudge hook <point>``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import SCAN_RULE, executable, git, hook_in_process, write_files

REPO_ROOT = Path(__file__).resolve().parent.parent.parent
# The shipped rule that guards the rules folder, as make_ws commits it.
RULE_FILE = "rules/protect-rules/rule.yaml"
SESSION = "0b4de96f-c67c-4e10-ae34-a9539e2abcfb"

# Refuses added lines holding FORBIDDEN, naming file and line.
SCAN = r'''#!/usr/bin/env python3
import json, sys
payload = json.load(sys.stdin)
findings = []
for f in payload["changeset"]["files"]:
    old = set((f.get("oldContent") or "").splitlines())
    for n, line in enumerate((f.get("newContent") or "").splitlines(), 1):
        if "FORBIDDEN" in line and line not in old:
            findings.append({"path": f["path"], "line": n, "message": "FORBIDDEN marker"})
if findings:
    print(json.dumps({"reason": "added lines contain FORBIDDEN", "findings": findings}))
    sys.exit(1)
'''


# A notebook of one code cell, for NotebookEdit calls.
NOTEBOOK = json.dumps({"cells": [{"cell_type": "code", "id": "abc1", "metadata": {},
                                  "source": ["x=1\n"], "execution_count": None, "outputs": []}],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def make_ws(root: Path, *, scan: str = SCAN, pack: tuple[str, ...] = ("protect-rules", "_lib"),
            files: dict[str, str] | None = None) -> Path:
    """A committed repository with the shipped rules in ``pack`` (protect-rules by default),
    no-forbidden (a script, ``scan``) and ``files``."""
    ws = root / "repo"
    ws.mkdir(parents=True)
    git(ws, "init", "-q", "-b", "main")
    git(ws, "config", "user.email", "t@example.com")
    git(ws, "config", "user.name", "T")
    git(ws, "config", "commit.gpgsign", "false")
    write_files(ws, {".gitignore": "*.pyc\n", "a.txt": "hello\nworld\n", **(files or {})})
    rules = ws / "rules"
    for name in pack:
        shutil.copytree(REPO_ROOT / "rules" / name, rules / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    executable(rules / "no-forbidden" / "scan.py", scan)
    (rules / "no-forbidden" / "rule.yaml").write_text(SCAN_RULE)
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "init")
    return ws


def clean_env(**extra: str) -> dict[str, str]:
    out = {k: v for k, v in os.environ.items()
           if not k.startswith(("SLOPJUDGE_", "SLOPRAIL_", "CLAUDE_"))}
    out.update(extra)
    return out


def hook(point: str, ws: Path, stdin: Any, *, cwd: Path | None = None,
         env: dict[str, str] | None = None, timeout: float = 60, process: bool = False
         ) -> tuple[int, Any, str]:
    """``slopjudge hook <point>``: (exit code, parsed stdout or None, stderr).

    ``stdin`` is sent as is when bytes or str, else as JSON. The console script's
    entry function runs in this process unless ``process``: then the real
    ``python -m slopjudge hook <point>`` (``timeout`` applies to it).
    """
    if isinstance(stdin, bytes):
        data = stdin
    elif isinstance(stdin, str):
        data = stdin.encode()
    else:
        data = json.dumps(stdin).encode()
    if not process:
        rc, out, err = hook_in_process(point, data, cwd=cwd or ws, env=env or clean_env())
        return rc, json.loads(out) if out.strip() else None, err
    proc = subprocess.run([sys.executable, "-m", "slopjudge", "hook", point], input=data,
                          cwd=cwd or ws, capture_output=True, env=env or clean_env(),
                          timeout=timeout)
    text = proc.stdout.decode()
    return proc.returncode, json.loads(text) if text.strip() else None, proc.stderr.decode()


def pre_tool(ws: Path, tool: str, tool_input: dict[str, Any], **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "session_id": SESSION, "transcript_path": "/tmp/t.jsonl", "cwd": str(ws),
        "permission_mode": "acceptEdits", "hook_event_name": "PreToolUse",
        "tool_name": tool, "tool_input": tool_input, "tool_use_id": "toolu_1",
    }
    data.update(fields)
    return data


def stop(ws: Path, kind: str = "stop", **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "session_id": SESSION, "transcript_path": "/tmp/t.jsonl", "cwd": str(ws),
        "permission_mode": "acceptEdits",
        "hook_event_name": "Stop" if kind == "stop" else "SubagentStop",
        "stop_hook_active": False, "last_assistant_message": "done",
    }
    if kind != "stop":
        data.update(agent_id="a0e5", agent_type="general-purpose")
    data.update(fields)
    return data


def start(ws: Path, **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"session_id": SESSION, "transcript_path": "/tmp/t.jsonl",
                            "cwd": str(ws), "hook_event_name": "SessionStart",
                            "source": "startup"}
    data.update(fields)
    return data


def deny_reason(out: Any) -> str:
    assert out is not None, "expected a deny, got nothing (an allow)"
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == "PreToolUse"
    assert spec["permissionDecision"] == "deny", spec
    return str(spec["permissionDecisionReason"])


def block_reason(out: Any) -> str:
    assert out is not None and out.get("decision") == "block", out
    return str(out["reason"])


def one_line_block(rc: int, out: Any, err: str) -> str:
    """Exit 2 with one stderr line (Claude Code blocks a tool only on exit 2)."""
    assert (rc, out) == (2, None), (rc, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("slopjudge: "), err
    assert "Traceback" not in err
    return lines[0]
