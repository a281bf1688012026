"""Python script checks run on slopjudge's interpreter as ``python script.py``, each its
own process: the script protocol and its fail-closed guarantees hold for them exactly
as for any command."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from slopjudge import procs
from slopjudge.checks import engine
from slopjudge.checks.options import RunOptions
from slopjudge.checks.script import run_check_command
from slopjudge.model import Changeset, Check, CheckResult, Event, FileChange, Rule
from tests.helpers import (
    PY,
    commit_all,
    kill_quietly,
    make_repo,
    py,
    sj,
    wait_gone,
    write_rule,
)


@pytest.fixture
def contained() -> str:
    return "subreaper"  # how slopjudge holds a check's descendants


def _rule(folder: Path, rid: str, script: str, timeout: float) -> Rule:
    check = Check(id="check", rule=rid, kind="script", script=script, timeout=timeout)
    return Rule(id=rid, path=str(folder / "rule.yaml"), dir=str(folder),
                description=f"{rid} test rule", checks=[check])


def run_py(tmp_path: Path, bodies: dict[str, str], timeout: float = 30.0
           ) -> dict[str, CheckResult]:
    """Run one Python script check per body (in parallel) on a one-file change."""
    rules = []
    for rid, body in bodies.items():
        folder = tmp_path / "rules" / rid
        script = folder / "check.py"
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(body.strip("\n") + "\n", encoding="utf-8")  # no run bit needed
        rules.append(_rule(folder, rid, str(script), timeout))
    change = Changeset(files=[FileChange(path="a.py", status="A", new_content="x = 1\n",
                                         diff="+x = 1\n", added=1)])
    results = engine.run(rules, Event(kind="ci"), change, workspace=str(tmp_path),
                         options=RunOptions(jobs=max(2, len(rules))))
    return {r.rule: r for r in results}


def test_runs_in_a_fresh_interpreter_with_the_plain_protocol(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    body = f"""
import json, os, sys
data = json.load(sys.stdin)
json.dump({{"worker": "slopjudge.procs" in sys.modules, "argv": sys.argv, "cwd": os.getcwd(),
           "path0": sys.path[0], "rule": os.environ.get("SLOPJUDGE_RULE"),
           "main": __name__, "check": data["check"],
           "files": [f["path"] for f in data["changeset"]["files"]]}}, open({str(seen)!r}, "w"))
print("looked")
"""
    result = run_py(tmp_path, {"r": body})["r"]
    assert result.outcome == "pass", result.reason
    got = json.loads(seen.read_text())
    folder = str(tmp_path / "rules" / "r")
    assert got == {"worker": False, "argv": [os.path.join(folder, "check.py")], "cwd": folder,
                   "path0": os.path.realpath(folder), "rule": "r", "main": "__main__",
                   "check": {"id": "check"}, "files": ["a.py"]}


@pytest.mark.parametrize(("body", "outcome", "reason"), [
    ("import sys\nprint('TODO left', file=sys.stderr)\nsys.exit(3)", "refuse", "TODO left"),
    ("import sys\nsys.exit('plain message')", "refuse", "plain message"),
    ("raise ValueError('boom')", "refuse", "ValueError: boom"),
    ("import json\nprint(json.dumps({'reason': 'nope'}))\nraise SystemExit(1)", "refuse", "nope"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "error", "killed by SIGKILL"),
    ("import os\nos.abort()", "error", "killed by SIGABRT"),
    ("import os, sys\nsys.stdout.write('partial')\nos._exit(0)", "pass", ""),
    ("def broken(:\n    pass", "refuse", "SyntaxError"),
    ("import atexit, sys\natexit.register(lambda: print('bye', file=sys.stderr))\nsys.exit(4)",
     "refuse", "bye"),
])
def test_exit_status_and_crashes_as_a_fresh_interpreter(tmp_path: Path, body: str,
                                                        outcome: str, reason: str) -> None:
    result = run_py(tmp_path, {"r": body})["r"]
    assert result.outcome == outcome, result.reason
    assert reason in result.reason


def test_timeout_kills_the_check_and_every_descendant(tmp_path: Path, contained: str) -> None:
    pids = tmp_path / "pids"
    body = f"""
import os, subprocess, sys, time
bg = subprocess.Popen(["sleep", "60"])
forked = os.fork()
if forked == 0:
    os.setsid()  # leaves the session: only the tag holds it
    time.sleep(60)
    os._exit(0)
open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{bg.pid}} {{forked}}")
time.sleep(60)
"""
    try:
        result = run_py(tmp_path, {"r": body}, timeout=1.0)["r"]
        assert result.outcome == "error"
        assert result.reason == "timed out after 1 s"
        left = [int(p) for p in pids.read_text().split()]
        assert wait_gone(left, within=3.0) == [], "a process of the check outlived it"
    finally:
        if pids.exists():
            kill_quietly([int(p) for p in pids.read_text().split()])


def test_daemon_left_after_a_pass_is_killed(tmp_path: Path, contained: str) -> None:
    pidfile = tmp_path / "daemon.pid"
    body = f"""
import os, subprocess
subprocess.Popen([{PY!r}, "-c", "import os, time\\nif os.fork() == 0:\\n    os.setsid()\\n"
                  "    open({str(pidfile)!r}, 'w').write(str(os.getpid()))\\n    time.sleep(60)"])
import time
while not os.path.exists({str(pidfile)!r}) or not open({str(pidfile)!r}).read():
    time.sleep(0.01)
"""
    try:
        result = run_py(tmp_path, {"r": body})["r"]
        assert result.outcome == "pass", result.reason
        assert wait_gone([int(pidfile.read_text())], within=3.0) == []
    finally:
        if pidfile.exists() and pidfile.read_text():
            kill_quietly([int(pidfile.read_text())])


def test_huge_output_is_bounded(tmp_path: Path) -> None:
    script = tmp_path / "loud.py"
    script.write_text("import sys\nfor _ in range(64):\n    sys.stdout.write('x' * (1 << 20))\n")
    res = procs.run([sys.executable, str(script)], timeout=30, cwd=str(tmp_path),
                    max_output=1 << 20)
    assert res.returncode == 0, res.stderr
    assert 1 << 20 <= len(res.stdout) < (1 << 20) + 65536 * 2


def test_a_slow_check_does_not_hold_a_fast_one(tmp_path: Path) -> None:
    """A fork must not keep another running check's pipes open (its reader would wait)."""
    results = run_py(tmp_path, {"slow": "import time\ntime.sleep(4)", "fast": "pass"})
    assert results["slow"].outcome == results["fast"].outcome == "pass"
    assert results["fast"].duration_ms < 2500, results["fast"].duration_ms


def test_missing_script_could_not_start(tmp_path: Path) -> None:
    res = run_check_command(str(tmp_path / "gone.py"), b"{}", timeout=5, cwd=str(tmp_path),
                            env=dict(os.environ))
    assert res.start_error is not None and "not found" in res.start_error


def test_worker_killed_mid_check_blocks_the_tool_call(tmp_path: Path) -> None:
    """The process running a Python check dies from outside (OOM killer, kill -9):
    the check is an error and the PreToolUse hook denies the call."""
    repo = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    pidfile = tmp_path / "worker.pid"
    write_rule(repo / "rules", "slow-py", """
description: a Python check that takes its time
on: [pre-tool]
tools: [Write]
checks:
  - id: look
    script: look.py
    timeout: 60s
""", {"look.py": py(f"""
import os, sys, time
sys.stdin.read()
open({str(pidfile)!r}, "w").write(str(os.getpid()))
time.sleep(60)
""")})
    commit_all(repo, "rules")
    payload = json.dumps({
        "session_id": "s", "cwd": str(repo), "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(repo / "app.py"), "content": "x = 2\n"},
    })
    killed: list[int] = []

    def kill_worker() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if pidfile.exists() and pidfile.read_text():
                pid = int(pidfile.read_text())
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.02)

    killer = threading.Thread(target=kill_worker)
    killer.start()
    try:
        res = sj("hook", "pre-tool", cwd=repo, input=payload, timeout=60, process=True)
    finally:
        killer.join()
    assert killed, "the check never started"
    assert res.returncode == 0, res.stderr
    answer = json.loads(res.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"
    assert "killed by SIGKILL" in answer["permissionDecisionReason"]
    assert "slow-py" in answer["permissionDecisionReason"]


def test_python_checks_run_on_this_interpreter_as_a_child(tmp_path: Path) -> None:
    """The check process's executable is this Python, whatever PATH holds, and its
    parent is the process running the checks (no shell or worker left in between)."""
    info = tmp_path / "info"
    body = f"""
import os
open({str(info)!r}, "w").write(f"{{os.getppid()}} {{os.readlink('/proc/self/exe')}}")
"""
    assert run_py(tmp_path, {"r": body})["r"].outcome == "pass"
    ppid, exe = info.read_text().split(" ", 1)
    assert int(ppid) == os.getpid()
    assert os.path.realpath(exe) == os.path.realpath(PY)


def test_no_bytecode_is_written_beside_the_rules(tmp_path: Path) -> None:
    """A ``__pycache__`` under rules/ would be a protected file changed by the run."""
    lib = tmp_path / "rules" / "_lib"
    lib.mkdir(parents=True)
    (lib / "sjhelper_nocache.py").write_text("VALUE = 1\n")
    (lib / "sjhelper_late.py").write_text("VALUE = 2\n")
    body = """
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import sjhelper_nocache, sjhelper_late
"""
    assert run_py(tmp_path, {"r": body})["r"].outcome == "pass"
    assert run_py(tmp_path, {"r": body})["r"].outcome == "pass"
    assert sorted(p.name for p in (tmp_path / "rules").rglob("__pycache__")) == []


def test_planted_bytecode_beside_a_helper_is_not_run(tmp_path: Path) -> None:
    """A ``__pycache__`` file that claims to be a helper's bytecode (same mtime and
    size as its source) is ignored: the helper runs from its source."""
    import py_compile

    lib = tmp_path / "rules" / "_lib"
    lib.mkdir(parents=True)
    helper = lib / "sjhelper_planted.py"
    helper.write_text("VALUE = 9\n")
    os.utime(helper, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    py_compile.compile(str(helper), doraise=True)
    helper.write_text("VALUE = 1\n")  # same size, same mtime: the .pyc looks current
    os.utime(helper, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    body = """
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import sjhelper_planted
sys.exit(0 if sjhelper_planted.VALUE == 1 else f"ran planted bytecode: {sjhelper_planted.VALUE}")
"""
    result = run_py(tmp_path, {"r": body})["r"]
    assert result.outcome == "pass", result.reason
