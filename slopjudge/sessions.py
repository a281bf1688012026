"""Where an agent session's files live under the state folder (the hooks' baseline, the
budget's spend): one naming, so a session id from a payload never names a path outside."""

from __future__ import annotations

import os
import re

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def session_key(session_id: str | None) -> str:
    """A file-name-safe key; ``default`` when the harness gave no session id."""
    if not session_id:
        return "default"
    key = _UNSAFE.sub("_", session_id)[:120].lstrip(".")
    return key or "default"


def state_dir(base: str) -> str:
    return os.path.join(base, "state")
