"""Judge slots: model calls at once across every slopjudge process of the user
(docs/runner-and-budgets.md). A slot file under ``flock`` is freed by the kernel however
its process ends; a process's own semaphore first, so its calls wait without polling
(polling the files would add up to 50 ms a wave)."""

from __future__ import annotations

import fcntl
import os
import stat
import tempfile
import threading
import time

_ours: dict[int, threading.BoundedSemaphore] = {}  # this process's slots, by their number
_ours_lock = threading.Lock()


def _own_slots(slots: int) -> threading.BoundedSemaphore:
    with _ours_lock:
        return _ours.setdefault(slots, threading.BoundedSemaphore(slots))


def folder() -> str:
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = (os.path.join(runtime, "slopjudge") if runtime and os.path.isdir(runtime)
            else os.path.join(tempfile.gettempdir(), f"slopjudge-{os.getuid()}"))
    return os.path.join(base, "judge-slots")


def _private(path: str) -> None:
    """Make ``path`` (and its parent) if needed; OSError unless it is ours alone."""
    for p in (os.path.dirname(path), path):
        try:
            os.mkdir(p, 0o700)
        except FileExistsError:
            pass
        st = os.lstat(p)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
            raise OSError(f"{p} is not a private folder of this user")


class Slot:
    """One slot held: ``with Slot(8, timeout):`` (raises TimeoutError or OSError)."""

    def __init__(self, slots: int, timeout: float) -> None:
        self.slots, self.timeout = max(1, slots), timeout
        self.fd = -1

    def __enter__(self) -> Slot:
        deadline = time.monotonic() + self.timeout
        own = _own_slots(self.slots)
        if not own.acquire(timeout=max(0.0, self.timeout)):
            raise self._none_free(folder())
        try:
            self.fd = self._machine_slot(deadline)
        except BaseException:
            own.release()
            raise
        return self

    def _machine_slot(self, deadline: float) -> int:
        """A descriptor holding one of the machine's slot files, as soon as one is free."""
        where = folder()
        _private(where)
        delay = 0.005
        while True:
            for n in range(self.slots):
                fd = os.open(os.path.join(where, f"slot-{n}"),
                             os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                return fd
            if time.monotonic() >= deadline:
                raise self._none_free(where)
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def _none_free(self, where: str) -> TimeoutError:
        return TimeoutError(f"no judge slot of {self.slots} came free within "
                            f"{self.timeout:g} s (judge calls of every slopjudge on "
                            f"this machine share them: {where})")

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the only descriptor releases the lock
            self.fd = -1
            _own_slots(self.slots).release()
