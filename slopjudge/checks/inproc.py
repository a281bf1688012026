"""The default pack's Python scripts run inside the PreToolUse hook's own process, one
after the other: no second Python start on a Write or a Bash call. Which scripts qualify,
what each gets (what ``python script.py`` gives it) and how it fails closed:
docs/runner-and-budgets.md, "slopjudge's own scripts run in the PreToolUse hook".

Only slopjudge's own code runs here: a script whose rule folder and ``_lib`` hold only
files byte-identical to the installed copies (``rule.yaml`` aside) runs the installed
copy's code (its bytecode, its lines in a traceback) with the project's ``__file__``.
What the pack's scripts never do is not emulated (threads, ``atexit``, signals,
``os._exit``, a fork): ``tests/test_pack_inproc_safe.py`` keeps them from it.

Fail closed: only in the main thread of a process with no other thread (``sys.stdout`` is
the whole process's), only under the hook's deadline (an armed ``SIGALRM`` timer). A
script's ``timeout`` and the deadline are signals, handled between bytecodes and inside
the regular expression engine, not in C code that never checks for them: the pack's
scripts call none on input without a bound. (A watchdog thread would cover it, but
starting one costs a PreToolUse call 20 to 60 ms of wall time on a loaded machine,
measured: more than all the scripts.)
"""

from __future__ import annotations

import _signal
import _thread
import io
import os
import sys
import time

# importlib.machinery's classes, from the modules the interpreter starts with: importing
# importlib.machinery loads importlib and warnings (about 1.5 ms a Write).
from _frozen_importlib import ModuleSpec
from _frozen_importlib_external import SourceFileLoader

from slopjudge.checks.batchchild import enter, run_main, set_environ
from slopjudge.checks.script import check_env, payload_bytes, python_env, script_result
from slopjudge.hookspec import CheckContext
from slopjudge.model import CheckResult
from slopjudge.procs import ProcResult
from slopjudge.resources import data_path

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    from typing import Any

PACK = data_path("rules")
LIB = "_lib"


class _TimedOut(BaseException):
    """Raised into a script that ran past its check's ``timeout``."""


def usable() -> bool:
    """Whether scripts may run here now: the main thread, no other thread, and a
    deadline armed (``hooks.set_deadline``)."""
    threading = sys.modules.get("threading")  # not imported: no thread was started with it
    return (_thread._count() == 0 and _signal.getitimer(_signal.ITIMER_REAL)[0] > 0
            and (threading is None or threading.current_thread() is threading.main_thread()))


class Runner:
    """One engine run's in-process scripts: which folders were found identical to the
    installed pack (read once a run) and the modules the scripts imported from them,
    shared by the run's scripts and forgotten after it."""

    def __init__(self) -> None:
        self.folders: dict[str, dict[str, str] | None] = {}  # folder -> {file: installed copy}
        self.real: dict[str, str] = {}  # folder as written -> as resolved
        self.imported: set[str] = set()
        # The environment before the run's first script, put back once after its last
        # (most of what each script's adds is the same for all of them), and what
        # ``os.environ`` holds meanwhile: reading it back decodes every variable.
        self.environ: dict[str, str] | None = None
        self.current: dict[str, str] = {}
        self.bytecode: dict[str, dict[str, str]] = {}  # rules folder -> python_env's settings

    def twin(self, ctx: CheckContext) -> str | None:
        """The installed copy of ``ctx``'s script when it runs here, else None."""
        check = ctx.check
        script = check.script
        if (check.kind != "script" or check.each != "changeset" or check.needs
                or not script or not script.endswith(".py")
                or os.path.dirname(script) != ctx.rule.dir):
            return None
        own = self._verified(ctx.rule.dir, os.path.join(PACK, os.path.basename(ctx.rule.dir)))
        lib = self._verified(os.path.join(ctx.rule.dir, os.pardir, LIB), os.path.join(PACK, LIB))
        if own is None or lib is None:
            return None
        return own.get(os.path.basename(script))

    def _verified(self, folder: str, installed: str) -> dict[str, str] | None:
        """``folder``'s files and their installed copies when each is byte-identical to
        one (``rule.yaml`` aside, whose text is settings); None otherwise. Kept under
        the folder's path as written and as resolved: ``sys.path`` may hold either."""
        key = os.path.normpath(folder)
        if key not in self.folders:
            real = self.real[key] = os.path.realpath(folder)
            self.folders[key] = self.folders[real] = _identical(folder, installed)
        return self.folders[key]

    def run(self, ctx: CheckContext, installed: str) -> CheckResult:
        """The check's result; an uncaught exception is an ``error`` (the script decided
        nothing), its traceback the reason."""
        started = time.monotonic()
        assert ctx.check.script is not None
        path = ctx.check.script
        rules = os.path.dirname(ctx.rule.dir)  # every rule there has the same workspace
        bytecode = self.bytecode.get(rules)
        if bytecode is None:
            bytecode = self.bytecode[rules] = python_env({}, ctx.rule.dir)
        if self.environ is None:
            self.environ = dict(os.environ)
            self.current = dict(self.environ)
        env = {k: v for k, v in check_env(ctx, self.environ).items()
               if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(bytecode)  # python_env(check_env(ctx), ...), its folder looked up once
        stdin = io.TextIOWrapper(io.BytesIO(payload_bytes(ctx)), encoding="utf-8")
        out, err = _Sink(), _Sink()
        # ``sys.path[0]`` of ``python path``: its resolved folder (the resolved rule folder,
        # known already, when the script itself is no link: one lstat, not one a component).
        home = self.real.get(os.path.normpath(os.path.dirname(path)))
        if home is None or os.path.islink(path):
            home = os.path.dirname(os.path.realpath(path))
        saved = _Saved()
        try:
            sys.stdin, sys.stdout, sys.stderr = stdin, out.text, err.text
            sys.path.insert(0, home)
            enter(path, ctx.rule.dir, env, self.current)
            self.current = env
            sys.meta_path.insert(0, self)
            before = set(sys.modules)
            ended = _timed(ctx.check.timeout, lambda: run_main(path, installed))
            self.imported |= set(sys.modules) - before
        except BaseException:
            self.current = dict(os.environ)  # enter may have stopped half way
            raise
        finally:
            saved.restore()
        status, raised = ended or (None, False)
        proc = ProcResult(status, out.getvalue(), err.getvalue(), timed_out=ended is None)
        result = script_result(ctx.check, proc, int((time.monotonic() - started) * 1000))
        if raised:
            result.outcome = "error"
            result.reason = ("slopjudge's own script stopped on an uncaught exception: "
                             + proc.stderr.decode("utf-8", "replace").strip())
        return result

    def find_spec(self, name: str, path: object = None, target: object = None) -> Any:
        """As the run's finder on ``sys.meta_path``: imports of a module from a verified
        folder get the installed copy's code."""
        if path is not None or "." in name or not any(
                f"{name}.py" in files for files in self.folders.values() if files):
            return None  # not the pack's (`re` and what it loads, first imported by a script)
        for entry in sys.path:
            where = os.path.join(entry or ".", f"{name}.py")
            if not os.path.exists(where):
                if os.path.isdir(os.path.join(entry or ".", name)):
                    return None  # a package by that name comes first: the usual import
                continue
            files = self.folders.get(os.path.normpath(entry or "."))
            if not files or f"{name}.py" not in files:
                return None
            spec = ModuleSpec(name, SourceFileLoader(name, files[f"{name}.py"]), origin=where)
            spec.has_location = True
            return spec
        return None

    def close(self) -> None:
        """Put the environment back; forget the modules the run's scripts imported from
        the pack's folders: the next run (a test's process runs many) may read another
        project's."""
        if self.environ is not None:
            set_environ(self.environ, dict(os.environ))
            self.environ = None
        for name in self.imported:
            module = sys.modules.get(name)
            where = os.path.dirname(getattr(module, "__file__", None) or "")
            if where and os.path.normpath(where) in self.folders:
                del sys.modules[name]
        self.imported.clear()


def _identical(folder: str, installed: str) -> dict[str, str] | None:
    """See :meth:`Runner._verified`."""
    try:
        names = os.listdir(folder)
        theirs = set(os.listdir(installed))
    except OSError:
        return None
    files: dict[str, str] = {}
    for name in names:
        if name in ("__pycache__", "rule.yaml"):
            continue  # bytecode is read from slopjudge's own cache folder, never from here
        copy = os.path.join(installed, name)
        if name not in theirs or not _same_bytes(os.path.join(folder, name), copy):
            return None
        files[name] = copy
    return files


def _same_bytes(mine: str, theirs: str) -> bool:
    try:
        with open(mine, "rb") as a, open(theirs, "rb") as b:
            if os.fstat(a.fileno()).st_size != os.fstat(b.fileno()).st_size:
                return False
            return a.read() == b.read()
    except OSError:  # a folder, unreadable, gone: not a copy of a file of slopjudge's
        return False


class _Kept(io.BytesIO):
    def close(self) -> None:
        """Flushes and stays open: a script closing its stdout must not lose what it wrote."""
        self.flush()


class _Sink:
    """A script's stdout or stderr: bytes behind a text stream, as a pipe gives them."""

    def __init__(self) -> None:
        self.raw = _Kept()
        self.text = io.TextIOWrapper(self.raw, encoding=sys.__stdout__.encoding
                                     if sys.__stdout__ else "utf-8", newline="\n")

    def getvalue(self) -> bytes:
        try:
            self.text.flush()
        except ValueError:  # closed by the script: what was written is in raw
            pass
        return self.raw.getvalue()


class _Saved:
    """What running a script here changes in the process, put back after it."""

    def __init__(self) -> None:
        self.streams = (sys.stdin, sys.stdout, sys.stderr)
        self.argv, self.path, self.meta_path = list(sys.argv), list(sys.path), list(sys.meta_path)
        self.main = sys.modules.get("__main__")
        self.cwd = os.getcwd()
        self.bytecode = (sys.dont_write_bytecode, sys.pycache_prefix)

    def restore(self) -> None:
        sys.stdin, sys.stdout, sys.stderr = self.streams
        sys.argv[:], sys.path[:], sys.meta_path[:] = self.argv, self.path, self.meta_path
        if self.main is not None:
            sys.modules["__main__"] = self.main
        os.chdir(self.cwd)
        sys.dont_write_bytecode, sys.pycache_prefix = self.bytecode


def _timed(timeout: float, body: Any) -> Any:
    """``body()``, or None when it ran past ``timeout`` seconds. The hook's
    own deadline timer is set back after it, less the time taken."""
    left = _signal.getitimer(_signal.ITIMER_REAL)[0]
    deadline = _signal.getsignal(_signal.SIGALRM)
    started = time.monotonic()
    fired = False

    def on_timeout(signum: int, frame: object) -> None:
        nonlocal fired
        fired = True
        _rearm(deadline, left - (time.monotonic() - started))
        raise _TimedOut

    own = timeout < left
    if own:
        _signal.signal(_signal.SIGALRM, on_timeout)
        _signal.setitimer(_signal.ITIMER_REAL, timeout)
    try:
        ended = body()  # run_main ends the script on it; past the script it comes out here
    except _TimedOut:
        ended = None
    if own and not fired:
        try:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
        except _TimedOut:
            pass  # it fired on the way out: the deadline is set back already
        if not fired:
            _rearm(deadline, left - (time.monotonic() - started))
    return None if fired else ended


def _rearm(handler: Any, left: float) -> None:
    _signal.setitimer(_signal.ITIMER_REAL, 0)
    _signal.signal(_signal.SIGALRM, handler)
    _signal.setitimer(_signal.ITIMER_REAL, max(0.001, left))
