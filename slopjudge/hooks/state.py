"""Per-session hook state under ``<state_dir>/state/``: ``<session>.json``, the signed
baseline recorded at session start, and ``<session>.<counter>.count``, the Stop blocks in a
row per counter (``stop``, ``subagent-<agent id>``: a subagent's stop never races the main
agent's); a missing or damaged counter reads as 0, which at worst restarts it.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Any

from slopjudge.fsutil import read_or, write_atomic
from slopjudge.sessions import session_key, state_dir


class BaselineError(Exception):
    """A baseline file that slopjudge did not write as it is now."""


def _path(base: str, session_id: str | None, counter: str | None = None) -> str:
    """The session's baseline file, or with ``counter`` that counter's file."""
    suffix = ".json" if counter is None else f".{session_key(counter)}.count"
    return os.path.join(state_dir(base), session_key(session_id) + suffix)


def _baseline_bytes(session_id: str | None, head: str | None, tree: str,
                    git: dict[str, str] | None) -> bytes:
    signed = f"{session_id}\0{head}\0{tree}".encode()
    if git is not None:  # None: written by 0.1.0, before the git folder's digests were kept
        signed += b"\0" + json.dumps(git, sort_keys=True).encode()
    return signed


def _mark(base: str, session_id: str, what: str = "") -> str:
    """A file beside the signing key, out of the agent's reach, saying a baseline was
    recorded for the session (one deleted is not one never recorded), or ``what`` else."""
    import hashlib  # here: a docs-only `slopjudge run` imports this module, never hashlib

    from slopjudge import cachesign

    key = f"{os.path.realpath(base)}\0{session_id}" + (f"\0{what}" if what else "")
    digest = hashlib.sha256(key.encode()).hexdigest()
    return os.path.join(os.path.dirname(cachesign.key_path()), "sessions", digest)


def write_mark(mark: str, base: str) -> None:
    os.makedirs(os.path.dirname(mark), mode=0o700, exist_ok=True)
    with open(mark, "w", encoding="utf-8") as fh:
        fh.write(f"{base}\n")


def remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def relay_mark(base: str, session_id: str | None, counter: str) -> str:
    """The mark that the last stop asked the agent to relay its end notice (out of the
    workspace: there the agent could end any blocked stop)."""
    return _mark(base, session_id or "-", f"relay\0{counter}")


def load_baseline(base: str, session_id: str | None) -> dict[str, Any] | None:
    """The session's baseline, or None when none was recorded; BaselineError when its MAC
    (under the key outside the workspace) does not verify: the agent can write the file,
    and a baseline rewritten to its own tree would hide every change."""
    from slopjudge import cachesign

    path = _path(base, session_id)
    try:
        data = json.loads(read_or(path, b"null").decode("utf-8"))
    except ValueError:  # UnicodeDecodeError included
        data = None
    if not (isinstance(data, dict) and isinstance(data.get("tree"), str)
            and isinstance(data.get("git"), (dict, type(None)))):
        if os.path.exists(path):
            raise BaselineError(f"the session baseline {path} is not one slopjudge wrote")
        if session_id and os.path.exists(_mark(base, session_id)):
            raise BaselineError(f"the session baseline {path} was recorded at session start "
                                "and has since been deleted")
        return None
    signed = _baseline_bytes(session_id, data.get("head"), data["tree"], data.get("git"))
    mac = data.get("mac")
    if cachesign.key() is None:
        # A key made unreadable or replaced by something not slopjudge's own: what it
        # signed cannot be checked, and an unsigned baseline is anyone's.
        raise BaselineError(f"slopjudge's key {cachesign.key_path()} cannot be read safely, so "
                            f"the session baseline {path} cannot be checked")
    if not isinstance(mac, str) or not cachesign.verify(signed, "baseline", mac):
        raise BaselineError(f"the session baseline {path} was changed after slopjudge wrote "
                            "it (its signature does not match)")
    return data


def save_baseline(base: str, session_id: str | None, head: str | None, tree: str,
                  git: dict[str, str]) -> None:
    from slopjudge import cachesign

    mac = cachesign.sign(_baseline_bytes(session_id, head, tree, git), "baseline")
    if mac is None:
        raise BaselineError(f"slopjudge's key {cachesign.key_path()} cannot be read or made "
                            "safely, so no baseline can be signed")
    record = {"session_id": session_id, "head": head, "tree": tree, "time": time.time(),
              "git": git, "mac": mac}
    write_atomic(_path(base, session_id), json.dumps(record) + "\n")
    if session_id:  # an error here is start's to report: Stop would not know
        write_mark(_mark(base, session_id), base)


def get_count(base: str, session_id: str | None, counter: str) -> int:
    try:
        return max(0, int(read_or(_path(base, session_id, counter), b"").strip() or 0))
    except ValueError:
        return 0


def set_count(base: str, session_id: str | None, counter: str, value: int) -> None:
    path = _path(base, session_id, counter)
    if value > 0:
        write_atomic(path, f"{value}\n")
    else:
        remove(path)
