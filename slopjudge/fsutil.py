"""Atomic writes (readers see the old content or the new, never half) and reads of files
that may not exist. Only ``os`` is imported: the hook fast path writes through it."""

from __future__ import annotations

import os


def _write_temp(path: str, data: str | bytes, mode: int | None, fsync: bool = False) -> str:
    """A new file beside ``path`` holding ``data``; its name. Removed again on failure."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    body = data.encode("utf-8") if isinstance(data, str) else data
    while True:
        # pid and random bits: unique across processes and threads; O_EXCL makes sure.
        tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        try:
            # 0o666 less the umask, as open(path, "w") would create it; close-on-exec, as
            # every descriptor os.open makes (PEP 446).
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
            break
        except FileExistsError:
            continue
    try:
        with open(fd, "wb") as fh:
            if mode is not None:
                os.fchmod(fd, mode)  # exactly this mode, whatever the umask
            fh.write(body)
            if fsync:
                fh.flush()
                os.fsync(fd)
    except BaseException:
        _unlink_quietly(tmp)
        raise
    return tmp


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def write_atomic(path: str, data: str | bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` (str as UTF-8) in one step, creating its folder;
    ``mode`` exactly (None: as ``open(path, "w")``). On any failure ``path`` is left as it
    was, with no temporary file, and the error propagates."""
    tmp = _write_temp(path, data, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def create_once(path: str, data: str | bytes, *, mode: int | None = None) -> bool:
    """Create ``path`` holding ``data`` unless it exists; whether this call created it. It
    appears whole (written to disk, then linked); of two processes racing, the first stands."""
    tmp = _write_temp(path, data, mode, fsync=True)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        _unlink_quietly(tmp)
    return True


class Unreadable(Exception):
    """A file that exists but cannot be read; ``str()`` says why in a few words."""


def read_if_present(path: str) -> bytes | None:
    """A file's bytes as they are on disk, None when there is no such file;
    :class:`Unreadable` when it is a directory or cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise Unreadable("it is a directory") from None
    except OSError as exc:
        raise Unreadable(exc.strerror or str(exc)) from None


def read_or(path: str, default: bytes) -> bytes:
    """A file's bytes, or ``default`` when it cannot be read for any reason."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return default


def identity(path: str) -> tuple[int, int] | None:
    """The real file or folder ``path`` names, as (device, inode): one walk following
    links visits each once. None when it cannot be stat'ed (gone, or not to be read)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def which(name: str, path: str | None = None) -> str | None:
    """``shutil.which(name, path=path)`` over the absolute folders of ``path`` (PATH by
    default) only: a relative one names the folder a command runs in, the judged repository,
    where an agent could put a program of that name. A name holding ``/`` is that file."""
    folders = [""] if os.sep in name else [
        f for f in (os.environ.get("PATH", os.defpath) if path is None else path).split(os.pathsep)
        if os.path.isabs(f)]
    return next((c for c in (os.path.join(f, name) for f in folders)
                 if os.path.isfile(c) and os.access(c, os.X_OK)), None)


def inside(path: str, root: str) -> bool:
    """``path``, links resolved, is ``root`` (resolved) or under it."""
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def find_workspace(start: str) -> str:
    """The git top level holding ``start`` (the nearest folder with ``.git``), else ``start``;
    walked up to, not asked of git: this runs on every hook call."""
    here = start = os.path.abspath(start)
    while not os.path.exists(os.path.join(here, ".git")):
        if os.path.dirname(here) == here:
            return start
        here = os.path.dirname(here)
    return here
