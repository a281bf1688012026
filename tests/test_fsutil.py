"""The one atomic writer: whole new content or the old file, never half, no litter."""

from __future__ import annotations

import errno
import os
import resource
import signal
import stat
import threading
from pathlib import Path

import pytest

from slopjudge.fsutil import create_once, write_atomic


def _in_child(fn: object) -> int:
    """Run ``fn`` in a forked child; its exit status (0 when it returned)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            code = fn()  # type: ignore[operator]
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_replaces_the_content_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "state.json"
    write_atomic(str(target), "one\n")
    write_atomic(str(target), b"two\xff")
    assert target.read_bytes() == b"two\xff"
    assert os.listdir(target.parent) == ["state.json"]


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "cache.json"
    target.write_text("old content\n")

    def child() -> int:
        # A real short write: the kernel refuses to grow any file past 64 bytes.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))
        try:
            write_atomic(str(target), "x" * 100_000)
        except OSError as exc:
            return 0 if exc.errno == errno.EFBIG else 2
        return 3

    assert _in_child(child) == 0
    assert target.read_text() == "old content\n"
    assert os.listdir(tmp_path) == ["cache.json"]


def test_a_replace_that_fails_removes_its_temporary(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    (target / "inside").write_text("kept")
    with pytest.raises(OSError):
        write_atomic(str(target), "text")  # a folder cannot be replaced by a file
    assert sorted(os.listdir(tmp_path)) == ["taken"]
    assert (target / "inside").read_text() == "kept"


def test_modes_follow_the_umask_unless_given(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(str(tmp_path / "plain"), "x")
        write_atomic(str(tmp_path / "script"), "#!/bin/sh\n", mode=0o755)
        write_atomic(str(tmp_path / "secret"), "k", mode=0o600)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "plain").st_mode) == 0o640
    assert stat.S_IMODE(os.stat(tmp_path / "script").st_mode) == 0o755  # despite the umask
    assert stat.S_IMODE(os.stat(tmp_path / "secret").st_mode) == 0o600


def test_a_symlink_at_the_target_is_replaced_not_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("untouched")
    link = tmp_path / "link"
    link.symlink_to(elsewhere)
    write_atomic(str(link), "new")
    assert not link.is_symlink() and link.read_text() == "new"
    assert elsewhere.read_text() == "untouched"


def test_threads_writing_one_file_each_leave_a_whole_one(tmp_path: Path) -> None:
    target = tmp_path / "spend.json"
    bodies = [str(i) * 50_000 for i in range(8)]
    threads = [threading.Thread(target=write_atomic, args=(str(target), b)) for b in bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert target.read_text() in bodies
    assert os.listdir(tmp_path) == ["spend.json"]


def test_create_once_keeps_the_first_file(tmp_path: Path) -> None:
    key = tmp_path / "keys" / "key"
    assert create_once(str(key), b"first", mode=0o600) is True
    assert create_once(str(key), b"second", mode=0o600) is False
    assert key.read_bytes() == b"first"
    assert stat.S_IMODE(os.stat(key).st_mode) == 0o600
    assert os.listdir(key.parent) == ["key"]
