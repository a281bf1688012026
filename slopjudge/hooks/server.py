"""The PreToolUse hook server: a long-lived process that has imported slopjudge once
and forks, per tool call, a child that runs the hook exactly as a new process would.

Why: PreToolUse runs on every tool call, and most of a call's cost was starting
Python and importing slopjudge again. The server holds only imported code (no
workspace, rule or payload: each child reads them as the hook always does), so a
child is the hook's own process in all that matters:

- The client (``slopjudge hook pre-tool``) sends its environment, umask and stream
  encodings; the child takes the caller's resource limits, ignored and blocked
  signals, niceness, CPU set and OOM score from its ``/proc`` entries, and declines
  (the client runs the hook itself) where it cannot be the caller's process. Only
  after the client's go-ahead does it get stdin, stdout, stderr and the working
  folder, as descriptors (the conversation: the comment at "the client" below).
- Nothing passes by accident: before the go-ahead, any failure or a 3 s deadline
  runs the hook in the client; after it, anything but the hook's exit status blocks,
  reported as slopjudge's failure, never the code's. A signal to the client goes on
  to the child, whose hook stops its checks and blocks; a client that dies stops it.
- A server is found by a socket in a folder only this user can enter, named by what
  the client would import and how its interpreter started (flags, PYTHON* and locale
  variables, import path) and where it runs (cgroup, namespaces); the client checks
  the server is this user's and this interpreter. A changed slopjudge file retires
  it. One runs per name (a lock), and it exits after ``IDLE_SECONDS`` without a
  served call.
- ``SLOPJUDGE_SERVER=0`` turns it off: every call starts its own process.

The client half imports nothing beyond ``os``, ``sys``, C modules and two small
slopjudge modules: it runs on every tool call before anything else.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: the client runs on every tool call
if TYPE_CHECKING:
    from typing import Any

MAGIC = b"slopjudge-hook-1"
IDLE_SECONDS = 600.0
# How long a client waits for a child to say it started before running the hook
# itself; the go-ahead handshake makes giving up safe (no double answer).
START_WAIT = 3.0
# Namespaces a client and the server must share: paths, processes, user ids, network.
_NAMESPACES = ("mnt", "pid", "user", "net", "ipc", "uts", "cgroup")
_OFF = ("0", "off", "no", "false")
# What an interpreter reads once, as it starts (module paths, user site, warnings, the
# locale's encoding): a caller whose values differ needs a server started with them.
# Every PYTHON* variable counts, and the interpreter's flags; besides those:
_STARTUP_VARS = ("HOME", "LC_ALL", "LC_CTYPE", "LANG", "TZ")


# --- where a server is ----------------------------------------------------------


def _folder(create: bool) -> str | None:
    """The socket folder: this user's alone (a folder others can enter, or one that
    is not this user's, is never used)."""
    base = os.environ.get("SLOPJUDGE_SERVER_DIR")
    if base and not os.path.isabs(base):
        return None  # never a folder relative to wherever the hook runs (the repository)
    if not base:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        base = (os.path.join(runtime, "slopjudge") if runtime and os.path.isabs(runtime)
                else f"/tmp/slopjudge-{os.geteuid()}")
    if create:
        try:
            os.mkdir(base, 0o700)
        except FileExistsError:
            pass
        except OSError:
            return None
    try:
        st = os.lstat(base)
    except OSError:
        return None
    if (st.st_mode & 0o170000) != 0o040000 or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        return None
    return base


def _read(path: str) -> bytes:
    from slopjudge.fsutil import read_or

    return read_or(path, b"?")


def identity() -> bytes:
    """What a server must share with a client: the code it imports and where it runs."""
    import slopjudge

    flags = [f"{n}={getattr(sys.flags, n)}" for n in type(sys.flags).__match_args__
             if n != "safe_path"]  # the server's own -P
    parts = [os.path.realpath(sys.executable), sys.prefix, sys.version,
             os.path.dirname(os.path.abspath(slopjudge.__file__)), str(os.geteuid()),
             *flags, repr(sorted(sys._xoptions.items())), repr(sys.warnoptions),
             str(sys.get_int_max_str_digits()),
             # Where imports come from, relative PYTHONPATH entries resolved; the entry a
             # script or -c puts first is left out (the server starts with -P).
             repr(sys.path if sys.flags.safe_path else sys.path[1:]),
             *(f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("PYTHON")),
             *(os.environ.get(v, "") for v in _STARTUP_VARS)]
    out = [p.encode("utf-8", "surrogateescape") for p in parts]
    out.append(_read("/proc/self/cgroup"))
    for ns in _NAMESPACES:
        try:
            out.append(os.readlink(f"/proc/self/ns/{ns}").encode())
        except OSError:
            out.append(b"?")
    return b"\0".join(out)


def _name(ident: bytes) -> str:
    from _blake2 import blake2b

    return "h-" + blake2b(ident, digest_size=10).hexdigest()


# --- the client ------------------------------------------------------------------
#
# The conversation, one connection per call:
#   client -> child   the call: 8-byte length, then NUL-separated fields (MAGIC, server
#                     name, hook point, umask, three stream encodings, the environment)
#   child -> client   "D <why>": declined, nothing taken; the client runs the hook itself
#                     "P<pid>": started, and its signal handlers are the hook's
#   client -> child   "G" with descriptors 0, 1, 2 and the working folder (SCM_RIGHTS):
#                     from here the client never runs the hook itself
#   child -> client   "A": the descriptors are taken (its messages reach the caller)
#                     "X<code>": the hook's exit code, once its output is flushed
# Until "G" the child has touched nothing of the caller's, so giving up is safe; after
# it, anything but "X" is a block.


class _Client:
    """What a call's signal handler and the client share (set once, read anywhere)."""

    start_server = False  # no server answered: start one once this call is over
    name = ""  # the server this caller needs, named before the hook ran here (it may
    # change what identity() reads: a helper folder on sys.path while it loads)
    child = 0  # the process running the call, once it said so
    stopped = 0  # the signal that stopped the call, if one did
    went_ahead = False  # "G" was sent


def enabled() -> bool:
    return os.environ.get("SLOPJUDGE_SERVER", "1").strip().lower() not in _OFF


def _say(text: str) -> None:
    try:
        os.write(2, f"slopjudge: {text}\n".encode())
    except OSError:
        pass  # no stderr to say it on: the exit code still blocks


def call(sub: str) -> int | None:
    """Run hook point ``sub`` in a server's child: its exit code, or None when no server
    took the call (the caller runs the hook itself; :func:`start_if_wanted` after).
    Never raises: before the go-ahead a failure runs the hook here, after it blocks."""
    if not enabled() or not sys.platform.startswith("linux"):
        return None
    _on_signals(sub)
    try:
        code = _call(sub)
    except Exception as exc:  # noqa: BLE001 - see the docstring
        if _Client.stopped or not _Client.went_ahead:
            code = None  # stopped: blocked below; else nothing was taken: run here
        else:
            _say(f"the hook server failed ({type(exc).__name__}: {exc}), so the tool call is "
                 "blocked; this is not a finding in the call")
            code = 2
    finally:
        _Client.child = 0  # from here a signal is this process's own again
    if _Client.stopped and code != 2:
        # Stopped before an answer came (or the answer is in but the hook was stopped
        # anyway): as the hook's own process, block.
        _say(f"hook {sub} stopped by {_signal_name(_Client.stopped)}, so this call is blocked")
        return 2
    return code


def _signal_name(signum: int) -> str:
    return {15: "SIGTERM", 2: "SIGINT", 1: "SIGHUP"}.get(signum, f"signal {signum}")


def _call(sub: str) -> int | None:
    name = _Client.name = _name(identity())
    folder = _folder(create=False)
    if folder is None:
        _Client.start_server = True
        return None
    path = os.path.join(folder, name + ".sock")
    if len(path.encode()) > 107:  # what a socket address holds
        return None
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
    try:
        deadline = _Deadline(START_WAIT, sock)
        try:
            deadline.arm()
            sock.connect(path)
        except (FileNotFoundError, ConnectionRefusedError):
            _Client.start_server = True
            return None
        except (TimeoutError, BlockingIOError):  # a full queue: nobody takes calls
            _stop_stuck_server(path)
            return None
        if not _is_our_server(sock, _socket):
            return None
        return _talk(sock, sub, name, path, deadline)
    finally:
        sock.close()


class _Deadline:
    """One time limit over several socket operations (connect, send, the first reply)."""

    def __init__(self, seconds: float, sock: Any) -> None:
        import time

        self.clock, self.sock = time.monotonic, sock
        self.end = self.clock() + seconds

    def arm(self) -> None:
        left = self.end - self.clock()
        if left <= 0:
            raise TimeoutError("no answer in time")
        self.sock.settimeout(left)


def _on_signals(sub: str) -> None:
    """Set at once: until a handler is set, a signal ends the process, which Claude
    Code reads as an allow. With no child running the call, the client blocks (exit 2);
    with one, the signal goes on to it: its hook stops its checks and blocks."""
    import _signal

    def handler(signum: int, frame: object) -> None:
        if _Client.child:
            _Client.stopped = _Client.stopped or signum
            try:
                os.kill(_Client.child, signum)
            except OSError:
                pass  # it has ended: the client blocks for it
            return
        _say(f"hook {sub} stopped by {_signal_name(signum)}, so this call is blocked")
        os._exit(2)

    for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        try:
            _signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread: the caller owns signals
            pass


def _peer(sock: Any, _socket: Any) -> tuple[int, int, int]:
    raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return tuple(int.from_bytes(raw[i:i + 4], sys.byteorder) for i in (0, 4, 8))  # type: ignore[return-value]


def _is_our_server(sock: Any, _socket: Any) -> bool:
    """This user's process, running this interpreter."""
    try:
        pid, uid, _ = _peer(sock, _socket)
    except OSError:
        return False
    return uid == os.geteuid() and _runs_this_interpreter(pid)


def _runs_this_interpreter(pid: int) -> bool:
    try:
        exe, ours = os.stat(f"/proc/{pid}/exe"), os.stat(sys.executable)
    except OSError:
        return False
    return (exe.st_dev, exe.st_ino) == (ours.st_dev, ours.st_ino)


def _stream(stream: Any) -> bytes:
    if stream is None:
        return b"-"
    line = int(bool(getattr(stream, "line_buffering", False)))
    return f"{stream.encoding}:{stream.errors}:{line}".encode()


def _request(sub: str, name: str) -> bytes | None:
    """The call as bytes (None: it cannot be sent, the hook runs here)."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            return None  # a closed descriptor: the hook here says what that means
    mask = os.umask(0o022)
    os.umask(mask)
    fields = [MAGIC, name.encode(), sub.encode(), b"%o" % mask, _stream(sys.stdin),
              _stream(sys.stdout), _stream(sys.stderr),
              *(k + b"=" + v for k, v in os.environb.items())]
    if any(b"\0" in f for f in fields):
        return None
    return b"\0".join(fields)


class _Lines:
    """Reply lines from the server, read as they come; None at the end of the stream."""

    def __init__(self, sock: Any) -> None:
        self.sock, self.buf = sock, b""

    def next(self, deadline: _Deadline | None = None) -> bytes | None:
        while b"\n" not in self.buf:
            if deadline is not None:
                deadline.arm()
            got = self.sock.recv(4096)  # TimeoutError past the deadline
            if not got:
                return None
            self.buf += got
        line, _, self.buf = self.buf.partition(b"\n")
        return line


def _talk(sock: Any, sub: str, name: str, path: str, deadline: _Deadline) -> int | None:
    import _socket

    request = _request(sub, name)
    if request is None:
        return None
    lines = _Lines(sock)
    try:
        data = len(request).to_bytes(8, "big") + request
        while data:  # sendall, with the deadline armed before each part
            deadline.arm()
            data = data[sock.send(data):]
        first = lines.next(deadline)
    except TimeoutError:
        _stop_stuck_server(path)
        return None  # no child in time: the hook runs here
    except OSError:
        return None
    if first is None or not first.startswith(b"P") or not first[1:].isdigit():
        if first is None or first == b"D stale":
            # The server went (retired, killed) with the call unanswered: the next call
            # needs a new one (if one runs after all, the new one finds its lock taken).
            _Client.start_server = True
        return None  # declined: the hook runs here
    _Client.child = int(first[1:])
    if _Client.stopped:
        return None  # stopped before the go-ahead: nothing was taken; call() blocks
    cwd_fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # OSError: here
    try:
        fds = b"".join(fd.to_bytes(4, sys.byteorder) for fd in (0, 1, 2, cwd_fd))
        _Client.went_ahead = True
        sock.settimeout(None)
        sock.sendmsg([b"G"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
    finally:
        os.close(cwd_fd)
    taken = False
    while True:
        try:
            line = lines.next()
        except OSError:
            line = None
        if line == b"A":
            taken = True
            continue
        if line is not None and line.startswith(b"X") and line[1:].lstrip(b"-").isdigit():
            return int(line[1:])
        break
    if _Client.stopped:
        if taken:
            return 2  # the child had the caller's stderr: it said why itself
        return None  # call() says it and blocks
    _say("the hook server's process for this call ended without an answer (killed?), so "
         "the tool call is blocked; this is not a finding in the call")
    return 2


def _stop_stuck_server(path: str) -> None:
    """A server that took no call in time: a busy one is left alone (the call was only
    queued), a stopped one (SIGSTOP) is ended with its spare, which would never answer
    either, so the next call starts afresh. Calls it is running are left to end."""
    import _signal

    pids = [int(w) for w in _read(path[:-len(".sock")] + ".lock").split() if w.isdigit()]
    if not pids:
        return
    state = _read(f"/proc/{pids[0]}/stat").rsplit(b")", 1)[-1].split()[:1]
    if state not in ([b"T"], [b"t"]):
        return
    for pid in pids:  # the server, then its spare (which a stop may have caught unarmed)
        if pid > 1 and _runs_this_interpreter(pid):
            try:
                os.kill(pid, _signal.SIGKILL)
            except OSError:
                pass


def start_for_session() -> None:
    """At a session's start: a server for its tool calls, unless one runs already."""
    if not enabled() or not sys.platform.startswith("linux"):
        return
    try:
        folder = _folder(create=True)
        if folder is None:
            return
        path = os.path.join(folder, _name(identity()) + ".sock")
        if len(path.encode()) > 107:
            return
        import _socket

        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
        sock.settimeout(START_WAIT)
        try:
            sock.connect(path)
            return  # one runs (a connection closed unsent is not a call)
        except (FileNotFoundError, ConnectionRefusedError):
            _Client.start_server = True
        finally:
            sock.close()
    except Exception:  # noqa: BLE001 - the first tool call starts one instead
        return
    start_if_wanted()


def start_if_wanted() -> None:
    """Start a server for the next call, when this one found none: a detached process
    (its own session, no descriptor of this one), so the agent never waits for it."""
    if not _Client.start_server:
        return
    try:
        folder = _folder(create=True)
        if folder is None:
            return
        from subprocess import _args_from_interpreter_flags  # type: ignore[attr-defined]

        flags = _args_from_interpreter_flags()  # -O, -X, -W ...: it starts as this one did
        name = _Client.name or _name(identity())
        if sys.stdout is not None:
            sys.stdout.flush()  # the answer is out before anything else happens
        pid = os.fork()
    except Exception:  # noqa: BLE001 - the next call tries again
        return
    if pid == 0:  # pragma: no cover - the child never returns
        try:
            os.setsid()
            if os.fork() == 0:
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.closerange(3, 1 << 16)
                os.chdir("/")
                os.execv(sys.executable, [
                    sys.executable, *flags, "-P", "-c",
                    "import sys; from slopjudge.hooks.server import serve; "
                    "sys.exit(serve(sys.argv[1], sys.argv[2]))", folder, name])
        finally:
            os._exit(0)
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass


# --- the server ------------------------------------------------------------------


def serve(folder: str, expected: str | None = None) -> int:
    """Serve calls on this interpreter's socket in ``folder`` until idle for
    ``IDLE_SECONDS``. A spare child, forked ahead and with its memory already its
    own, waits for the next call; the server forks the next spare when it is taken."""
    import fcntl
    import gc
    import select
    import signal
    import socket
    import time

    if _folder(create=False) != folder:
        return 1
    own = _name(identity())
    if expected is not None and own != expected:
        return 1  # it would serve no caller like the one that started it
    base = os.path.join(folder, own)  # + ".lock", + ".sock"
    lock = os.open(base + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    for _ in range(100):  # a server that is leaving (retired, stale) lets go within moments
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError:
            time.sleep(0.02)
    else:
        return 0  # another server has this name, and keeps it
    spare: list[int] = []

    def note_pids() -> None:
        """The lock says who runs: this server, then its spare (what a stuck-server
        check kills, and nothing else: calls running are left to end)."""
        os.ftruncate(lock, 0)
        os.pwrite(lock, b"".join(b"%d\n" % p for p in (os.getpid(), *spare)), 0)

    note_pids()
    idle = _idle_seconds()
    began = time.time_ns()
    _warm()
    stamps = _stamps()
    if any(mtime >= began for _, mtime, _ in stamps):
        os.ftruncate(lock, 0)
        return 0  # changed while it was imported: what runs may not be what is there
    path = base + ".sock"
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    bound = os.stat(path).st_ino
    taken_r, taken_w = os.pipe2(os.O_CLOEXEC)

    def leave(*_: object) -> None:
        try:
            if os.stat(path).st_ino == bound:
                os.unlink(path)
        except OSError:
            pass
        os.ftruncate(lock, 0)  # no pid left behind for a later check to signal
        # A spare waiting for a call dies with this process (its parent-death signal);
        # one that has taken a call, just now or long ago, finishes it.
        os._exit(0)

    signal.signal(signal.SIGTERM, leave)
    signal.signal(signal.SIGHUP, leave)
    signal.signal(signal.SIGINT, leave)
    gc.collect()
    gc.freeze()  # children share the imported code without copying it
    gc.disable()
    poller = select.poll()
    poller.register(taken_r, select.POLLIN)
    last = checked = time.monotonic()
    serving: set[int] = set()  # spares that took a call and still run it
    while True:
        # The next spare once the calls running end (or after a while): making one
        # costs a few milliseconds of CPU a call on two cores would otherwise wait for.
        if not spare and (not serving or time.monotonic() > last + 0.1):
            me = os.getpid()
            pid = os.fork()
            if pid == 0:
                code = 2
                try:
                    os.close(lock)
                    os.close(taken_r)
                    code = _spare(listener, taken_w, stamps, own, me)
                finally:  # never back into this loop, whatever happened
                    os._exit(code)
            spare.append(pid)
            note_pids()
        left = last + idle - time.monotonic()
        # While a call runs, its end is seen within 5 ms (the next spare is made then,
        # and the bench's back-to-back calls would otherwise wait for it).
        ready = poller.poll(max(0.0, min(left, 0.005 if serving else 0.25)) * 1000)
        if ready:  # spares that took a connection say so by pid
            data = os.read(taken_r, 4096)
            for i in range(0, len(data) - 3, 4):
                pid = int.from_bytes(data[i:i + 4], sys.byteorder)
                if pid in spare:
                    spare.remove(pid)
                    serving.add(pid)
            note_pids()
        for pid, status in _reap():
            if status is None:  # SIGSTOP: a stopped spare would hold every call queued
                if pid in spare:
                    os.kill(pid, signal.SIGKILL)
                continue
            if pid in serving and status != NOT_A_CALL:
                last = time.monotonic()  # a call was served: idle counts from here
            serving.discard(pid)
            if pid in spare:
                spare.remove(pid)  # died before a call: another is made
        now = time.monotonic()
        if now >= last + idle and not serving:
            leave()
        if now - checked >= 0.25:
            checked = now
            if _stamps() != stamps:
                leave()


# A spare's exit status when its connection was not a call it ran (declined, stale, a
# probe): that does not keep the server from going idle.
NOT_A_CALL = 75


def _idle_seconds() -> float:
    try:
        idle = float(os.environ.get("SLOPJUDGE_SERVER_IDLE") or IDLE_SECONDS)
    except ValueError:
        return IDLE_SECONDS
    return idle if 0 < idle < float("inf") else IDLE_SECONDS


def _reap() -> list[tuple[int, int | None]]:
    """Children that ended, with their exit status, and those stopped (None)."""
    done: list[tuple[int, int | None]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:
            return done
        if not pid:
            return done
        done.append((pid, None if os.WIFSTOPPED(status) else os.waitstatus_to_exitcode(status)))


def _spare(listener: Any, taken: int, stamps: list[tuple[str, int, int]], own: str,
           server: int) -> int:
    """A spare child: its memory made its own ahead (no copy-on-write faults during a
    call), then one call. Told to go (the server leaving) before a call, it goes."""
    import signal

    busy: list[bool] = []

    def go(*_: object) -> None:
        # The server leaving: a spare with no call goes; one that took a call keeps it
        # (the hook's own handlers replace this one before the caller is told it started).
        if not busy:
            os._exit(0)

    signal.signal(signal.SIGTERM, go)
    for sig in (signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)
    # A spare never outlives its server (killed, OOM): it would hold the socket and
    # take calls no server looks after. Once it has a call, the call is its own.
    _parent_death_signal(signal.SIGKILL)
    if os.getppid() != server:  # it went before the signal was armed
        return 0
    _prefault()
    try:
        conn, _ = listener.accept()
    except OSError:
        return 0
    _parent_death_signal(0)
    busy.append(True)
    os.write(taken, os.getpid().to_bytes(4, sys.byteorder))
    os.close(taken)
    listener.close()
    if _stamps() != stamps:
        # slopjudge changed since the server started: the server goes now (its lock
        # free for the one this caller starts), and the caller runs the hook itself.
        os.kill(os.getppid(), signal.SIGTERM)
        _send(conn, b"D stale\n")
        return NOT_A_CALL
    return _child(conn, own)


def _parent_death_signal(sig: int) -> None:
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, sig, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _prefault() -> None:
    """Make this process's writable memory its own now (Linux 5.14's
    MADV_POPULATE_WRITE), so a call does not pay for copying each page the first time
    it writes one; nothing happens where the kernel lacks it."""
    import ctypes

    try:
        madvise = ctypes.CDLL(None, use_errno=True).madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        with open("/proc/self/maps", "rb") as fh:
            maps = fh.read().splitlines()
    except (OSError, AttributeError):
        return
    for line in maps:
        fields = line.split()
        if len(fields) < 2 or not fields[1].startswith(b"rw"):
            continue
        if len(fields) > 5 and fields[5].startswith((b"[v", b"[stack", b"/dev/")):
            continue
        lo, hi = (int(x, 16) for x in fields[0].split(b"-"))
        if hi - lo <= 64 << 20:  # never a large reservation made whole
            madvise(lo, hi - lo, 23)  # MADV_POPULATE_WRITE


def _warm() -> None:
    """Import what a pre-tool call imports (not the rules' helpers: they belong to
    one workspace and are loaded by each call, as always)."""
    import importlib

    for name in ("ctypes", "slopjudge.cli", "slopjudge.hooks.common", "slopjudge.hooks.pre_tool",
                 "slopjudge.loading.config", "slopjudge.loading.rulecache",
                 "slopjudge.checks.selection", "slopjudge.changes.toolmatch",
                 "slopjudge.changes.proposed", "slopjudge.changes.edits",
                 "slopjudge.changes.shell", "slopjudge.changes.rulefilter",
                 "slopjudge.checks.codecache", "slopjudge.checks.options", "json", "io",
                 "resource", "threading", "queue", "atexit", "shlex"):
        importlib.import_module(name)
    import re

    from slopjudge.checks import engine, procs

    engine.import_ahead(kinds=("script",))
    re.compile(procs._IMPORT_LINE, re.M)  # compiled once here, in re's cache every call has


def _stamps() -> list[tuple[str, int, int]]:
    """slopjudge's own files as imported: a change (an upgrade, an edit) retires the server."""
    import slopjudge

    root = os.path.dirname(os.path.abspath(slopjudge.__file__))
    out = []
    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        if name.startswith("slopjudge") and where and where.startswith(root):
            try:
                st = os.stat(where)
            except OSError:
                out.append((where, -1, -1))
                continue
            out.append((where, st.st_mtime_ns, st.st_size))
    return sorted(out)


def _send(conn: Any, data: bytes) -> bool:
    try:
        conn.sendall(data)
        return True
    except OSError:
        return False


def _child(conn: Any, own: str) -> int:
    """One call, in a fork of the server: 0 and nothing done unless the client said go."""
    import socket

    conn.settimeout(1.0)  # a caller sends its call at once; a silent one is not a caller
    got = _receive(conn, socket, own)
    if got is None:
        return NOT_A_CALL
    fields, client = got
    why = _adopt_caller(client)
    if why is not None:
        _send(conn, b"D " + why.encode() + b"\n")
        return NOT_A_CALL
    from slopjudge.hooks import _stop_children_on_signals

    sub = fields[2].decode()
    _stop_children_on_signals(sub)  # before P: a signal passed on from now on blocks
    if not _send(conn, b"P%d\n" % os.getpid()):
        return NOT_A_CALL
    # The caller sends the go-ahead at once; a caller that is slow to (a loaded machine)
    # still gets its call, and after this long it has gone anyway.
    conn.settimeout(30.0)
    try:
        go, anc, flags, _ = conn.recvmsg(1, socket.CMSG_SPACE(4 * 4))
    except OSError:
        return NOT_A_CALL
    fds = [int.from_bytes(raw[i:i + 4], sys.byteorder)
           for level, kind, raw in anc
           if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS
           for i in range(0, len(raw) - len(raw) % 4, 4)]
    if go != b"G" or flags & socket.MSG_CTRUNC or len(fds) != 4:
        for fd in fds:
            os.close(fd)
        return NOT_A_CALL
    conn.settimeout(None)
    why = _take(fields, fds)
    if why is not None:
        os.write(2, f"slopjudge: the hook server could not take this call ({why}), so the "
                    "tool call is blocked; this is not a finding in the call\n".encode())
        _send(conn, b"X2\n")
        return 2
    _send(conn, b"A\n")  # its messages now reach the caller
    _watch_client(conn)
    return _run_hook(conn, sub)


def _receive(conn: Any, socket: Any, own: str) -> tuple[list[bytes], int] | None:
    try:
        pid, uid, _ = _peer(conn, socket)
        if uid != os.geteuid():
            return None
        head = b""
        while len(head) < 8:
            more = conn.recv(8 - len(head))
            if not more:
                return None
            head += more
        size = int.from_bytes(head, "big")
        if size > 64 << 20:
            return None
        body = bytearray()
        while len(body) < size:
            more = conn.recv(min(1 << 20, size - len(body)))
            if not more:
                return None
            body += more
    except OSError:
        return None
    fields = bytes(body).split(b"\0")
    if len(fields) < 7 or fields[0] != MAGIC or fields[1] != own.encode():
        return None
    return fields, pid


def _status(pid: int | str) -> dict[str, str]:
    out = {}
    for line in _read(f"/proc/{pid}/status").decode("ascii", "replace").splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def _adopt_caller(client: int) -> str | None:
    """Why this process cannot stand in for the caller's own, or None once it has taken
    the caller's limits, signals, niceness, CPU set and OOM score (what it changed
    before a refusal does not matter: the child then ends)."""
    import resource
    import signal

    theirs, ours = _status(client), _status("self")
    for key in ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
                "NoNewPrivs", "Seccomp", "Seccomp_filters"):
        if theirs.get(key) != ours.get(key):
            return f"another {key}"
    try:
        if os.readlink(f"/proc/{client}/root") != "/":
            return "another root"
        for ns in _NAMESPACES:
            if os.readlink(f"/proc/{client}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}"):
                return f"another {ns} namespace"
        if _read(f"/proc/{client}/cgroup") != _read("/proc/self/cgroup"):
            return "another cgroup"
        if _read(f"/proc/{client}/attr/current") != _read("/proc/self/attr/current"):
            return "another security label"
        if os.sched_getscheduler(client) != os.sched_getscheduler(0):
            return "another scheduling policy"
        if _read(f"/proc/{client}/personality") != _read("/proc/self/personality"):
            return "another personality"
        if _io_priority(client) != _io_priority(0):
            return "another I/O priority"
        adj = _read(f"/proc/{client}/oom_score_adj")
        if adj != _read("/proc/self/oom_score_adj"):
            with open("/proc/self/oom_score_adj", "wb") as fh:  # lowering it may be refused
                fh.write(adj)
        for limit in [getattr(resource, n) for n in dir(resource) if n.startswith("RLIMIT_")]:
            wanted = resource.prlimit(client, limit)
            if resource.getrlimit(limit) != wanted:
                resource.setrlimit(limit, wanted)
        nice = os.getpriority(os.PRIO_PROCESS, client)
        if os.getpriority(os.PRIO_PROCESS, 0) != nice:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
        cpus = os.sched_getaffinity(client)
        if os.sched_getaffinity(0) != cpus:
            os.sched_setaffinity(0, cpus)
        blocked = int(theirs.get("SigBlk", "0"), 16)
        ignored = int(theirs.get("SigIgn", "0"), 16)
    except (OSError, ValueError) as exc:
        return f"cannot match the client ({exc})"
    for sig in range(1, signal.NSIG):
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(sig, signal.SIG_IGN if ignored >> (sig - 1) & 1 else signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK,
                           {s for s in range(1, signal.NSIG) if blocked >> (s - 1) & 1})
    return None


# ioprio_get by architecture (no libc wrapper); elsewhere the priority is not compared
# and the server is not used.
_IOPRIO_GET = {"x86_64": 252, "aarch64": 31, "i686": 290, "armv7l": 315}


def _io_priority(pid: int) -> int:
    import ctypes

    number = _IOPRIO_GET.get(os.uname().machine)
    if number is None:
        raise OSError("I/O priority unknown here")
    return int(ctypes.CDLL(None, use_errno=True).syscall(number, 1, pid))  # IOPRIO_WHO_PROCESS


def _take(fields: list[bytes], fds: list[int]) -> str | None:
    """The caller's descriptors, folder, umask and environment (after the go-ahead);
    None when done, else why not (said on the caller's stderr, and the call blocks)."""
    try:
        os.dup2(fds[2], 2)  # first: what goes wrong after is said where the caller reads
        os.fchdir(fds[3])
        os.dup2(fds[0], 0)
        os.dup2(fds[1], 1)
    except OSError as exc:
        return exc.strerror or str(exc)
    finally:
        for fd in fds:
            if fd > 2:
                os.close(fd)
    os.umask(int(fields[3], 8))
    os.environb.clear()
    for item in fields[7:]:
        var, eq, value = item.partition(b"=")
        if eq and var:
            os.environb[var] = value
    import time

    time.tzset()  # the caller's TZ, as the time module read it at the caller's start
    _streams(fields[4:7])
    return None


def _streams(specs: list[bytes]) -> None:
    """sys.stdin/stdout/stderr on descriptors 0-2, as the client's were."""
    import io

    made: list[Any] = []
    for fd, spec in enumerate(specs):
        if spec == b"-":
            made.append(None)
            continue
        encoding, errors, line = spec.decode().rsplit(":", 2)
        raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
        buffered = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
        made.append(io.TextIOWrapper(buffered, encoding=encoding, errors=errors,
                                     line_buffering=line == "1"))
    sys.stdin, sys.stdout, sys.stderr = made


def _watch_client(conn: Any) -> None:
    """A client that dies (its socket closes) takes its call with it: the checks are
    stopped and the child goes. The kernel signals it (SIGIO), so no thread waits."""
    import fcntl
    import signal

    def gone(*_: object) -> None:
        import select

        poller = select.poll()
        poller.register(conn.fileno(), select.POLLIN | select.POLLHUP | select.POLLERR)
        if not poller.poll(0):
            return  # not the client's socket (SIGIO from elsewhere)
        procs = sys.modules.get("slopjudge.checks.procs")
        if procs is not None:
            procs.kill_all()
        os._exit(2)

    signal.signal(signal.SIGIO, gone)
    fd = conn.fileno()
    fcntl.fcntl(fd, fcntl.F_SETOWN, os.getpid())
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_ASYNC)
    gone()  # the client may have gone already


def _run_hook(conn: Any, sub: str) -> int:
    from slopjudge import cli
    from slopjudge.hooks import main_fast

    cli._child_exits_reported()
    try:
        code = main_fast(sub)
    except BaseException as exc:  # noqa: BLE001 - never an allow for an error
        os.write(2, f"slopjudge: pre-tool hook failed, so the tool call is blocked: {exc!r}\n"
                 .encode())
        code = 2
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            code = 120
    _send(conn, b"X%d\n" % code)
    return code
