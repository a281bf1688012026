"""Run a child process with input, a deadline, and no survivors.

Every command slopjudge starts (script checks, prepare, the judge runner, the
harness inside slopjudge-agent) goes through :func:`run`. The child gets its
own process group, so a timeout kills everything it forked: TERM first, then
KILL after a grace period.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import IO

KILL_GRACE_S = 2.0

# Process groups started by run() and still running. Each child gets its own
# session, so a Ctrl-C at the terminal never reaches it: on an interrupt the
# caller stops them through signal_all().
_LIVE: set[int] = set()
_LIVE_LOCK = threading.Lock()


def signal_all(sig: int) -> int:
    """Send ``sig`` to every process group run() has running; how many there were."""
    with _LIVE_LOCK:
        groups = list(_LIVE)
    for pgid in groups:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass
    return len(groups)


@dataclass
class ProcResult:
    returncode: int | None  # None when it could not start or timed out
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    start_error: str | None = None  # why it could not start (missing, not executable)
    duration_s: float = 0.0

    @property
    def signal(self) -> int | None:
        """The signal that killed it, if any."""
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        return None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return
    try:
        proc.wait(timeout=KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        pass
    # Whatever the leader did, its group may still hold children: KILL them all.
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(
    argv: list[str],
    *,
    input: bytes = b"",
    timeout: float | None = None,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    max_output: int = 64 * 1024 * 1024,
) -> ProcResult:
    """Run ``argv`` directly (never through a shell) and collect its output."""
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    except FileNotFoundError:
        return ProcResult(None, b"", b"", start_error=f"{argv[0]}: not found",
                          duration_s=time.monotonic() - started)
    except PermissionError:
        return ProcResult(None, b"", b"", start_error=f"{argv[0]}: not executable",
                          duration_s=time.monotonic() - started)
    except OSError as exc:
        return ProcResult(None, b"", b"", start_error=f"{argv[0]}: {exc.strerror or exc}",
                          duration_s=time.monotonic() - started)

    with _LIVE_LOCK:
        _LIVE.add(proc.pid)
    try:
        return _collect(proc, input, timeout, max_output, started)
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc.pid)


def _collect(
    proc: subprocess.Popen[bytes], input: bytes, timeout: float | None, max_output: int,
    started: float,
) -> ProcResult:
    out_chunks: list[bytes] = []
    err_chunks: list[bytes] = []

    def _drain(stream: IO[bytes], sink: list[bytes]) -> None:
        size = 0
        read = stream.read
        while True:
            chunk = read(65536)
            if not chunk:
                break
            if size < max_output:
                sink.append(chunk)
                size += len(chunk)

    readers = [
        threading.Thread(target=_drain, args=(proc.stdout, out_chunks), daemon=True),
        threading.Thread(target=_drain, args=(proc.stderr, err_chunks), daemon=True),
    ]
    for t in readers:
        t.start()

    def _feed() -> None:
        assert proc.stdin is not None
        try:
            if input:
                proc.stdin.write(input)
        except (BrokenPipeError, OSError):
            pass  # the child does not read its input: that is its business
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    writer = threading.Thread(target=_feed, daemon=True)
    writer.start()

    timed_out = False
    try:
        timed_out = not _wait(proc, timeout)
    except BaseException:
        # Interrupted (Ctrl-C): take the whole group down before going on.
        _kill_group(proc)
        raise
    # The leader may have exited while children it forked still hold the pipes
    # or keep running; a check owns its whole group, so none outlive it.
    _kill_group(proc) if timed_out else _reap_group(proc)
    writer.join(timeout=1)
    for t in readers:
        t.join(timeout=KILL_GRACE_S + 1)
    return ProcResult(
        None if timed_out else proc.returncode,
        b"".join(out_chunks),
        b"".join(err_chunks),
        timed_out=timed_out,
        duration_s=time.monotonic() - started,
    )


def _wait(proc: subprocess.Popen[bytes], timeout: float | None) -> bool:
    """Wait for the child; False on timeout.

    Popen.wait(timeout) polls with sleeps of up to 50 ms, which would add to
    every check; a pidfd wakes the moment the child exits (Linux 5.3+).
    """
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is not None:
        try:
            fd = pidfd_open(proc.pid)
        except OSError:
            fd = -1
        if fd >= 0:
            try:
                ready, _, _ = select.select([fd], [], [], timeout)
            finally:
                os.close(fd)
            if not ready:
                return False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def _reap_group(proc: subprocess.Popen[bytes]) -> None:
    """After the leader exits, kill anything it left behind in its group."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
