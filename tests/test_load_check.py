"""The load check run by hand (`slopjudge hook start < /dev/null`) and `validate --format json`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SLOPJUDGE = str(Path(sys.executable).parent / "slopjudge")


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for rule in ("placeholder-code", "debug-leftovers"):
        shutil.copytree(ROOT / "rules" / rule, tmp_path / "rules" / rule)
    return tmp_path


def run(ws: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLOPJUDGE_", "CLAUDE_"))}
    return subprocess.run([SLOPJUDGE, *args], cwd=ws, env=env, input=stdin,
                          stdin=subprocess.DEVNULL if stdin is None else None,
                          capture_output=True, text=True, timeout=60)


def break_one(ws: Path) -> None:
    (ws / "rules" / "broken.yaml").write_text("description: broken\non: [sometimes]\n")


def test_the_standalone_load_check_says_it_ran(ws: Path) -> None:
    proc = run(ws, "hook", "start")
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == ("slopjudge: load check: 2 rules loaded, 0 not loaded; "
                           "nothing was run against any file\n")


def test_the_standalone_load_check_counts_what_did_not_load(ws: Path) -> None:
    break_one(ws)
    proc = run(ws, "hook", "start")
    assert proc.returncode == 0
    lines = proc.stderr.splitlines()
    assert lines[0] == "slopjudge: slopjudge load check: these rules are NOT in force until fixed:"
    assert any(line.startswith("- rules/broken.yaml does not load: ") for line in lines)
    assert lines[-1] == ("slopjudge: load check: 2 rules loaded, 1 not loaded; "
                         "nothing was run against any file")
    assert "NOT in force" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]


def test_inside_a_session_the_successful_check_stays_quiet(ws: Path) -> None:
    payload = json.dumps({"hook_event_name": "SessionStart", "session_id": "s",
                          "source": "startup", "cwd": str(ws)})
    proc = run(ws, "hook", "start", stdin=payload)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_validate_json_for_tools(ws: Path) -> None:
    proc = run(ws, "validate", "--format", "json")
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == {"ok": True, "loaded": 2, "not_loaded": 0,
                                       "rules": ["debug-leftovers", "placeholder-code"],
                                       "errors": []}
    break_one(ws)
    proc = run(ws, "validate", "--format", "json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert (data["ok"], data["loaded"], data["not_loaded"]) == (False, 2, 1)
    assert {e["path"] for e in data["errors"]} == {"rules/broken.yaml"}
    for error in data["errors"]:
        assert set(error) == {"path", "line", "col", "message", "rule", "text", "on", "tools"}
        assert error["text"] == f"{error['path']}:{error['line']}:{error['col']}: " \
                                f"{error['message']}"
    # The text summary says the same.
    assert run(ws, "validate").stdout.splitlines()[-1] == (
        f"slopjudge: 2 rule(s) loaded; {len(data['errors'])} problem(s) in 1 file(s)")
