"""At PreToolUse, slopjudge's own Python scripts (byte-identical to the copies installed
with it, ``_lib`` too) run inside the hook process (checks/inproc.py); anything else runs
as its own process. Through the real hook process, as Claude Code runs it (the wrapper
``install claude`` writes): a script sees what ``python script.py`` would, gets the same
result, and every way it can fail to decide blocks: an uncaught exception, its own
timeout (a catastrophic regular expression included), the hook's deadline, C code that
never lets a signal handler run.

The installed copy here is a copy of slopjudge's package (links resolved) whose pack
holds probe rules too, started through ``SLOPJUDGE_BIN``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.failclosed.hooks_kit import REPO_ROOT, clean_env, deny_reason, make_ws, pre_tool
from tests.helpers import executable, git

# Writes what it saw to $PROBE_OUT/<rule>.json, then exits with $PROBE_STATUS.
PROBE = '''#!/usr/bin/env python3
import json, os, sys
text = sys.stdin.read()
payload = json.loads(text)
seen = {"name": __name__, "argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0],
        "rule": os.environ.get("SLOPJUDGE_RULE"), "check": payload["check"]["id"],
        "stdin_is_text": isinstance(text, str), "file": __file__,
        "content": payload["changeset"]["files"][0]["newContent"],
        "in_hook_process": "slopjudge.hooks" in sys.modules}
with open(os.path.join(os.environ["PROBE_OUT"], os.environ["SLOPJUDGE_RULE"] + ".json"),
          "w") as fh:
    json.dump(seen, fh)
status = int(os.environ.get("PROBE_STATUS", "0"))
if status:
    print(json.dumps({"reason": "probe refuses", "findings": [
        {"path": "notes.txt", "line": 1, "message": "probe finding"}]}))
    print("probe stderr", file=sys.stderr)
sys.exit(status)
'''
RAISES = "import sys\nsys.stdin.read()\nraise ValueError('the probe broke')\n"
LOOPS = "import sys\nsys.stdin.read()\nwhile True:\n    pass\n"
# Backtracking without end: the regular expression engine runs in C the whole time.
REGEX = "import re, sys\nsys.stdin.read()\nre.match(r'(a+)+$', 'a' * 64 + 'b')\n"

PROBES = {"sj-probe": (PROBE, "60s"), "sj-raises": (RAISES, "60s"),
          "sj-loops": (LOOPS, "2s"), "sj-regex": (REGEX, "2s"),
          "sj-loops-long": (LOOPS, "60s"), "sj-regex-long": (REGEX, "60s")}


def _rule_yaml(timeout: str) -> str:
    return ("description: a probe of how slopjudge runs its own scripts\n"
            "on: [pre-tool]\ntools: [Write]\npaths: ['*.txt']\n"
            f"checks:\n  - id: probe\n    script: check.py\n    timeout: {timeout}\n")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A launcher of a slopjudge whose installed pack also holds the probe rules."""
    root = tmp_path_factory.mktemp("own")
    package = root / "site" / "slopjudge"
    shutil.copytree(REPO_ROOT / "slopjudge", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name, (body, timeout) in PROBES.items():
        folder = package / "data" / "rules" / name
        folder.mkdir()
        executable(folder / "check.py", body)
        (folder / "rule.yaml").write_text(_rule_yaml(timeout))
    return executable(root / "slopjudge", f"#!/bin/sh\nPYTHONPATH={root / 'site'} "
                      f"exec {sys.executable} -P -m slopjudge \"$@\"\n")


def _project(tmp_path: Path, installed: Path, rules: tuple[str, ...],
             settings: str = "") -> Path:
    """A committed project with the installed copies of ``rules`` and the hooks installed."""
    ws = make_ws(tmp_path, files={"slopjudge.yaml": settings} if settings else None)
    pack = installed.parent / "site" / "slopjudge" / "data" / "rules"
    for name in rules:
        shutil.copytree(pack / name, ws / "rules" / name)
    subprocess.run([str(installed), "install", "claude"], cwd=ws, check=True,
                   capture_output=True, env=clean_env(SLOPJUDGE_BIN=str(installed)))
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "probe rules")
    return ws


def _call(ws: Path, installed: Path, out: Path, status: int = 0, timeout: float = 120
          ) -> tuple[int, Any, str, float]:
    """A Write of notes.txt through the hook command Claude Code runs."""
    out.mkdir(exist_ok=True)
    payload = pre_tool(ws, "Write", {"file_path": str(ws / "notes.txt"), "content": "hi\n"})
    env = clean_env(SLOPJUDGE_BIN=str(installed), PROBE_OUT=str(out),
                    PROBE_STATUS=str(status))
    began = time.monotonic()
    proc = subprocess.run([str(ws / ".claude" / "hooks" / "slopjudge"), "hook", "pre-tool"],
                          input=json.dumps(payload), cwd=ws, env=env, capture_output=True,
                          text=True, timeout=timeout)
    took = time.monotonic() - began
    return (proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None,
            proc.stderr, took)


def _events(ws: Path, rule: str) -> list[dict[str, Any]]:
    lines = (ws / ".slopjudge" / "events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e.get("rule") == rule]


@pytest.mark.parametrize("status", [0, 3])
def test_an_own_script_runs_in_the_hook_as_its_own_process_would(
        tmp_path: Path, installed: Path, status: int) -> None:
    ws = _project(tmp_path, installed, ("sj-probe",))
    rc, out, err, _ = _call(ws, installed, tmp_path / "inside", status)
    inside = json.loads((tmp_path / "inside" / "sj-probe.json").read_text())
    assert rc == 0, err
    assert inside["in_hook_process"] is True

    # The same script edited by a person (one comment more) is not slopjudge's: a process.
    script = ws / "rules" / "sj-probe" / "check.py"
    script.write_text(script.read_text() + "# edited\n")
    git(ws, "commit", "-qam", "edit the probe")
    rc2, out2, err2, _ = _call(ws, installed, tmp_path / "alone", status)
    alone = json.loads((tmp_path / "alone" / "sj-probe.json").read_text())
    assert alone.pop("in_hook_process") is False and inside.pop("in_hook_process") is True
    assert inside == alone
    assert inside["name"] == "__main__" and inside["argv"] == [str(script)]
    assert inside["cwd"] == inside["path0"] == str(script.parent)
    assert inside["rule"] == "sj-probe" and inside["check"] == "probe"
    assert inside["stdin_is_text"] and inside["content"] == "hi\n"
    assert (rc2, out2) == (rc, out), (err, err2)
    first, second = _events(ws, "sj-probe")
    assert first["outcome"] == second["outcome"] == ("pass" if status == 0 else "refuse")
    assert first["reason"] == second["reason"]
    assert first.get("findings") == second.get("findings")
    if status:
        reason = deny_reason(out)
        assert "probe refuses" in reason and "notes.txt:1: probe finding" in reason


def test_an_edited_lib_runs_every_pack_script_as_a_process(tmp_path: Path,
                                                          installed: Path) -> None:
    ws = _project(tmp_path, installed, ("sj-probe",))
    lib = ws / "rules" / "_lib" / "hookio.py"
    lib.write_text(lib.read_text() + "\n")
    git(ws, "commit", "-qam", "edit the pack's library")
    _call(ws, installed, tmp_path / "seen")
    assert json.loads((tmp_path / "seen" / "sj-probe.json").read_text())[
        "in_hook_process"] is False


def test_a_script_that_raises_blocks_as_undecided(tmp_path: Path, installed: Path) -> None:
    ws = _project(tmp_path, installed, ("sj-raises",))
    rc, out, err, _ = _call(ws, installed, tmp_path / "out")
    assert rc == 0, err
    reason = deny_reason(out)
    assert "could not decide" in reason, reason
    [event] = _events(ws, "sj-raises")
    assert event["outcome"] == "error"
    assert "ValueError: the probe broke" in event["reason"]
    assert "Traceback (most recent call last)" in event["reason"]
    assert "batchchild" not in event["reason"]  # from the script's own frames on


@pytest.mark.parametrize("rule", ["sj-loops", "sj-regex"])
def test_a_script_past_its_timeout_blocks_as_undecided(tmp_path: Path, installed: Path,
                                                       rule: str) -> None:
    ws = _project(tmp_path, installed, (rule,))
    rc, out, err, took = _call(ws, installed, tmp_path / "out")
    assert rc == 0, err
    assert "could not decide" in deny_reason(out)
    [event] = _events(ws, rule)
    assert (event["outcome"], event["reason"]) == ("error", "timed out after 2 s")
    assert took < 30, took


@pytest.mark.parametrize("rule", ["sj-loops-long", "sj-regex-long"])
def test_a_script_past_the_hook_deadline_blocks(tmp_path: Path, installed: Path,
                                                rule: str) -> None:
    """The deadline is 2 s under ``hook_timeout: 10``, before the scripts' own 60 s: the
    hook's answer comes while the script loops in Python or backtracks in the regular
    expression engine's C code."""
    ws = _project(tmp_path, installed, (rule,), "hook_timeout: 10\n")
    rc, out, err, took = _call(ws, installed, tmp_path / "out")
    assert (rc, out) == (2, None), err
    assert "did not decide within 8 s" in err and "so this call is blocked" in err, err
    assert took < 10, took
