"""Judge slots: model calls at once across every slopjudge process of the user
(docs/runner-and-budgets.md). A slot file under ``flock`` is freed by the kernel however
its process ends; a process's own semaphore first, so its calls wait without polling
(polling the files would add up to 50 ms a wave)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import tempfile
import threading
import time
from collections.abc import Iterator

_ours: dict[int, threading.BoundedSemaphore] = {}  # this process's slots, by their number
_ours_lock = threading.Lock()


def folder() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = (os.path.join(runtime, "slopjudge") if runtime and os.path.isdir(runtime)
            else os.path.join(tempfile.gettempdir(), f"slopjudge-{os.getuid()}"))
    return os.path.join(base, "judge-slots")


def _private(path: str) -> None:
    """Make ``path`` (and its parent) if needed; OSError unless it is ours alone."""
    for p in (os.path.dirname(path), path):
        with contextlib.suppress(FileExistsError):
            os.mkdir(p, 0o700)
        st = os.lstat(p)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            raise OSError(f"{p} is not a private folder of this user")


@contextlib.contextmanager
def slot(slots: int, timeout: float) -> Iterator[int]:
    """One slot held, as the descriptor of its locked file: ``with slot(8, timeout):``
    (raises TimeoutError or OSError)."""
    slots, where, deadline = max(1, slots), folder(), time.monotonic() + timeout
    none_free = TimeoutError(f"no judge slot of {slots} came free within {timeout:g} s (judge "
                             f"calls of every slopjudge on this machine share them: {where})")
    with _ours_lock:
        own = _ours.setdefault(slots, threading.BoundedSemaphore(slots))
    if not own.acquire(timeout=max(0.0, timeout)):
        raise none_free
    try:
        fd = _machine_slot(slots, where, deadline, none_free)
        try:
            yield fd
        finally:
            os.close(fd)  # closing the only descriptor releases the lock
    finally:
        own.release()


def _machine_slot(slots: int, where: str, deadline: float, none_free: TimeoutError) -> int:
    """A descriptor holding one of the machine's slot files, as soon as one is free."""
    _private(where)
    delay = 0.005
    while True:
        for n in range(slots):
            fd = os.open(os.path.join(where, f"slot-{n}"),
                         os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return fd
        if time.monotonic() >= deadline:
            raise none_free
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
