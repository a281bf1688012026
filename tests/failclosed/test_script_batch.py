"""Python script checks of one run share a child process (checks/batch.py): each still
sees what its own ``python script.py`` would, gets the result its own process would
have given, and every way the batch can fail to answer leaves the check to run alone
or blocks; never a pass it did not earn."""

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
from slopjudge.model import Changeset, Check, CheckResult, Event, FileChange, Rule
from tests.helpers import commit_all, kill_quietly, make_repo, py, sj, wait_gone, write_rule

PASSING = "import sys\nsys.stdin.read()\n"


def _rule(folder: Path, rid: str, timeout: float) -> Rule:
    check = Check(id="check", rule=rid, kind="script", script=str(folder / "check.py"),
                  timeout=timeout)
    return Rule(id=rid, path=str(folder / "rule.yaml"), dir=str(folder),
                description=f"{rid} test rule", checks=[check])


def run_batch(tmp_path: Path, bodies: dict[str, str], timeout: float = 30.0,
              timeouts: dict[str, float] | None = None,
              extra: dict[str, str] | None = None) -> dict[str, CheckResult]:
    """One engine run of a Python script check per body, in the order given; ``extra``:
    more files beside the rules (``<rule>/<name>``)."""
    rules = []
    for rid, body in bodies.items():
        folder = tmp_path / "rules" / rid
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "check.py").write_text(body.strip("\n") + "\n", encoding="utf-8")
        rules.append(_rule(folder, rid, (timeouts or {}).get(rid, timeout)))
    for name, text in (extra or {}).items():
        (tmp_path / "rules" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "rules" / name).write_text(text, encoding="utf-8")
    change = Changeset(files=[FileChange(path="a.py", status="A", new_content="x = 1\n",
                                         diff="+x = 1\n", added=1)])
    results = engine.run(rules, Event(kind="pre-tool", tool_name="Write"), change,
                         workspace=str(tmp_path), options=RunOptions(jobs=2))
    return {r.rule: r for r in results}


def test_each_script_sees_its_own_process_in_one_shared_child(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    seen.mkdir()
    body = f"""
import json, os, sys
data = json.load(sys.stdin)
rule = os.environ["SLOPJUDGE_RULE"]
json.dump({{"pid": os.getpid(), "ppid": os.getppid(), "argv": sys.argv, "cwd": os.getcwd(),
           "path0": sys.path[0], "main": __name__, "check": data["check"],
           "worker": "slopjudge.procs" in sys.modules, "leaked": os.environ.get("LEAK"),
           "seen_before": "seen_marker" in globals()}},
          open(os.path.join({str(seen)!r}, rule), "w"))
os.environ["LEAK"] = rule
seen_marker = 1
print("looked")
"""
    results = run_batch(tmp_path, {"a": body, "b": body})
    assert [r.outcome for r in results.values()] == ["pass", "pass"], results
    got = {rid: json.loads((seen / rid).read_text()) for rid in ("a", "b")}
    assert got["a"]["pid"] == got["b"]["pid"], "the two scripts did not share a child"
    for rid, info in got.items():
        folder = str(tmp_path / "rules" / rid)
        assert info == {"pid": got["a"]["pid"], "ppid": os.getpid(),
                        "argv": [os.path.join(folder, "check.py")], "cwd": folder,
                        "path0": os.path.realpath(folder), "main": "__main__",
                        "check": {"id": "check"}, "worker": False, "leaked": None,
                        "seen_before": False}


@pytest.mark.parametrize(("body", "outcome", "reason"), [
    ("import sys\nprint('TODO left', file=sys.stderr)\nsys.exit(3)", "refuse", "TODO left"),
    ("import sys\nsys.exit('plain message')", "refuse", "plain message"),
    ("raise ValueError('boom')", "refuse", "ValueError: boom"),
    ("import json\nprint(json.dumps({'reason': 'nope'}))\nraise SystemExit(1)", "refuse", "nope"),
    ("import sys\nsys.exit(256)", "pass", ""),  # the status is the low byte, as the OS has it
    ("raise KeyboardInterrupt", "error", "killed by SIGINT"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "error", "killed by SIGKILL"),
    ("import os\nos.abort()", "error", "killed by SIGABRT"),
    ("import os, sys\nsys.stdout.write('partial')\nos._exit(0)", "pass", ""),
    ("import os\nprint('said', flush=True)\nos._exit(5)", "refuse", "said"),
    ("def broken(:\n    pass", "refuse", "SyntaxError"),
    ("import atexit, sys\natexit.register(lambda: print('bye', file=sys.stderr))\nsys.exit(4)",
     "refuse", "bye"),
    ("import threading, time\nthreading.Thread(target=time.sleep, args=(3,), daemon=True).start()\n"
     "raise SystemExit(2)", "refuse", "exited with status 2"),
])
def test_status_as_its_own_process_and_the_next_script_unharmed(
        tmp_path: Path, body: str, outcome: str, reason: str) -> None:
    results = run_batch(tmp_path, {"first": body, "next": PASSING})
    assert results["first"].outcome == outcome, results["first"].reason
    assert reason in results["first"].reason
    if outcome == "refuse" and reason.startswith("exited"):
        assert results["first"].reason == "script exited with status 2 and gave no reason"
    assert results["next"].outcome == "pass", results["next"].reason


def test_a_traceback_is_the_one_its_own_process_prints(tmp_path: Path) -> None:
    body = "def broken():\n    raise ValueError('boom')\nbroken()"
    results = run_batch(tmp_path, {"raises": body, "next": PASSING})
    script = tmp_path / "rules" / "raises" / "check.py"
    assert results["raises"].reason == (
        f'Traceback (most recent call last):\n  File "{script}", line 3, in <module>\n'
        f'    broken()\n  File "{script}", line 2, in broken\n'
        "    raise ValueError('boom')\nValueError: boom")


def test_a_hung_script_times_out_on_its_own_and_every_descendant_dies(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    hang = f"""
import os, subprocess, time
bg = subprocess.Popen(["sleep", "60"])
forked = os.fork()
if forked == 0:
    os.setsid()
    time.sleep(60)
    os._exit(0)
with open({str(pids)!r}, "a") as fh:
    fh.write(f"{{os.getpid()}} {{bg.pid}} {{forked}} ")
time.sleep(60)
"""
    try:
        results = run_batch(tmp_path, {"slow": hang, "fast": PASSING},
                            timeouts={"slow": 1.0, "fast": 20.0})
        assert results["slow"].outcome == "error"
        assert results["slow"].reason == "timed out after 1 s"
        assert results["fast"].outcome == "pass", results["fast"].reason
        left = [int(p) for p in pids.read_text().split()]
        assert wait_gone(left, within=3.0) == [], "a process of the check outlived it"
    finally:
        if pids.exists():
            kill_quietly([int(p) for p in pids.read_text().split()])


def test_modules_of_a_rule_folder_are_its_own(tmp_path: Path) -> None:
    """Two rules each with a ``helper.py`` of their own: each imports its own, while a
    module from outside the rule folders (the pack's ``_lib``) is imported once."""
    count = tmp_path / "imports"
    body = """
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import helper, sharedlib
sys.exit(0 if helper.VALUE == os.environ["SLOPJUDGE_RULE"] else f"got {helper.VALUE}")
"""
    results = run_batch(tmp_path, {"a": body, "b": body}, extra={
        "a/helper.py": "VALUE = 'a'\n", "b/helper.py": "VALUE = 'b'\n",
        "_lib/sharedlib.py": f"open({str(count)!r}, 'a').write('x')\n"})
    assert [r.outcome for r in results.values()] == ["pass", "pass"], results
    assert count.read_text() == "x"


def test_signal_handlers_and_timers_do_not_reach_the_next_script(tmp_path: Path) -> None:
    arm = "import signal\nsignal.signal(signal.SIGALRM, lambda *a: None)\nsignal.setitimer(" \
          "signal.ITIMER_REAL, 0.2)\n"
    wait = "import time\ntime.sleep(0.6)\n"  # an inherited timer with the default action kills
    results = run_batch(tmp_path, {"arm": arm, "wait": wait})
    assert results["wait"].outcome == "pass", results["wait"].reason


def test_extra_output_pipes_are_capped(tmp_path: Path) -> None:
    read, write = os.pipe()
    code = f"import os\nfor _ in range(8):\n    os.write({write}, b'x' * (1 << 20))\n"
    res = procs.run([sys.executable, "-c", code], timeout=30, max_output=1 << 20,
                    pipes=[(read, write)])
    assert res.returncode == 0, res.stderr
    (carried,) = res.pipes
    assert 1 << 20 <= len(carried) < (1 << 20) + 65536 * 2


def test_batch_killed_mid_check_blocks_the_tool_call(tmp_path: Path) -> None:
    """The child running a batch dies from outside (OOM killer, kill -9) while a check
    runs: that check is an error and the PreToolUse hook denies the call."""
    repo = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    pidfile = tmp_path / "worker.pid"
    for rid, body in (("quick-py", "import sys\nsys.stdin.read()\n"),
                      ("slow-py", f"""
import os, sys, time
sys.stdin.read()
open({str(pidfile)!r}, "w").write(str(os.getpid()))
time.sleep(60)
""")):
        write_rule(repo / "rules", rid, f"""
description: {rid}
on: [pre-tool]
tools: [Write]
checks:
  - id: look
    script: look.py
    timeout: 60s
""", {"look.py": py(body)})
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


def test_a_huge_change_runs_its_scripts_alone(tmp_path: Path) -> None:
    """A batch would hold every payload at once: past MAX_PAYLOADS each script runs
    alone, holding only its own."""
    from slopjudge.checks.batch import MAX_PAYLOADS

    pids = tmp_path / "pids"
    body = (f"import os, sys\nsys.stdin.read()\n"
            f"open({str(pids)!r}, 'a').write(f'{{os.getpid()}} ')\n")
    rules = []
    for rid in ("a", "b"):
        folder = tmp_path / "rules" / rid
        folder.mkdir(parents=True)
        (folder / "check.py").write_text(body, encoding="utf-8")
        rules.append(_rule(folder, rid, 60.0))
    text = "x = 1\n" * (MAX_PAYLOADS // 12 + 1)
    change = Changeset(files=[FileChange(path="a.py", status="A", new_content=text,
                                         diff="", added=1)])
    results = engine.run(rules, Event(kind="pre-tool", tool_name="Write"), change,
                         workspace=str(tmp_path), options=RunOptions(jobs=2))
    assert [r.outcome for r in results] == ["pass", "pass"], results
    assert len(set(pids.read_text().split())) == 2
