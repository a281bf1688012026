"""Each engine run owns its children: stopping one run's checks leaves another
run's (in the same process) running. And a forked Python check gets its folder
without the parent's changing."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from slopjudge import procs
from slopjudge.checks.engine import stop_running


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def _wait_for(cond: Callable[[], bool], seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def _start(kind: str, registry: procs.Registry, tmp_path: Path, out: dict[str, procs.ProcResult],
           name: str) -> threading.Thread:
    def go() -> None:
        if kind == "python":
            script = tmp_path / f"{name}.py"
            script.write_text("import time\ntime.sleep(60)\n")
            out[name] = procs.run([sys.executable, str(script)], timeout=120,
                                  cwd=str(tmp_path), registry=registry)
        else:
            out[name] = procs.run(["sleep", "60"], timeout=120, registry=registry)

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("kind", ["exec", "python"])
def test_stopping_one_run_leaves_the_other_runs_child_alive(tmp_path: Path, kind: str) -> None:
    first, second = procs.Registry(), procs.Registry()
    results: dict[str, procs.ProcResult] = {}
    a = _start(kind, first, tmp_path, results, "a")
    b = _start(kind, second, tmp_path, results, "b")
    _wait_for(lambda: bool(list(first)) and bool(list(second)))
    (pid_a,), (pid_b,) = list(first), list(second)
    assert pid_a in procs.EVERYONE and pid_b in procs.EVERYONE  # for kill_all on exit
    # A fork is listed before it has made its own session; until then its group
    # cannot be signalled (a run's stop_running repeats the signal for this).
    _wait_for(lambda: os.getpgid(pid_a) == pid_a and os.getpgid(pid_b) == pid_b)
    try:
        assert first.signal_all(signal.SIGTERM) == 1
        a.join(timeout=15)
        assert not a.is_alive() and results["a"].signal == signal.SIGTERM
        assert not _alive(pid_a) and list(first) == [] and pid_a not in procs.EVERYONE
        assert b.is_alive() and _alive(pid_b) and list(second) == [pid_b]
    finally:
        second.signal_all(signal.SIGKILL)
        b.join(timeout=15)
    assert results["b"].signal == signal.SIGKILL and not _alive(pid_b)


def test_stop_running_stops_only_its_own_run(tmp_path: Path) -> None:
    mine, other = procs.Registry(), procs.Registry()
    results: dict[str, procs.ProcResult] = {}
    a = _start("exec", mine, tmp_path, results, "a")
    b = _start("exec", other, tmp_path, results, "b")
    _wait_for(lambda: bool(list(mine)) and bool(list(other)))
    (pid_b,) = list(other)
    try:
        ended = threading.Event()

        def finish() -> None:
            a.join()
            ended.set()

        threading.Thread(target=finish, daemon=True).start()
        stop_running([ended], grace=5.0, processes=mine)
        assert results["a"].signal == signal.SIGTERM
        assert _alive(pid_b) and b.is_alive()
    finally:
        other.signal_all(signal.SIGKILL)
        b.join(timeout=15)


def test_a_python_check_runs_in_its_folder_and_the_parent_stays(tmp_path: Path) -> None:
    folder = tmp_path / "rule"
    folder.mkdir()
    script = folder / "check.py"
    script.write_text("import os, sys\nsys.stdout.write(os.getcwd())\n")
    before = os.getcwd()
    res = procs.run([sys.executable, str(script)], timeout=30, cwd=str(folder))
    assert (res.returncode, res.stdout.decode()) == (0, str(folder))
    assert os.getcwd() == before


def test_a_missing_folder_is_a_start_error(tmp_path: Path) -> None:
    script = tmp_path / "check.py"
    script.write_text("print('ran')\n")
    gone = str(tmp_path / "gone")
    execed = procs.run([sys.executable, str(script)], timeout=30, cwd=gone)
    assert execed.start_error == f"{gone}: not found"
    assert execed.stdout == b""
