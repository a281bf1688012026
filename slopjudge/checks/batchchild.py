"""The child of a script batch (``checks/batch.py``): runs each Python script it is given
as ``python script.py`` would (docs/runner-and-budgets.md). Run as a file, never imported:
a script sees only the modules a fresh interpreter has, and built-in ones.

It tells the parent ``S <i>`` before script ``i`` and ``E <i> <status> <microseconds>``
after it; a script that ends the process leaves an ``S`` without an ``E``. If it cannot
report, it kills itself: an error of the running script, never a pass.

:func:`enter` and :func:`run_main` also serve the scripts run in the hook (``inproc.py``).
"""

# Built in or loaded at start-up: importing them costs nothing.
import _signal
import _thread
import atexit
import builtins
import io
import marshal
import os
import sys
import time
from _frozen_importlib_external import SourceFileLoader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _main() -> None:
    jobs = marshal.loads(sys.stdin.buffer.read())
    report = os.dup(1)
    for job in jobs:  # a script's subprocess must not hold a later script's pipes open
        os.set_inheritable(job[4], False)
        os.set_inheritable(job[5], False)
    me = os.getpid()
    pristine_path = list(sys.path)
    handlers = {n: h for n in range(1, _signal.NSIG) if n not in (_signal.SIGKILL, _signal.SIGSTOP)
                and (h := _signal.getsignal(n)) is not None}
    runner_main = sys.modules["__main__"]
    encoding, errors = sys.stdout.encoding, sys.stdout.errors or "strict"

    def say(line: str) -> None:
        try:
            os.write(report, line.encode("ascii"))
        except OSError:
            os.kill(me, _signal.SIGKILL)

    for i, (path, cwd, env, payload, out_fd, err_fd) in enumerate(jobs):
        if not os.path.isfile(path) or not os.access(path, os.R_OK):
            continue  # gone since it was planned: run alone, it is an error there
        say(f"S {i}\n")
        started = time.monotonic()
        _streams(payload, out_fd, err_fd, encoding, errors)
        os.environ.clear()  # what a script's os.putenv changed, too
        enter(path, cwd, env, {})
        sys.path[:] = [os.path.dirname(os.path.realpath(path)), *pristine_path]
        before = set(sys.modules)
        status = _finish(run_main(path, path)[0])
        if os.getpid() != me:  # a fork of the script that ran on to the end
            os._exit(status & 0xFF if status >= 0 else 1)
        threads = _thread._count()  # after its atexit handlers, which may start one too
        say(f"E {i} {status} {int((time.monotonic() - started) * 1e6)}\n")
        sys.modules["__main__"] = runner_main
        _forget(before, os.path.dirname(os.path.realpath(path)))
        _reset_signals(handlers)
        if threads:
            return  # a thread of this script may still write: the rest run alone


def _streams(payload: bytes, out_fd: int, err_fd: int, encoding: str, errors: str) -> None:
    """File descriptors 0, 1 and 2 and the std streams of one script."""
    if hasattr(os, "memfd_create"):
        stdin = os.memfd_create("stdin")
    else:  # macOS
        import tempfile

        stdin = os.dup(tempfile.TemporaryFile().fileno())
    os.write(stdin, payload)
    os.lseek(stdin, 0, os.SEEK_SET)
    for fd, target in ((stdin, 0), (out_fd, 1), (err_fd, 2)):
        os.dup2(fd, target)
        os.close(fd)
    # As the interpreter makes them at start-up (stderr line-buffered, since 3.9).
    sys.stdin = io.TextIOWrapper(
        open(0, "rb", closefd=False), encoding=encoding, errors=errors, newline="\n")
    sys.stdout = io.TextIOWrapper(
        open(1, "wb", closefd=False), encoding=encoding, errors=errors, newline="\n")
    sys.stderr = io.TextIOWrapper(
        open(2, "wb", closefd=False), encoding=encoding, errors="backslashreplace",
        newline="\n", line_buffering=True)
    for name in ("stdin", "stdout", "stderr"):  # what the interpreter started with, too
        setattr(sys, f"__{name}__", getattr(sys, name))


def set_environ(env: dict[str, str], now: dict[str, str]) -> None:
    """``os.environ`` (which holds ``now``) made ``env``, changing only what differs: each
    change is a putenv, and one check's environment differs from the last one's in a few
    names."""
    for key in now.keys() - env.keys():
        del os.environ[key]
    for key, value in env.items():
        if now.get(key) != value:
            os.environ[key] = value


def enter(path: str, cwd: str, env: dict[str, str], now: dict[str, str]) -> None:
    """The argv, environment, bytecode settings and folder of the script at ``path``."""
    sys.argv[:] = [path]
    set_environ(env, now)
    sys.dont_write_bytecode = bool(env.get("PYTHONDONTWRITEBYTECODE"))
    sys.pycache_prefix = env.get("PYTHONPYCACHEPREFIX") or None
    os.chdir(cwd)


def run_main(path: str, source: str) -> tuple[int, bool]:
    """``source``'s code run as the ``__main__`` of a script at ``path``: its exit status
    (negative: a signal), and whether it ended on an uncaught exception. Its bytecode is
    kept as an imported module's is (under ``PYTHONPYCACHEPREFIX``, checked against the
    source's size and time): compiling the scripts on every call would cost more than
    running them."""
    module: Any = type(sys)("__main__")
    module.__file__, module.__cached__, module.__builtins__ = path, None, builtins
    module.__loader__ = SourceFileLoader("__main__", source)
    sys.modules["__main__"] = module
    try:
        code = module.__loader__.get_code("__main__")
        exec(code, module.__dict__)  # noqa: S102 - running the rule's script is the point
    except SystemExit as exc:
        return _exit_status(exc.code), False
    except BaseException as exc:  # noqa: BLE001 - what the interpreter would print and exit 1 for
        _print_exception(exc, source)
        # Python ends itself with SIGINT for an uncaught Ctrl-C.
        return -2 if isinstance(exc, KeyboardInterrupt) else 1, True
    return 0, False


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:  # noqa: BLE001, S110 - the interpreter ignores this too
        pass
    return 1


def _print_exception(exc: BaseException, path: str) -> None:
    """As the interpreter prints it: the traceback from the script's own frames on
    (``path``: the file its code was compiled from)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != path:
        tb = tb.tb_next
    try:
        # The exception's own traceback is what the default hook prints.
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
    except Exception:  # noqa: BLE001, S110 - as the interpreter, which then exits 1
        pass
    finally:
        sys.excepthook = sys.__excepthook__


def _finish(status: int) -> int:
    """What the interpreter does at exit: run the ``atexit`` handlers, flush the streams
    (a failed flush of stdout exits 120)."""
    atexit._run_exitfuncs()
    atexit._clear()
    for stream in (sys.stderr, sys.stdout):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - as the interpreter: stdout failing is status 120
            if stream is sys.stdout and status == 0:
                status = 120
    return status


def _forget(before: set[str], folder: str) -> None:
    """Drop modules the script imported from its own folder (or below it)."""
    prefix = folder.rstrip(os.sep) + os.sep
    for name in set(sys.modules) - before:
        where = getattr(sys.modules[name], "__file__", None) or ""
        if where and os.path.realpath(where).startswith(prefix):
            del sys.modules[name]


def _reset_signals(handlers: dict[int, object]) -> None:
    """Timers off and signal handlers as they were before the script."""
    for timer in (_signal.ITIMER_REAL, _signal.ITIMER_VIRTUAL, _signal.ITIMER_PROF):
        _signal.setitimer(timer, 0)
    for signum, handler in handlers.items():
        if _signal.getsignal(signum) is not handler:
            _signal.signal(signum, handler)


if __name__ == "__main__":
    del sys.path[0]  # this file's folder: nothing may be imported from it
    try:
        _main()
    except BaseException:
        os.kill(os.getpid(), _signal.SIGKILL)  # never a status a script could have given
    os._exit(0)
