"""Run a child process with input, a deadline, and no survivors: every command slopjudge
starts goes through :func:`run` (docs/runner-and-budgets.md, "Nothing outlives it").
A group does not hold a child that calls ``setsid``, hence the tag and the subreaper."""

from __future__ import annotations

import _signal as signal  # `signal` builds its enums on import; a hook needs none
import _thread  # a lock without importing `threading`
import itertools
import os
import sys
import time

from slopjudge.model import record

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    import subprocess

KILL_GRACE_S = 2.0
TAGS_ENV = "SLOPJUDGE_PROC_TAGS"

_COUNTER = itertools.count(1)
_JAILS: set[_Jail] = set()  # every containment not yet closed
_OPEN = _thread.allocate_lock()  # a child is started, or the last containment closed


def _kill(pid: int, sig: int, group: bool = False) -> bool:
    """Signal a process (``group``: its group); False when it is gone (or no longer ours)."""
    try:
        (os.killpg if group else os.kill)(pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class Registry(set[int]):
    """The leaders of run()'s children still running. A child has its own session, so a
    Ctrl-C never reaches it: the caller stops them by :meth:`signal_all`. One engine run
    owns one, so stopping its checks leaves another run's alone; every child is in
    :data:`EVERYONE` too, for :func:`kill_all`. (Empty, it is falsy: test ``is None``.)"""

    def signal_all(self, sig: int) -> int:
        """Send ``sig`` to every process group this registry has running; how many."""
        groups = list(self)  # a plain copy: a signal handler may call this mid-update
        for pgid in groups:
            _kill(pgid, sig, group=True)
        return len(groups)


EVERYONE = Registry()


def kill_all() -> None:
    """KILL every child run() has running and all they started (slopjudge is about to exit).
    No lock: a signal handler calls this, maybe while its own thread holds one."""
    EVERYONE.signal_all(signal.SIGKILL)
    for jail in list(_JAILS):  # also a child still starting, not yet listed
        jail.kill(untagged=_owns_process())
        _JAILS.discard(jail)


def is_python_script(path: str) -> bool:
    """A ``#!`` line naming python, or no ``#!`` line and a ``.py`` name."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        head = b""  # unreadable: judged by its name
    if not head.startswith(b"#!"):
        return path.endswith(".py")
    words = head[2:].split(b"\n", 1)[0].decode("latin-1").split()
    prog = os.path.basename(words[0]) if words else ""
    if prog == "env":
        prog = next((w for w in words[1:] if not w.startswith("-")), "")
    # python, python3 or python3.N (a regular expression would be compiled on every hook)
    version = prog[len("python3."):]
    return prog in ("python", "python3") or (
        prog.startswith("python3.") and version.isascii() and version.isdigit())


def script_argv(path: str) -> list[str]:
    """The command line for a rule's script or prepare: a Python script runs on slopjudge's
    own interpreter, so it needs no run bit (a wheel drops them) and PATH does not matter."""
    if "/" in path and sys.executable and is_python_script(path):
        return [sys.executable, path]
    return [path]  # a command found on PATH (no "/") is what the rule named


def _stat(pid: int, field: int) -> int | None:
    """A number of ``/proc/PID/stat`` counted from its state (1: parent, 3: session)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
        # The command name (field 2) may hold spaces and parentheses: split after the last ")".
        return int(data[data.rfind(b")") + 2:].split()[field])
    except (OSError, IndexError, ValueError):
        return None


def _children(pid: int, by_parent: dict[int, list[int]]) -> list[int]:
    """``pid``'s children: from ``/proc/PID/task/*/children`` where the kernel has it (a few
    small reads), else from every process's ``stat``, read once into ``by_parent``."""
    if not by_parent:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return []
        found: list[int] = []
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    found += [int(x) for x in f.read().split()]
            except FileNotFoundError:
                if os.path.exists(f"/proc/{pid}/task/{tid}"):
                    break  # no children files in this kernel
            except OSError:
                pass
        else:
            return found
        for child in (int(n) for n in os.listdir("/proc") if n.isdigit()):
            parent = _stat(child, 1)
            if parent is not None:
                by_parent.setdefault(parent, []).append(child)
    return by_parent.get(pid, [])


def _tags(pid: int) -> list[bytes] | None:
    """The tags in a process's environment: [] when it carries none; None when it cannot be
    read (gone, or another user's: a setuid program we could not kill anyway)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read()
    except OSError:
        return None
    name = TAGS_ENV.encode() + b"="
    return next((item[len(name):].split(b":") for item in environ.split(b"\0")
                 if item.startswith(name)), [])


_SUBREAPER = False


def _become_subreaper() -> None:
    """Make orphaned descendants re-parent to this process (Linux 3.4+; twice is harmless)."""
    global _SUBREAPER
    if not _SUBREAPER and sys.platform.startswith("linux"):
        import ctypes

        try:  # 36: PR_SET_CHILD_SUBREAPER
            _SUBREAPER = ctypes.CDLL(None).prctl(36, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            pass


class _Jail:
    """What holds one child and everything it starts: a tag in its environment, which its
    descendants inherit, and the subreaper, to which a descendant whose parent ends is
    handed (a ``setsid`` daemon included)."""

    def __init__(self) -> None:
        self.tag = f"{os.getpid()}.{next(_COUNTER)}"
        _become_subreaper()
        with _OPEN:
            _JAILS.add(self)

    def env(self, env: dict[str, str] | None) -> dict[str, str]:
        out = dict(os.environ if env is None else env)
        old = out.get(TAGS_ENV, "")
        out[TAGS_ENV] = f"{old}:{self.tag}" if old else self.tag
        return out

    def kill(self, untagged: bool = False) -> None:
        """KILL the orphans (re-parented to us) carrying this child's tag, and their
        descendants (async-signal tolerant: no locks). ``untagged``: also the orphans that
        dropped every tag (an exec with an environment of their own): outside our session,
        they are no thread's plain subprocess; only safe when no other child is starting."""
        me = os.getpid()
        tag = self.tag.encode()
        session = _stat(me, 3)

        def doomed_root(pid: int) -> bool:
            tags = _tags(pid)
            if tags == []:
                return untagged and _stat(pid, 3) not in (None, session)
            return tags is not None and tag in tags

        for _ in range(50):
            tree: dict[int, list[int]] = {}  # filled only where the kernel needs a scan
            doomed = [p for p in _children(me, tree) if p not in EVERYONE and doomed_root(p)]
            if not doomed:
                return
            for pid in doomed:  # the list grows as it goes: each one's children join it
                doomed.extend(_children(pid, tree))
            for pid in doomed:
                _kill(pid, signal.SIGKILL)
            _reap(doomed, me)

    def close(self) -> None:
        self.kill()
        with _OPEN:  # the last one out: no child is starting, none still bare of its tag
            _JAILS.discard(self)
            if not _JAILS and _owns_process():
                self.kill(untagged=True)


def _owns_process() -> bool:
    """Whether this process is the slopjudge command, so every orphan handed to it came
    from its checks. A program that imports slopjudge may start children of its own in
    a new session, which look the same. (A lookup, not an import: cli is the top layer.)"""
    return bool(getattr(sys.modules.get("slopjudge.cli"), "OWNS_PROCESS", False))


def _reap(doomed: list[int], me: int) -> None:
    """Wait for killed processes that are (or become) our children, so none stays a zombie:
    only these pids, as a wait on any child would steal a running check's exit status."""
    deadline = time.monotonic() + 1.0
    pending = set(doomed)
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            parent = _stat(pid, 1)
            if parent == me:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
            if parent in (None, me):
                pending.discard(pid)  # reaped here, or gone: reaped by someone
        if pending:
            time.sleep(0.001)  # its killed parent has not yet handed it to us


@record
class ProcResult:
    returncode: int | None  # None when it could not start or timed out
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    start_error: str | None = None  # why it could not start (missing, not executable)
    duration_s: float = 0.0
    pipes: tuple[bytes, ...] = ()  # what run()'s ``pipes`` carried, in order

    @property
    def signal(self) -> int | None:
        """The signal that killed it, if any."""
        code = self.returncode
        return -code if code is not None and code < 0 else None


def run(
    argv: list[str],
    *,
    input: bytes = b"",
    timeout: float | None = None,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    max_output: int = 64 * 1024 * 1024,
    registry: Registry | None = None,
    pipes: list[tuple[int, int]] | None = None,
) -> ProcResult:
    """Run ``argv`` (spawned, never through a shell nor a fork that runs Python: this
    process may have threads) and collect its output. ``registry``: the run it belongs to.
    ``pipes``: more outputs, ``(read, write)`` pairs from ``os.pipe()``: the child gets
    each write end at the same descriptor, each read end is read as stdout is
    (``max_output`` each) into ``ProcResult.pipes``; run() closes all of them."""
    import subprocess

    reads, writes = [r for r, _w in pipes or ()], [w for _r, w in pipes or ()]
    try:
        if not _exits_readable():
            return ProcResult(None, b"", b"", start_error="SIGCHLD is ignored in this process, "
                              "so no exit status can be read (a refusal would read as a pass)")
        started = time.monotonic()
        jail = _Jail()
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                cwd=cwd, env=jail.env(env), start_new_session=True,
                pass_fds=tuple(writes))
        except OSError as exc:
            jail.close()
            why = (f"{exc.filename or argv[0]}: not found" if isinstance(exc, FileNotFoundError)
                   else f"{argv[0]}: not executable" if isinstance(exc, PermissionError)
                   else f"{argv[0]}: {exc.strerror or exc}")
            return ProcResult(None, b"", b"", start_error=why,
                              duration_s=time.monotonic() - started)
        while writes:  # the child's copy is the only writer left: its end ends the pipe
            os.close(writes.pop())
        # Listed while it runs, so an interrupt or kill_all reaches it.
        listed = (EVERYONE, EVERYONE if registry is None else registry)
        for reg in listed:
            reg.add(proc.pid)
        try:
            return _collect(proc, jail, input, timeout, max_output, started, reads)
        finally:
            for reg in listed:
                reg.discard(proc.pid)
            jail.close()
    finally:
        for fd in reads + writes:
            os.close(fd)


def _exits_readable() -> bool:
    """Whether waiting for a child reads its exit status: not with SIGCHLD ignored (a
    parent can hand that down), where the kernel reaps children itself and a wait reads
    0. Put back to the default where this thread may (``cli.main`` does it at start)."""
    if signal.getsignal(signal.SIGCHLD) != signal.SIG_IGN:
        return True
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    except (ValueError, OSError):  # not the main thread: the caller owns signals
        return False
    return True


def _collect(
    proc: subprocess.Popen[bytes], jail: _Jail, input: bytes, timeout: float | None,
    max_output: int, started: float, extra: list[int],
) -> ProcResult:
    """Feed ``input``, read the outputs and wait for the child in one ``poll`` on the pipes
    and a pidfd (no threads to start). Past ``timeout``: TERM, KILL after a grace period,
    the output still read meanwhile (a child writing while it stops is not left blocked)."""
    import select  # here: a hook whose checks all run in its process starts no child

    assert proc.stdin and proc.stdout and proc.stderr  # run() makes all three pipes
    outputs = [proc.stdout.fileno(), proc.stderr.fileno(), *extra]
    sinks = {fd: bytearray() for fd in outputs}
    poller = select.poll()
    for fd in outputs:
        os.set_blocking(fd, False)
        poller.register(fd, select.POLLIN)
    reading = set(outputs)
    in_fd, feed = proc.stdin.fileno(), memoryview(input)
    os.set_blocking(in_fd, False)
    poller.register(in_fd, select.POLLOUT)  # closed once fed: the child reads its end
    try:  # ready once the leader exits (Linux 5.3+): Popen.wait(timeout) would sleep up
        pidfd = os.pidfd_open(proc.pid)  # to 50 ms between asks, added to every check
    except (AttributeError, OSError):  # not Linux, or an older one: waitpid is asked below
        pidfd = -1
    else:
        poller.register(pidfd, select.POLLIN)
    now = time.monotonic()
    deadline = None if timeout is None else now + timeout
    kill_at: float | None = None  # after the TERM of a timeout
    timed_out = exited = False
    delay = 0.0005  # without a pidfd: how long until waitpid is asked again
    try:
        while not exited:
            until = kill_at if kill_at is not None else deadline
            wait = None if until is None else max(0.0, until - now)
            if pidfd < 0:
                wait = delay if wait is None else min(wait, delay)
                delay = min(delay * 2, 0.05)
            gone = False
            for fd, _event in poller.poll(None if wait is None else wait * 1000):
                if fd == pidfd:
                    gone = True  # the leader exited: its status is there to take
                elif fd == in_fd:
                    try:
                        feed = feed[os.write(in_fd, feed):]
                    except BlockingIOError:
                        pass
                    except OSError:  # EPIPE: the child does not read its input, its business
                        feed = feed[:0]
                    if not feed:
                        poller.unregister(in_fd)
                        in_fd = _close_input(proc)
                elif not _read_some(fd, sinks, max_output):
                    poller.unregister(fd)
                    reading.discard(fd)
            exited = (proc.wait() if gone else proc.poll()) is not None
            now = time.monotonic()
            if exited or until is None or now < until:
                continue
            timed_out = True  # the deadline: TERM, then KILL after the grace period
            if kill_at is not None or not _kill(proc.pid, signal.SIGTERM, group=True):
                break
            kill_at = now + KILL_GRACE_S
    except BaseException:
        # Interrupted (Ctrl-C): take the whole group down before going on.
        if _kill(proc.pid, signal.SIGTERM, group=True):
            import subprocess  # loaded already: run() started the child with it

            try:
                proc.wait(timeout=KILL_GRACE_S)
            except subprocess.TimeoutExpired:
                pass
        _reap_group(proc, jail)
        raise
    finally:
        # Out of the poll before they are closed: a closed descriptor still registered
        # would poll as ready (POLLNVAL) at once, every time, while the outputs drain.
        for fd in (pidfd, in_fd):
            if fd >= 0:
                poller.unregister(fd)
        if pidfd >= 0:
            os.close(pidfd)
        _close_input(proc)  # closing it twice is harmless
    # The leader may have exited while children it forked still hold the pipes or
    # keep running; a check owns all it started, so none outlive it. With every
    # writer killed the pipes end; what is left in them is read.
    _reap_group(proc, jail)
    proc.wait()  # at once when it exited; else killed just now: it cannot outlast the KILL
    ends = time.monotonic() + KILL_GRACE_S + 1
    while reading and time.monotonic() < ends:
        for fd, _event in poller.poll(max(0.0, ends - time.monotonic()) * 1000):
            if fd in reading and not _read_some(fd, sinks, max_output):
                poller.unregister(fd)
                reading.discard(fd)
    out, err, *more = (bytes(sinks[fd]) for fd in outputs)
    return ProcResult(None if timed_out else proc.returncode, out, err, timed_out=timed_out,
                      duration_s=time.monotonic() - started, pipes=tuple(more))


def _read_some(fd: int, sinks: dict[int, bytearray], max_output: int) -> bool:
    """Read what ``fd`` has (past ``max_output`` it is read and dropped); False at its end."""
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return True
    except OSError:
        chunk = b""
    if len(sinks[fd]) < max_output:
        sinks[fd] += chunk
    return bool(chunk)


def _close_input(proc: subprocess.Popen[bytes]) -> int:
    try:
        proc.stdin.close()  # type: ignore[union-attr]  # a pipe: run() makes one
    except OSError:
        pass
    return -1


def _reap_group(proc: subprocess.Popen[bytes], jail: _Jail) -> None:
    """After the leader exits (or is told to), kill anything it left behind."""
    if proc.returncode is None:
        # The leader itself, by its pid (ours until it is waited for): just after the
        # fork it may not yet lead a group of its own.
        _kill(proc.pid, signal.SIGKILL)
    _kill(proc.pid, signal.SIGKILL, group=True)
    jail.kill()
