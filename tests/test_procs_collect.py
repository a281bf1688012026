"""procs.run feeds a child's input and reads its two outputs in one thread (a poll on
the pipes and a pidfd): no order of reads and writes may block either side, and a
child stopped at its deadline is still read while it stops."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from slopjudge import procs
from tests.helpers import kill_quietly

MiB = 1024 * 1024
Start = Callable[..., procs.ProcResult]  # (script body, **run options) -> result


@pytest.fixture
def start(tmp_path: Path) -> Start:
    def run(body: str, **kw: Any) -> procs.ProcResult:
        script = tmp_path / "child.py"
        script.write_text(body, encoding="utf-8")
        return procs.run([sys.executable, str(script)], cwd=str(tmp_path), **kw)

    return run


def test_input_and_output_larger_than_a_pipe_both_ways_at_once(start: Start) -> None:
    # The child echoes while it reads: neither pipe's 64 KiB may fill and stall both.
    data = bytes(range(256)) * (3 * MiB // 256)
    res = start("import sys\n"
                "while chunk := sys.stdin.buffer.read(4096):\n"
                "    sys.stdout.buffer.write(chunk)\n"
                "    sys.stderr.buffer.write(chunk[:16])\n",
                input=data, timeout=60)
    assert res.returncode == 0, res.stderr[-500:]
    assert res.stdout == data
    assert len(res.stderr) == 16 * (len(data) // 4096)


def test_a_child_that_never_reads_its_large_input_still_ends(start: Start) -> None:
    began = time.monotonic()
    res = start("import sys\nprint('done')\nsys.exit(3)\n", input=b"x" * (4 * MiB), timeout=30)
    assert (res.returncode, res.stdout, res.timed_out) == (3, b"done\n", False)
    assert time.monotonic() - began < 20


def test_a_child_that_closes_its_outputs_early_is_waited_for(start: Start) -> None:
    res = start("import os, time\nprint('early', flush=True)\nos.close(1)\nos.close(2)\n"
                "time.sleep(0.5)\nos._exit(4)\n", timeout=30)
    assert (res.returncode, res.stdout, res.timed_out) == (4, b"early\n", False)


def test_at_the_deadline_output_written_while_stopping_is_read(start: Start) -> None:
    # On TERM it writes more than a pipe holds, then exits: nothing may wait on a
    # full pipe until the KILL, and what it wrote is kept.
    body = ("import signal, sys, time\n"
            "def bye(*_):\n"
            "    sys.stdout.buffer.write(b'z' * (1024 * 1024))\n"
            "    sys.stdout.flush()\n"
            "    sys.exit(0)\n"
            "signal.signal(signal.SIGTERM, bye)\n"
            "print('started', flush=True)\n"
            "time.sleep(60)\n")
    began = time.monotonic()
    res = start(body, timeout=1.0)
    took = time.monotonic() - began
    assert res.timed_out and res.returncode is None
    assert res.stdout.startswith(b"started\n") and res.stdout.count(b"z") == 1024 * 1024
    assert took < 1.0 + procs.KILL_GRACE_S - 0.5, took  # ended on its own, not by the KILL


def test_a_child_that_ignores_term_is_killed_after_the_grace_period(start: Start) -> None:
    body = ("import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('up', flush=True)\ntime.sleep(60)\n")
    began = time.monotonic()
    res = start(body, timeout=0.5)
    took = time.monotonic() - began
    assert res.timed_out and res.returncode is None and res.stdout == b"up\n"
    assert 0.5 + procs.KILL_GRACE_S - 0.2 < took < 0.5 + procs.KILL_GRACE_S + 5, took


def test_output_past_the_bound_is_dropped_but_the_child_runs_to_its_end(start: Start) -> None:
    res = start("import sys\nsys.stdout.buffer.write(b'a' * (8 * 1024 * 1024))\n"
                "sys.stderr.write('end')\n", timeout=60, max_output=MiB)
    assert res.returncode == 0
    assert MiB <= len(res.stdout) < MiB + 65536 + 1
    assert res.stderr == b"end"


def test_reaping_kills_a_leader_that_leads_no_group() -> None:
    # As a child just after the fork, before setsid: killing its group would miss
    # it, so it is killed by its pid too.
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        jail = procs._Jail.__new__(procs._Jail)  # no tag: nothing to sweep
        jail.tag = "not-a-tag"
        procs._reap_group(child, jail)
        assert child.wait(timeout=10) == -9
    finally:
        child.kill()
        child.wait()


def test_output_held_open_by_an_escaped_process_is_waited_for_without_spinning(
        tmp_path: Path) -> None:
    # A grandchild that dropped the check's tag (an exec with an empty environment) and
    # left its session holds stdout open: the output is waited for a bounded time,
    # asleep in poll, not by polling closed descriptors over and over.
    pidfile = tmp_path / "escaped.pid"
    body = ("import os, sys, time\n"
            "if os.fork() == 0:\n"
            "    os.setsid()\n"
            "    if os.fork() == 0:\n"
            f"        open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
            "        os.execve(sys.executable, [sys.executable, '-c', 'import time; "
            "time.sleep(30)'], {})\n"
            "    os._exit(0)\n"
            "time.sleep(0.5)\n"
            "print('ok', flush=True)\n")
    script = tmp_path / "child.py"
    script.write_text(body, encoding="utf-8")
    cpu = time.process_time()
    try:
        res = procs.run([sys.executable, str(script)], cwd=str(tmp_path), timeout=20)
        spent = time.process_time() - cpu
    finally:
        if pidfile.exists():
            kill_quietly([int(pidfile.read_text())])
    assert res.returncode == 0 and res.stdout == b"ok\n"
    assert spent < 0.5, f"{spent:.2f} s of CPU while waiting on the held output"


def test_a_program_that_imports_slopjudge_keeps_its_own_children() -> None:
    """A child the host started in a session of its own, with no tag, is no check's: a
    check that ends beside it neither kills it nor takes its exit status."""
    import subprocess

    # It ends with status 3 once its input closes: never by the clock.
    own = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read(); sys.exit(3)"],
                           stdin=subprocess.PIPE, start_new_session=True)
    try:
        assert procs.run(["true"], timeout=30).returncode == 0
        assert own.poll() is None, "the host's own child was killed by a check's end"
        assert own.stdin is not None
        own.stdin.close()
        assert own.wait(timeout=30) == 3
    finally:
        kill_quietly([own.pid])


def test_a_process_without_a_tag_is_told_from_one_that_cannot_be_read() -> None:
    """Only a readable environment without the tag marks an orphan that dropped it; one
    that cannot be read (gone, another user's) is never taken for it."""
    import subprocess

    bare = subprocess.Popen(["sleep", "30"], env={})
    try:
        assert procs._tags(bare.pid) == []
    finally:
        bare.kill()
        bare.wait()
    assert procs._tags(bare.pid) is None  # gone


@pytest.mark.parametrize("children_files", [True, False])
def test_children_are_found_with_or_without_the_kernels_children_files(
    monkeypatch: pytest.MonkeyPatch, children_files: bool
) -> None:
    """The orphan sweep finds a process's children from ``/proc/PID/task/*/children``, or,
    on a kernel without those files, from every process's ``stat``."""
    import builtins
    import os
    import subprocess

    def without_children_files(path: Any, *args: Any, **kw: Any) -> Any:
        if str(path).endswith("/children"):
            raise FileNotFoundError(path)
        return builtins.open(path, *args, **kw)

    if not children_files:
        monkeypatch.setattr(procs, "open", without_children_files, raising=False)
    child = subprocess.Popen(["sleep", "30"])
    try:
        tree: dict[int, list[int]] = {}
        assert child.pid in procs._children(os.getpid(), tree)
        assert bool(tree) is not children_files  # scanned only without the files
        assert procs._children(child.pid, tree) == []
    finally:
        child.kill()
        child.wait()
