"""Run a child process with input, a deadline, and no survivors.

Every command slopjudge starts (script checks, prepare, the judge runner, the
harness inside slopjudge-agent) goes through :func:`run`. The child gets its
own process group, so a timeout kills everything it forked: TERM first, then
KILL after a grace period.

A process group does not hold a child that calls ``setsid`` (a daemonising
double fork), so each child is also contained by the kernel:

- a cgroup v2 of its own where the cgroup tree is writable (``cgroup.kill``
  ends every process in it, however it forked), entered before ``exec``;
- else slopjudge is a child subreaper (``PR_SET_CHILD_SUBREAPER``): orphans
  re-parent to it instead of init, each carries its child's tag in
  ``SLOPJUDGE_PROC_TAGS``, and they are killed with the child that made them.

Either way nothing a check started outlives it, its timeout, or a signal to
slopjudge (:func:`kill_all`).
"""

from __future__ import annotations

import _signal as signal  # `signal` builds its enums on import; a hook needs none
import gc
import itertools
import os
import select
import sys
import threading
import time
import types

from slopjudge.model import record

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable
    from typing import IO, Any

KILL_GRACE_S = 2.0
TAGS_ENV = "SLOPJUDGE_PROC_TAGS"

_COUNTER = itertools.count(1)
_JAILS: set[_Jail] = set()  # every containment not yet closed


def _killpg(pgid: int, sig: int) -> bool:
    """Signal a process group; False when it is gone (or no longer ours)."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


class Registry:
    """Children started by run() and still running: leader pid -> its
    containment.

    Each child gets its own session, so a Ctrl-C at the terminal never reaches
    it: on an interrupt the caller stops them through :meth:`signal_all`. One
    engine run owns one registry, so stopping its checks leaves another run's
    (in the same process) alone; every child is in :data:`EVERYONE` too, for
    :func:`kill_all` when the process itself is going away.
    """

    def __init__(self) -> None:
        self._live: dict[int, _Jail] = {}
        self._lock = threading.Lock()

    def add(self, pid: int, jail: _Jail) -> None:
        with self._lock:
            self._live[pid] = jail

    def discard(self, pid: int) -> None:
        with self._lock:
            self._live.pop(pid, None)

    def __contains__(self, pid: object) -> bool:
        return pid in self._live

    def pids(self) -> list[int]:
        return list(self._live)  # a plain copy: a signal handler may call this mid-update

    def signal_all(self, sig: int) -> int:
        """Send ``sig`` to every process group this registry has running; how many."""
        groups = self.pids()
        for pgid in groups:
            _killpg(pgid, sig)
        return len(groups)


EVERYONE = Registry()


class _running:  # noqa: N801 - used as a statement: ``with _running(pid, jail, registry):``
    """``pid`` is listed (in ``registry`` and :data:`EVERYONE`) while the block runs;
    after it, whatever it left is killed and its containment removed. (A class, not a
    ``contextlib`` generator: importing contextlib costs a hook more than this.)"""

    def __init__(self, pid: int, jail: _Jail, registry: Registry | None) -> None:
        self.pid, self.jail = pid, jail
        self.listed = ([EVERYONE] if registry is None or registry is EVERYONE
                       else [EVERYONE, registry])

    def __enter__(self) -> None:
        for reg in self.listed:
            reg.add(self.pid, self.jail)

    def __exit__(self, *exc: object) -> None:
        for reg in self.listed:
            reg.discard(self.pid)
        self.jail.close()


def signal_all(sig: int) -> int:
    """Send ``sig`` to every process group run() has running in this process; how many."""
    return EVERYONE.signal_all(sig)


def kill_all() -> int:
    """KILL every child run() has running and everything they started; how many children.

    For signal handlers: slopjudge is about to exit and must leave nothing behind.
    """
    leaders = EVERYONE.pids()
    for pgid in leaders:
        _killpg(pgid, signal.SIGKILL)
    for jail in list(_JAILS):  # also a child still starting, not yet listed
        jail.close()
    return len(leaders)


# ---- how a rule's script is started ----------------------------------------



def is_python_script(path: str) -> bool:
    """A ``#!`` line naming python, or no ``#!`` line and a ``.py`` name."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return path.endswith(".py")
    if not head.startswith(b"#!"):
        return path.endswith(".py")
    words = head[2:].split(b"\n", 1)[0].decode("latin-1").split()
    if not words:
        return False
    prog = os.path.basename(words[0])
    if prog == "env":
        rest = [w for w in words[1:] if not w.startswith("-")]
        prog = rest[0] if rest else ""
    # python, python3 or python3.N (a regular expression would be compiled on every hook)
    version = prog[len("python3."):]
    return prog in ("python", "python3") or (
        prog.startswith("python3.") and version.isascii() and version.isdigit())


def script_argv(path: str) -> list[str]:
    """The command line for a rule's script or prepare.

    A Python script runs on the interpreter slopjudge runs on, never one found
    on PATH: it then needs no run bit (a wheel install drops them) and sees the
    same Python whatever the shell's PATH says. Anything else runs directly.
    """
    if "/" not in path:
        return [path]  # a command found on PATH: it is what the rule named
    if sys.executable and is_python_script(path):
        return [sys.executable, path]
    return [path]


# ---- containment -------------------------------------------------------------


def _proc_dirs() -> list[int]:
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def _ppid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ")".
    fields = data[data.rfind(b")") + 2:].split()
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return None


class _Tree:
    """Who is whose child: from ``/proc/PID/task/*/children`` where the kernel has it
    (a few small reads), else from every process's ``stat``, read once."""

    def __init__(self) -> None:
        self.by_parent: dict[int, list[int]] | None = None

    def children(self, pid: int) -> list[int]:
        if self.by_parent is None:
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
                        self._scan()  # no children files in this kernel
                        return self.children(pid)
                except OSError:
                    pass
            return found
        return self.by_parent.get(pid, [])

    def _scan(self) -> None:
        self.by_parent = {}
        for child in _proc_dirs():
            parent = _ppid(child)
            if parent is not None:
                self.by_parent.setdefault(parent, []).append(child)


def _has_tag(pid: int, tag: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read()
    except OSError:
        return False
    for item in environ.split(b"\0"):
        if item.startswith(TAGS_ENV.encode() + b"="):
            return tag in item[len(TAGS_ENV) + 1:].split(b":")
    return False


class _Cgroups:
    """Per-child cgroups under slopjudge's own cgroup v2, if it may make them."""

    def __init__(self) -> None:
        self.base: str | None = None
        self.probed = False
        self.lock = threading.Lock()

    @staticmethod
    def _own_dir() -> str | None:
        try:
            with open("/proc/self/cgroup", encoding="utf-8") as f:
                rel = next((ln[3:].strip() for ln in f if ln.startswith("0::")), None)
            if rel is None:
                return None
            with open("/proc/self/mountinfo", encoding="utf-8") as f:
                for line in f:
                    left, _, right = line.partition(" - ")
                    if right.split(" ", 1)[0] == "cgroup2":
                        mount = left.split()[4]
                        return os.path.join(mount, rel.lstrip("/"))
        except (OSError, StopIteration):
            return None
        return None

    def available(self) -> str | None:
        if self.probed:
            return self.base
        with self.lock:
            if not self.probed:
                self.base = self._probe()
                self.probed = True
        return self.base

    def _probe(self) -> str | None:
        if os.environ.get("SLOPJUDGE_NO_CGROUP"):
            return None
        own = self._own_dir()
        if not own or not os.access(os.path.join(own, "cgroup.procs"), os.W_OK):
            return None
        probe = os.path.join(own, f"slopjudge-{os.getpid()}-probe")
        try:
            os.mkdir(probe)
        except OSError:
            return None
        try:
            usable = os.path.exists(os.path.join(probe, "cgroup.kill"))  # Linux 5.14+
        finally:
            try:
                os.rmdir(probe)
            except OSError:
                pass
        if usable:
            _remove_stale(own)
        return own if usable else None

    def disable(self) -> None:
        self.base = None
        self.probed = True


_CGROUPS = _Cgroups()
_SUBREAPER = False
_SUBREAPER_LOCK = threading.Lock()


def _become_subreaper() -> bool:
    """Make orphaned descendants re-parent to this process (Linux 3.4+)."""
    global _SUBREAPER
    if _SUBREAPER:
        return True
    with _SUBREAPER_LOCK:
        if not _SUBREAPER and sys.platform.startswith("linux"):
            import ctypes

            try:
                libc = ctypes.CDLL(None, use_errno=True)
                pr_set_child_subreaper = 36
                _SUBREAPER = libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0) == 0
            except (OSError, AttributeError):
                _SUBREAPER = False
    return _SUBREAPER


class _Jail:
    """What holds one child and everything it starts: a cgroup, or a tag plus the subreaper."""

    def __init__(self) -> None:
        self.tag = f"{os.getpid()}.{next(_COUNTER)}"
        self.cgroup: str | None = None
        base = _CGROUPS.available()
        made = _take_made() if base is not None else None
        if made is not None:
            self.tag, self.cgroup = made
        elif base is not None:
            path = os.path.join(base, f"slopjudge-{self.tag}")
            try:
                os.mkdir(path)
                self.cgroup = path
            except OSError:
                self.cgroup = None
        if self.cgroup is None:
            _become_subreaper()
        _JAILS.add(self)

    def env(self, env: dict[str, str] | None) -> dict[str, str]:
        out = dict(os.environ if env is None else env)
        old = out.get(TAGS_ENV, "")
        out[TAGS_ENV] = f"{old}:{self.tag}" if old else self.tag
        return out

    def preexec(self) -> None:
        """In the child, before exec: move into the cgroup (so all it forks is inside)."""
        if self.cgroup is not None:
            fd = os.open(os.path.join(self.cgroup, "cgroup.procs"), os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)

    def kill(self) -> None:
        """KILL every process of this child (async-signal tolerant: no locks)."""
        if self.cgroup is not None:
            try:
                with open(os.path.join(self.cgroup, "cgroup.kill"), "w") as f:
                    f.write("1")
            except OSError:
                pass
        else:
            self._sweep_tagged()

    def _sweep_tagged(self) -> None:
        """Kill orphans (re-parented to us) carrying this child's tag, and their descendants."""
        me = os.getpid()
        tag = self.tag.encode()
        for _ in range(50):
            tree = _Tree()
            roots = [p for p in tree.children(me) if p not in EVERYONE and _has_tag(p, tag)]
            if not roots:
                return
            doomed: list[int] = []
            stack = list(roots)
            while stack:
                pid = stack.pop()
                doomed.append(pid)
                stack.extend(tree.children(pid))
            for pid in doomed:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            _reap(doomed, me)

    def close(self) -> None:
        """Kill what is left and remove the cgroup."""
        if self.cgroup is None:
            self.kill()
            _JAILS.discard(self)
            return
        deadline = time.monotonic() + KILL_GRACE_S
        delay = 0.0005
        while True:
            try:
                _rmtree_cgroup(self.cgroup)  # succeeds only once nothing is left in it
                break
            except OSError:
                if time.monotonic() > deadline:
                    break  # an empty folder left behind costs nothing
            self.kill()
            time.sleep(delay)
            delay = min(delay * 2, 0.05)
        _JAILS.discard(self)


def _reap(doomed: list[int], me: int) -> None:
    """Wait for killed processes that are (or become) our children, so none stays a zombie.

    Only these pids: a wait on any child would steal the exit status of a
    check that is still running in another thread.
    """
    deadline = time.monotonic() + 1.0
    pending = set(doomed)
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            parent = _ppid(pid)
            if parent is None:
                pending.discard(pid)  # gone: reaped by someone
            elif parent == me:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
                pending.discard(pid)
        if pending:
            time.sleep(0.001)  # its killed parent has not yet handed it to us


def _remove_stale(base: str) -> None:
    """Remove the empty cgroups of slopjudge processes that died without cleaning up (kill -9)."""
    try:
        names = [n for n in os.listdir(base) if n.startswith("slopjudge-")]
    except OSError:
        return
    for name in names:
        pid = name[len("slopjudge-"):].split(".", 1)[0]
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            try:
                _rmtree_cgroup(os.path.join(base, name))
            except OSError:
                pass  # still populated: what is in it is not ours to judge


def _rmtree_cgroup(path: str) -> None:
    """rmdir a cgroup and the ones a nested slopjudge made inside it, deepest first."""
    try:
        os.rmdir(path)  # the usual case, nothing nested: no listing of its files
        return
    except OSError:
        pass
    for folder, dirs, _files in os.walk(path, topdown=False):
        for d in dirs:
            os.rmdir(os.path.join(folder, d))
    os.rmdir(path)


@record
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


def _not_started(why: str, started: float) -> ProcResult:
    return ProcResult(None, b"", b"", start_error=why, duration_s=time.monotonic() - started)


def _kill_group(proc: subprocess.Popen[bytes], jail: _Jail) -> None:
    if _killpg(proc.pid, signal.SIGTERM):
        try:
            proc.wait(timeout=KILL_GRACE_S)
        except Exception as exc:
            if not _timed_out(exc):
                raise
    _reap_group(proc, jail)


def run(
    argv: list[str],
    *,
    input: bytes = b"",
    timeout: float | None = None,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    max_output: int = 64 * 1024 * 1024,
    registry: Registry | None = None,
    fork: bool = False,
    inherit: object = None,
) -> ProcResult:
    """Run ``argv`` directly (never through a shell) and collect its output.

    ``registry``: the run this child belongs to (:meth:`Registry.signal_all` stops it).
    ``fork``: ``argv`` is ``[sys.executable, script]``, and the script runs in a fork
    of this process instead of a new interpreter, as the interpreter would run it;
    ``inherit`` is ``input`` as this process holds it decoded, left to the fork as
    :data:`INHERITED`."""
    if not _exits_readable():
        return _not_started("SIGCHLD is ignored in this process, so no exit status can be "
                            "read (a refusal would read as a pass)", time.monotonic())
    if fork:
        return _run_forked(argv[-1], input, timeout, cwd, env, max_output, registry, inherit)
    started = time.monotonic()
    jail = _Jail()
    try:
        proc = _spawn(argv, jail, cwd, env)
    except FileNotFoundError as exc:
        jail.close()
        return _not_started(f"{exc.filename or argv[0]}: not found", started)
    except PermissionError:
        jail.close()
        return _not_started(f"{argv[0]}: not executable", started)
    except OSError as exc:
        jail.close()
        return _not_started(f"{argv[0]}: {exc.strerror or exc}", started)

    with _running(proc.pid, jail, registry):
        return _collect(proc, jail, input, timeout, max_output, started)


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


# Enters the cgroup, then becomes the command: the child is inside before it runs
# a line of its own, so nothing it forks is outside. A shell costs far less than
# Popen's preexec_fn, which turns vfork into a full fork of this process.
_SH = "/bin/sh"
_ENTER = '{ echo 0 > "$0"; } 2>/dev/null; exec "$@"'


def _timed_out(exc: BaseException) -> bool:
    """``subprocess.TimeoutExpired``, without importing subprocess to ask (a forked
    Python check never needs it)."""
    module = sys.modules.get("subprocess")
    return module is not None and isinstance(exc, module.TimeoutExpired)


def _check_startable(argv: list[str], cwd: str | None, env: dict[str, str] | None) -> None:
    """Raise what Popen would for a command that cannot start (the shell would hide it)."""
    import errno

    prog = argv[0]
    if "/" in prog:
        path: str | None = os.path.join(cwd or os.getcwd(), prog)
    else:
        import shutil  # only here: git and the pack's scripts are started by their path

        path = shutil.which(prog, path=(os.environ if env is None else env).get("PATH"))
    if path is None or not os.path.exists(path):
        raise FileNotFoundError(errno.ENOENT, "not found", prog)
    if os.path.isdir(path) or not os.access(path, os.X_OK):
        raise PermissionError(errno.EACCES, "not executable", prog)
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return  # executable but unreadable: exec decides
    if head.startswith(b"#!"):
        # The kernel would fail the exec on a missing interpreter; the shell
        # would turn that into exit 127, a refusal in disguise.
        words = head[2:].split(b"\n", 1)[0].split()
        interp = os.fsdecode(words[0]) if words else ""
        if not interp.startswith("/") or not os.access(interp, os.X_OK):
            raise FileNotFoundError(errno.ENOENT, "interpreter not found", f"{prog} ({interp})")
    elif head[:4] != b"\x7fELF":
        # A shell would run it as a script; exec refuses it, and so do we.
        raise OSError(errno.ENOEXEC, os.strerror(errno.ENOEXEC), prog)


def _spawn(
    argv: list[str], jail: _Jail, cwd: str | None, env: dict[str, str] | None
) -> subprocess.Popen[bytes]:
    import subprocess

    def popen(args: list[str], preexec: bool = False) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=jail.env(env),
            start_new_session=True,
            preexec_fn=jail.preexec if preexec else None,
        )

    if jail.cgroup is None:
        return popen(argv)
    _check_startable(argv, cwd, env)
    if os.access(_SH, os.X_OK):
        return popen([_SH, "-c", _ENTER, os.path.join(jail.cgroup, "cgroup.procs"), *argv])
    try:
        return popen(argv, preexec=True)
    except subprocess.SubprocessError:
        # The cgroup could not be entered (delegation changed under us): fall
        # back to the subreaper for this and every later child.
        _CGROUPS.disable()
        try:
            os.rmdir(jail.cgroup)
        except OSError:
            pass
        jail.cgroup = None
        _become_subreaper()
        return popen(argv)


def _collect(
    proc: subprocess.Popen[bytes], jail: _Jail, input: bytes, timeout: float | None,
    max_output: int, started: float,
) -> ProcResult:
    """Feed ``input``, read stdout and stderr, and wait for the child, all in this
    thread: one ``poll`` on the pipes and a pidfd (no reader or writer threads to
    start). Past ``timeout`` the group gets TERM, and KILL after a grace period;
    its output is still read meanwhile, so a child that writes while it stops is
    not left blocked on a full pipe."""
    sinks: dict[int, list[bytes]] = {}
    sizes: dict[int, int] = {}
    poller = select.poll()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            fd = stream.fileno()
            os.set_blocking(fd, False)
            sinks[fd], sizes[fd] = [], 0
            poller.register(fd, select.POLLIN)
    reading = set(sinks)
    feed = memoryview(input)
    in_fd = -1
    if proc.stdin is not None:
        in_fd = proc.stdin.fileno()
        feed = feed[_write_some(in_fd, feed):]
        if feed:
            poller.register(in_fd, select.POLLOUT)
        else:
            in_fd = _close_input(proc)  # the child reads its end of input
    pidfd = _pidfd(proc.pid)
    if pidfd >= 0:
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
                    continue
                if fd == in_fd:
                    feed = feed[_write_some(in_fd, feed):]
                    if not feed:
                        poller.unregister(in_fd)
                        in_fd = _close_input(proc)
                elif not _read_some(fd, sinks, sizes, max_output):
                    poller.unregister(fd)
                    reading.discard(fd)
            exited = (proc.wait() if gone else proc.poll()) is not None
            now = time.monotonic()
            if exited or until is None or now < until:
                continue
            if kill_at is None:  # the deadline: TERM, then KILL after the grace period
                timed_out = True
                if not _killpg(proc.pid, signal.SIGTERM):
                    break
                kill_at = now + KILL_GRACE_S
            else:
                break
    except BaseException:
        # Interrupted (Ctrl-C): take the whole group down before going on.
        _kill_group(proc, jail)
        raise
    finally:
        # Out of the poll before they are closed: a closed descriptor still registered
        # would poll as ready (POLLNVAL) at once, every time, while the outputs drain.
        for fd in (pidfd, in_fd):
            if fd >= 0:
                poller.unregister(fd)
        if pidfd >= 0:
            os.close(pidfd)
        if in_fd >= 0:
            _close_input(proc)
    # The leader may have exited while children it forked still hold the pipes or
    # keep running; a check owns all it started, so none outlive it. With every
    # writer killed the pipes end; what is left in them is read.
    _reap_group(proc, jail)
    if timed_out or not exited:
        proc.wait()  # killed: it cannot outlast the KILL
    ends = time.monotonic() + KILL_GRACE_S + 1
    while reading and time.monotonic() < ends:
        for fd, _event in poller.poll(max(0.0, ends - time.monotonic()) * 1000):
            if fd in reading and not _read_some(fd, sinks, sizes, max_output):
                poller.unregister(fd)
                reading.discard(fd)
    out_fd = proc.stdout.fileno() if proc.stdout is not None else -1
    err_fd = proc.stderr.fileno() if proc.stderr is not None else -1
    return ProcResult(
        None if timed_out else proc.returncode,
        b"".join(sinks.get(out_fd, ())),
        b"".join(sinks.get(err_fd, ())),
        timed_out=timed_out,
        duration_s=time.monotonic() - started,
    )


def _read_some(fd: int, sinks: dict[int, list[bytes]], sizes: dict[int, int],
               max_output: int) -> bool:
    """Read what ``fd`` has (past ``max_output`` it is read and dropped); False at its end."""
    try:
        chunk = os.read(fd, 65536)
    except BlockingIOError:
        return True
    except OSError:
        chunk = b""
    if not chunk:
        return False
    if sizes[fd] < max_output:
        sinks[fd].append(chunk)
        sizes[fd] += len(chunk)
    return True


def _write_some(fd: int, data: memoryview) -> int:
    """Write what the pipe takes now; all of it when the child does not read its input
    (EPIPE: that is its business)."""
    if not data:
        return 0
    try:
        os.set_blocking(fd, False)
        return os.write(fd, data)
    except BlockingIOError:
        return 0
    except OSError:
        return len(data)


def _close_input(proc: subprocess.Popen[bytes]) -> int:
    try:
        if proc.stdin is not None:
            proc.stdin.close()
    except OSError:
        pass
    return -1


def _pidfd(pid: int) -> int:
    """A descriptor that polls ready once ``pid`` exits (Linux 5.3+), else -1: the
    caller then asks waitpid at short intervals. Popen.wait(timeout) would sleep up
    to 50 ms between asks, which would add to every check."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return -1
    try:
        fd: int = pidfd_open(pid)
    except OSError:
        return -1
    return fd


def _reap_group(proc: subprocess.Popen[bytes], jail: _Jail) -> None:
    """After the leader exits (or is told to), kill anything it left behind."""
    if proc.returncode is None:
        # The leader itself, by its pid (ours until it is waited for): just after the
        # fork it may not yet lead a group of its own nor be in its cgroup.
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    _killpg(proc.pid, signal.SIGKILL)
    jail.kill()


# ---- Python checks without a new interpreter ----------------------------------
#
# A Python script check run as ``python script.py`` pays a whole interpreter
# start (and the imports slopjudge has already made) on every call. Instead the
# process that runs the checks forks, and the fork runs the script as
# ``__main__``: same protocol (stdin, env, cwd, argv, exit code, stdout and
# stderr), same containment (own session, own cgroup or tag), same collection
# (deadline, bounded output, nothing left behind) as :func:`run`.

NO_FORK_ENV = "SLOPJUDGE_NO_FORK"  # set: every Python check runs in a fresh interpreter


def forks_python() -> bool:
    """Whether Python checks run in a fork. Only where each gets a cgroup: the
    subreaper finds a check's orphans by the tag in their environment as the
    kernel recorded it at exec, and a fork that never execs shows none."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork")
            and not os.environ.get(NO_FORK_ENV) and _CGROUPS.available() is not None)


# Cgroups made ahead by warm_cgroups, (tag, path), for the next jails to take.
_MADE: list[tuple[str, str]] = []
_MADE_LOCK = threading.Lock()


def _take_made() -> tuple[str, str] | None:
    with _MADE_LOCK:
        return _MADE.pop(0) if _MADE else None


def warm_cgroups(checks: int) -> Callable[[], None]:
    """Get containment ready for ``checks`` children about to start: make their
    cgroups now, and start paying, in the background, the wait the first cgroup move
    of a process costs (the kernel lets a grace period pass, several milliseconds), so
    the checks forked later enter theirs at once. Returns what stops it (and removes
    the cgroups no check took).

    The move is of this process into the cgroup it is already in: nothing moves, but
    the kernel takes the same path, and moves made while one is recent wait for no
    new grace period. The cgroups are made first: a cgroup made during that wait
    would wait for it too. Containment is unchanged: each check still enters a cgroup
    of its own before it runs a line. Without cgroups (or on any error) it does nothing.
    """
    stop = threading.Event()
    base = _CGROUPS.available() if forks_python() else None
    if base is None:
        return stop.set
    made: list[tuple[str, str]] = []
    for _ in range(min(checks, 16)):
        tag = f"{os.getpid()}.{next(_COUNTER)}"
        path = os.path.join(base, f"slopjudge-{tag}")
        try:
            os.mkdir(path)
        except OSError:
            break  # the jails make their own
        made.append((tag, path))
    with _MADE_LOCK:
        _MADE.extend(made)

    def stop_and_clean() -> None:
        stop.set()
        mine = {path for _, path in made}
        with _MADE_LOCK:
            left = [path for _, path in _MADE if path in mine]
            _MADE[:] = [m for m in _MADE if m[1] not in mine]
        for path in left:
            try:
                os.rmdir(path)
            except OSError:
                pass

    procs_file = os.path.join(base, "cgroup.procs")
    me = str(os.getpid()).encode()

    def keep_warm() -> None:
        deadline = time.monotonic() + 1.0  # a hook's checks have started well before
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                fd = os.open(procs_file, os.O_WRONLY)
                try:
                    os.write(fd, me)
                finally:
                    os.close(fd)
            except OSError:
                return  # not allowed here: the checks pay the wait themselves
            stop.wait(0.002)

    threading.Thread(target=keep_warm, name="slopjudge-warm-cgroups", daemon=True).start()
    return stop_and_clean


class _Forked:
    """A forked check as :func:`_collect` sees a Popen: pid, pipes, wait, returncode."""

    def __init__(self, pid: int, stdin: IO[bytes], stdout: IO[bytes], stderr: IO[bytes]) -> None:
        self.pid = pid
        self.stdin: IO[bytes] | None = stdin
        self.stdout: IO[bytes] | None = stdout
        self.stderr: IO[bytes] | None = stderr
        self.returncode: int | None = None
        self.args = ["<forked python check>"]

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        if timeout is None:
            _, status = os.waitpid(self.pid, 0)
        else:
            deadline = time.monotonic() + timeout
            delay = 0.0005
            while True:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    break
                if time.monotonic() >= deadline:
                    import subprocess

                    raise subprocess.TimeoutExpired(self.args, timeout)
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


def _run_forked(path: str, input: bytes, timeout: float | None, cwd: str | None,
                env: dict[str, str] | None, max_output: int, registry: Registry | None,
                inherit: object) -> ProcResult:
    """:func:`run` with ``fork``: the Python script ``path`` in a fork of this process."""
    started = time.monotonic()
    full = path if os.path.isabs(path) else os.path.join(cwd or os.getcwd(), path)
    if not os.path.isfile(full):
        return _not_started(f"{path}: not found", started)
    if not os.access(full, os.R_OK):
        return _not_started(f"{path}: not readable", started)
    cwd_fd = -1
    if cwd is not None:
        # Opened here, entered in the fork (as Popen's child enters its cwd): a
        # folder that is missing is a start error, as it is for run().
        try:
            cwd_fd = os.open(cwd, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            return _not_started(f"{cwd}: not found", started)
        except OSError as exc:
            return _not_started(f"{cwd}: {exc.strerror or exc}", started)
    _prepare_fork()
    script_code = _compiled(full)
    jail = _Jail()
    child_env = jail.env(env)
    pipes: list[int] = [cwd_fd] if cwd_fd >= 0 else []
    try:
        in_r, in_w = os.pipe()
        pipes += [in_r, in_w]
        out_r, out_w = os.pipe()
        pipes += [out_r, out_w]
        err_r, err_w = os.pipe()
        pipes += [err_r, err_w]
        # Never while this process imports a shared helper; one that does not finish
        # within the check's time is the check's error, not a hook that never ends.
        if not _FORK_LOCK.acquire(timeout=-1 if timeout is None else timeout):
            raise OSError(f"not started within {timeout:g} s: shared helpers are still "
                          "loading")
        try:
            # Frozen, this process's objects are skipped by the fork's garbage
            # collector, which would otherwise write to (and so copy) most of the
            # memory the two processes share.
            gc.freeze()
            try:
                pid = os.fork()
            except BaseException:
                gc.unfreeze()
                raise
            if pid != 0:
                gc.unfreeze()
        finally:
            _FORK_LOCK.release()
    except OSError as exc:
        for fd in pipes:
            os.close(fd)
        jail.close()
        return _not_started(f"{path}: {exc.strerror or exc}", started)
    if pid == 0:  # pragma: no cover - the child never returns (coverage cannot see it)
        global INHERITED
        INHERITED = inherit
        _forked_child(full, script_code, in_r, out_w, err_w, cwd_fd, child_env, jail.cgroup)
    for fd in (in_r, out_w, err_w, *([cwd_fd] if cwd_fd >= 0 else [])):
        os.close(fd)
    proc = _Forked(pid, os.fdopen(in_w, "wb"), os.fdopen(out_r, "rb"), os.fdopen(err_r, "rb"))
    with _running(pid, jail, registry):
        try:
            return _collect(proc, jail, input, timeout, max_output,  # type: ignore[arg-type]
                            started)
        finally:
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass


_FORK_READY = False
_FORK_LOCK = threading.Lock()
_PRELOADED: set[tuple[str, str]] = set()  # (folder, module) imported or tried
_SETTLED: set[tuple[str, str]] = set()  # of those, the ones whose import has ended
# In a forked check: its stdin as the worker held it decoded (run's
# ``inherit``), so a helper need not decode it again; None in any other process.
INHERITED: object = None


def prepare_helpers(folder: str, script: str, payload: object,
                    timeout: float | None) -> ProcResult | None:
    """Get a pack's shared helper folder (``rules/_lib``) ready for the forked check
    ``script``: its helpers imported (:func:`preload_helpers`) and, with ``payload``,
    their shared work done (:func:`prefork_helpers`). Helper code runs in this
    process, so the check waits for it (its own load, or one of the folder's already
    running) no longer than its own ``timeout``: past it the check does not start (an
    error, never a pass) instead of the hook waiting without end. None when ready."""
    started = time.monotonic()
    while not _helpers_ready(folder, script, payload):
        done, ours = load_helpers_ahead(folder, script, payload)
        left = None if timeout is None else max(0.0, started + timeout - time.monotonic())
        if not done.wait(left):
            return _not_started(f"the shared helpers in {folder} did not load within "
                                f"{timeout:g} s", started)
        if ours:
            break  # all it could load is loaded; a helper that failed, the check meets
    return None


# A helper folder's load running now, by folder: its event is set once it ends.
_LOADS: dict[str, threading.Event] = {}
_LOADS_LOCK = threading.Lock()


def load_helpers_ahead(folder: str, script: str, payload: object = None
                       ) -> tuple[threading.Event, bool]:
    """Start loading, in a thread, the helpers ``script`` imports (and with ``payload``
    their work before a fork), unless a load of ``folder`` is running already: the
    event set once the running load ends, and whether it is this call's. A caller
    that does not wait (a run getting ready) leaves each check to wait its own time."""
    if _helpers_ready(folder, script, payload):
        done = threading.Event()
        done.set()
        return done, True
    with _LOADS_LOCK:
        running = _LOADS.get(folder)
        if running is not None and not running.is_set():
            return running, False
        done = _LOADS[folder] = threading.Event()

    def work() -> None:
        try:
            preload_helpers(folder, script)
            if payload is not None:
                prefork_helpers(folder, payload)
        finally:
            done.set()

    # A thread of its own only to be able to stop waiting: an import cannot be cut short.
    threading.Thread(target=work, name="slopjudge-helpers", daemon=True).start()
    return done, True


def _helpers_ready(folder: str, script: str, payload: object) -> bool:
    """Whether ``script``'s helpers have all been imported (or failed to) and none of
    the folder's has work to do before a fork (``slopjudge_prefork``) for ``payload``."""
    available = _available_helpers(folder)
    if available is None:
        return False
    if not all((folder, name) in _SETTLED for name in _helpers_of(script, folder, available)):
        return False
    return payload is None or not any(
        where == folder and callable(getattr(sys.modules.get(name), "slopjudge_prefork", None))
        for where, name in _PRELOADED)


def _available_helpers(folder: str) -> set[str] | None:
    try:
        return {n[:-3] for n in os.listdir(folder) if n.endswith(".py") and n[:-3].isidentifier()}
    except OSError:
        return None


def preload_helpers(folder: str, script: str | None = None) -> None:
    """Import once, in this process, the modules of a pack's shared helper folder
    (``rules/_lib``) that ``script`` imports, and the helpers those import (every
    one without ``script``): every forked check then finds them imported, and a
    check pays for no helper it does not use.

    Under the fork lock: a fork while another thread is inside an import would
    leave that module locked in the child for good. A helper that fails to
    import, ``sys.exit()`` included, is left to each check, which then fails (or
    exits) as ``python script`` would.
    """
    available = _available_helpers(folder)
    if available is None:
        return
    wanted = sorted(available) if script is None else _helpers_of(script, folder, available)
    if all((folder, name) in _PRELOADED for name in wanted):
        return
    with _FORK_LOCK:
        hook = _source_only_hook((os.path.realpath(folder),))
        sys.path_hooks.insert(0, hook)
        sys.path.insert(0, folder)
        no_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # see _CODE
        try:
            for name in wanted:
                if (folder, name) in _PRELOADED:
                    continue
                _PRELOADED.add((folder, name))
                try:
                    if name not in sys.modules:  # never shadow a module this process has
                        __import__(name)  # a top-level name: importlib.import_module's import
                except BaseException:  # noqa: BLE001 - SystemExit too: the check meets it
                    sys.modules.pop(name, None)
                finally:
                    _SETTLED.add((folder, name))
        finally:
            sys.path.remove(folder)
            sys.path_hooks.remove(hook)
            sys.path_importer_cache.pop(folder, None)
            sys.dont_write_bytecode = no_bytecode


# `import a, b as c` and `from a import ...`, indented or not: the helpers a script names.
_IMPORT_LINE = rb"^[ \t]*(?:import[ \t]+([\w., \t]+)|from[ \t]+(\w+)[ \t]+import\b)"


def _helpers_of(script: str, folder: str, available: set[str]) -> list[str]:
    """The helpers of ``folder`` that ``script`` imports, directly or through another
    helper; each after the helpers it imports."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(path: str) -> None:
        for name in _imported_names(path):
            if name in available and name not in seen:
                seen.add(name)
                visit(os.path.join(folder, name + ".py"))
                order.append(name)

    visit(script)
    return order


# The top-level names a file imports, by path: (mtime_ns, size, names). A run asks for
# each check's helpers twice, and the pack's largest helper is imported by most checks.
_IMPORTS: dict[str, tuple[int, int, list[str]]] = {}


def _imported_names(path: str) -> list[str]:
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            hit = _IMPORTS.get(path)
            if hit is not None and hit[:2] == (st.st_mtime_ns, st.st_size):
                return hit[2]
            source = fh.read()
    except OSError:
        return []
    import re

    names: list[str] = []
    for m in re.finditer(_IMPORT_LINE, source, re.M):
        words = m.group(2) and [m.group(2)] or [
            part.split()[0] for part in m.group(1).split(b",") if part.split()]
        names += [word.decode("ascii", "replace") for word in words]
    _IMPORTS[path] = (st.st_mtime_ns, st.st_size, names)
    return names


def _source_only_hook(roots: tuple[str, ...]) -> Any:
    """A ``sys.path_hooks`` entry for folders under ``roots``: modules there load from
    their source (through the signed code cache), never from a ``__pycache__`` beside
    them (see _CODE); other folders are left to the usual finders."""
    # importlib.machinery's own classes, where it takes them from: importing importlib
    # (and warnings with it) would cost a hook's checks more than their helpers.
    from _frozen_importlib_external import ExtensionFileLoader, FileFinder
    from _imp import extension_suffixes

    loaders = ((ExtensionFileLoader, extension_suffixes()), (_source_only_loader(), [".py"]))

    def hook(entry: str) -> FileFinder:
        real = os.path.realpath(entry or ".")
        if any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots):
            # Extension modules as usual; Python modules from source only.
            return FileFinder(entry, *loaders)
        raise ImportError("not a rule folder")

    return hook


_SOURCE_ONLY: list[type] = []  # the loader class, made once (forks inherit it)


def _source_only_loader() -> type:
    if not _SOURCE_ONLY:
        from _frozen_importlib_external import SourceFileLoader

        class SourceOnly(SourceFileLoader):
            def get_code(self, fullname: str) -> types.CodeType:
                from slopjudge.codecache import compile_source

                path = self.get_filename(fullname)
                return compile_source(self.get_data(path), path)

        _SOURCE_ONLY.append(SourceOnly)
    return _SOURCE_ONLY[0]


def prefork_helpers(folder: str, payload: object) -> None:
    """Let the helpers preloaded from ``folder`` prepare, before a fork, what every
    check of the run would compute alike from ``payload`` (a helper's
    ``slopjudge_prefork(payload)``); the fork inherits it. Under the fork lock, as
    an import. A hook that fails is ignored: each check then does the work itself."""
    with _FORK_LOCK:
        for where, name in sorted(_PRELOADED):
            module = sys.modules.get(name) if where == folder else None
            hook = getattr(module, "slopjudge_prefork", None)
            if callable(hook):
                try:
                    hook(payload)
                except BaseException:  # noqa: BLE001 - the checks compute it themselves
                    pass


def _prepare_fork() -> None:
    """Import, once and before any fork, what the forked child needs: a child must
    not import a module another thread of this process was importing at the fork."""
    global _FORK_READY
    if _FORK_READY:
        return
    import atexit  # noqa: F401
    import io  # noqa: F401

    if sys.version_info >= (3, 12):
        import warnings

        # Python 3.12+ warns on every fork of a process with threads; the child
        # here only runs the script and exits, and touches no lock of the parent.
        warnings.filterwarnings("ignore", message=r".*multi-threaded.*fork",
                                category=DeprecationWarning)
    _FORK_READY = True


def _forked_child(path: str, script_code: types.CodeType | None, in_r: int, out_w: int,
                  err_w: int, cwd_fd: int, env: dict[str, str], cgroup: str | None) -> None:
    """In the fork: become a fresh ``python path`` as far as the script can tell, run it, exit."""
    code = 70
    try:
        os.setsid()
        if cwd_fd >= 0:
            os.fchdir(cwd_fd)  # this process's own folder; the parent's stays as it is
        if cgroup is not None:
            try:
                fd = os.open(os.path.join(cgroup, "cgroup.procs"), os.O_WRONLY)
                try:
                    os.write(fd, b"0")
                finally:
                    os.close(fd)
            except OSError:
                pass  # as the shell step: the process group and the sweep still hold it
        os.dup2(in_r, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        # Only 0, 1 and 2 stay open: a pipe of another check running in this
        # process must not stay open in this one (its reader would wait on us).
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd > 2:
                try:
                    os.close(fd)
                except OSError:
                    pass
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
                    signal.SIGUSR2, signal.SIGALRM, signal.SIGCHLD, signal.SIGIO):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        code = _run_as_main(path, script_code, env)
    except BaseException:  # noqa: BLE001 - whatever happens, the fork must not return
        try:
            sys.__excepthook__(*sys.exc_info())
        except BaseException:  # noqa: BLE001
            pass
        code = 70
    finally:
        os._exit(code)


def _unshadow(own: str) -> None:
    """Forget the preloaded helpers that a module in the script's own folder would
    shadow: under ``python script`` the folder comes first, so its module is the one
    imported."""
    for where, name in _PRELOADED:
        if where != own and name in sys.modules and (
                os.path.exists(os.path.join(own, name + ".py"))
                or os.path.isdir(os.path.join(own, name))):
            del sys.modules[name]


def _run_as_main(path: str, script_code: types.CodeType | None, env: dict[str, str]) -> int:
    import atexit
    import io

    environ = os.environ
    for name in [n for n in environ if n not in env]:
        del environ[name]
    for name, value in env.items():  # only what differs: each change is a putenv
        if environ.get(name) != value:
            environ[name] = value
    sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                                 encoding="utf-8", errors="strict")
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                                  encoding="utf-8", errors="strict")
    sys.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                                  encoding="utf-8", errors="backslashreplace",
                                  line_buffering=True)
    for name in ("stdin", "stdout", "stderr"):  # the originals are the parent's objects
        setattr(sys, f"__{name}__", getattr(sys, name))
    sys.argv = [path]
    sys.dont_write_bytecode = True  # see _CODE
    # As ``python path``: the script's own folder first; never the folder this
    # process was started from (``python -m`` puts it there).
    started_in = {"", ".", os.path.abspath(os.curdir)}
    sys.path[:] = [os.path.dirname(os.path.realpath(path))] + [
        p for p in sys.path if p not in started_in]
    _unshadow(sys.path[0])
    # What the script imports from its rules folder (its own folder, rules/_lib) loads
    # from source, as the preloaded helpers did.
    sys.path_hooks.insert(0, _source_only_hook((os.path.dirname(sys.path[0]),)))
    atexit._clear()
    gc.enable()  # as a fresh interpreter, whatever the hook that forked this chose
    code = 0
    try:
        _exec_main(path, script_code)
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException:  # noqa: BLE001 - as the interpreter: traceback, status 1
        # The interpreter's own printer (C): no `traceback` module to import in a fork.
        sys.__excepthook__(*sys.exc_info())
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            code = code or 120  # as the interpreter when its output cannot be flushed
    return code


def _exec_main(path: str, code: types.CodeType | None) -> None:
    """Run ``path`` as ``__main__``: ``code`` compiled by the parent when it could."""
    import builtins
    from _frozen_importlib_external import SourceFileLoader

    loader = SourceFileLoader("__main__", path)
    if code is None:
        with open(path, "rb") as fh:
            code = compile(fh.read(), path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __loader__=loader, __builtins__=builtins,
                         __spec__=None, __cached__=None)
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


# Scripts compiled in this process, by path: (mtime_ns, size, code). Bytecode is
# never read from or written beside rule code: a ``__pycache__`` beside a rule is
# a file an agent could plant, or a protected file changed by the run. Compiled
# code kept between runs lives outside the workspace, signed (codecache).
_CODE: dict[str, tuple[int, int, types.CodeType]] = {}


def _compiled(path: str) -> types.CodeType | None:
    """``path`` compiled, once per version of it; None when it does not compile
    (the child compiles again and fails as the interpreter would)."""
    try:
        st = os.stat(path)
        hit = _CODE.get(path)
        if hit is not None and hit[:2] == (st.st_mtime_ns, st.st_size):
            return hit[2]
        from slopjudge.codecache import compile_source

        with open(path, "rb") as fh:
            code = compile_source(fh.read(), path)
    except (OSError, SyntaxError, ValueError):
        return None
    _CODE[path] = (st.st_mtime_ns, st.st_size, code)
    return code


def _exit_code(value: object) -> int:
    """What ``sys.exit(value)`` makes the interpreter's exit status."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value & 0xFF
    if isinstance(value, bool):
        return int(value)
    print(value, file=sys.stderr)
    return 1
