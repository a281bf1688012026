"""slopjudge started with SIGCHLD ignored (a parent can hand that down across exec):
the kernel would reap every child itself and each wait would read status 0, so a
refusing check, or a shell check's failing command, would read as a pass."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from tests.failclosed.hooks_kit import clean_env, deny_reason, pre_tool
from tests.helpers import commit_all, make_repo, script_rule, write_rule


def _ignoring_sigchld() -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # kept across the exec that follows


def _slopjudge(args: list[str], ws: Path, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "slopjudge", *args], cwd=ws, input=stdin,
                          capture_output=True, env=clean_env(), timeout=60,
                          preexec_fn=_ignoring_sigchld)


def test_a_run_started_with_sigchld_ignored_still_refuses(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws")
    rules = ws / "rules"
    # A shell check whose failing command decides, and a Python check that refuses.
    script_rule(rules, "shell-says-no", "grep -q never-there README.md || exit 1",
                on=["ci"])
    write_rule(rules, "python-says-no",
               "description: python-says-no test rule\non: [ci]\n"
               "checks:\n  - id: check\n    script: check.py\n",
               {"check.py": "import sys\nprint('no')\nsys.exit(1)\n"})
    commit_all(ws, "rules")
    (ws / "a.txt").write_text("x\n")
    commit_all(ws, "a change")
    res = _slopjudge(["run", "--base", "HEAD~1", "--format", "json"], ws)
    assert res.returncode == 1, res.stderr.decode()
    outcomes = {c["id"]: c["outcome"] for c in json.loads(res.stdout)["checks"]}
    assert outcomes == {"shell-says-no/check": "refuse", "python-says-no/check": "refuse"}


def test_a_pre_tool_hook_started_with_sigchld_ignored_still_denies(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "ws")
    script_rule(ws / "rules", "no-bash", "exit 1", on=["pre-tool"], tools=["Bash"])
    commit_all(ws, "rules")
    res = _slopjudge(["hook", "pre-tool"], ws,
                     json.dumps(pre_tool(ws, "Bash", {"command": "ls"})).encode())
    assert res.returncode == 0, res.stderr.decode()
    assert "no-bash" in deny_reason(json.loads(res.stdout))


def test_a_check_run_where_sigchld_stays_ignored_is_an_error_not_a_pass(tmp_path: Path) -> None:
    # slopjudge used as a library from a thread, which may not change signals: a check
    # whose exit cannot be read does not run (an error), rather than read as exit 0.
    import threading

    from slopjudge import procs

    old = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    got: list[procs.ProcResult] = []
    try:
        worker = threading.Thread(target=lambda: got.append(
            procs.run(["/bin/sh", "-c", "exit 1"], timeout=10, cwd=str(tmp_path))))
        worker.start()
        worker.join(30)
    finally:
        signal.signal(signal.SIGCHLD, old)
    [res] = got
    assert res.returncode is None and res.start_error is not None
    assert "SIGCHLD is ignored" in res.start_error
    # In the main thread it is put back to the default, and the exit is read.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        assert procs.run(["/bin/sh", "-c", "exit 1"], timeout=10, cwd=str(tmp_path)).returncode == 1
        assert signal.getsignal(signal.SIGCHLD) == signal.SIG_DFL
    finally:
        signal.signal(signal.SIGCHLD, old)
