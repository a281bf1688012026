"""Signing what slopjudge caches in the workspace, where the agent can write, under a key
kept outside it (docs/security.md): a key that cannot be made or read safely means no
cache, never one trusted unsigned. BLAKE2b and the compare come from their C modules:
``import hashlib`` or ``hmac`` loads OpenSSL, a few ms on every hook call."""

from __future__ import annotations

import os
import stat

from slopjudge.fsutil import create_once, inside

try:
    from _blake2 import blake2b
except ImportError:  # another Python: the same function through hashlib
    from hashlib import blake2b
try:
    from _operator import _compare_digest as compare_digest
except ImportError:
    from hmac import compare_digest  # type: ignore[no-redef]

KEY_BYTES = 32
_KEY: bytes | None = None
_LOADED = False


def key_path() -> str:
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(os.path.abspath(state), "slopjudge", "key")


def _read_key(path: str) -> bytes | None:
    """The key if the file is ours alone and whole; None otherwise."""
    try:
        with open(path, "rb", buffering=0, opener=lambda p, f: os.open(p, f | os.O_NOFOLLOW)) as fh:
            st = os.fstat(fh.fileno())
            if (not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid()
                    or st.st_mode & 0o077 or st.st_size != KEY_BYTES):
                return None
            data = fh.read(KEY_BYTES + 1)
    except OSError:
        return None
    return data if len(data) == KEY_BYTES else None


def key(workspace: str | None = None) -> bytes | None:
    """The signing key, made on first use; None when there is no safe one."""
    global _KEY, _LOADED
    if not _LOADED:
        path = key_path()
        found = _read_key(path)
        if found is None and not os.path.lexists(path):
            try:  # two processes racing end up with the same key (link, not rename)
                os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
                create_once(path, os.urandom(KEY_BYTES), mode=0o600)
            except OSError:
                pass
            found = _read_key(path)
        _KEY, _LOADED = found, True
    if _KEY is not None and workspace and inside(key_path(), workspace):
        return None  # a key the agent can read and write signs nothing
    return _KEY


def sign(data: bytes, domain: str, workspace: str | None = None) -> str | None:
    """The hex MAC of ``data`` in ``domain`` ("rules", "verdict"); None without a key."""
    if (k := key(workspace)) is None:
        return None
    return str(blake2b(domain.encode() + b"\0" + data, key=k, digest_size=32).hexdigest())


def verify(data: bytes, domain: str, mac: str, workspace: str | None = None) -> bool:
    expected = sign(data, domain, workspace)
    return expected is not None and bool(compare_digest(expected, mac))
