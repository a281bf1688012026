"""Classify why a judge harness (claude, codex) exited non-zero.

slopjudge-agent prints ``sr-agent: harness-failure: <cause>`` on its own
stderr line so the engine (and sloprail's engine) can decide whether a retry
can help: ``usage limit`` and ``other`` may be retried, ``authentication`` and
``version skew`` never. The marker keeps sr-agent's spelling because that is
what callers grep for. The harness's own text is not kept in the cause.
"""

from __future__ import annotations

import re

USAGE_LIMIT = "usage limit"
AUTHENTICATION = "authentication"
VERSION_SKEW = "version skew"
OTHER = "other"

MARKER = "sr-agent: harness-failure: "
TAIL_BYTES = 2048

# Line-anchored: each pattern must match within one line (``^`` ... under re.M),
# so a cause is read from what the harness reported, not from a stray byte run.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (USAGE_LIMIT, re.compile(r"^.*(?:usage[ _-]?limit|rate[ _-]?limit|rate_limit_error"
                             r"|too many requests|quota exceeded|\b429\b)", re.I | re.M)),
    (AUTHENTICATION, re.compile(r"^.*(?:invalid[ _-]?(?:api[ _-]?)?key|invalid x-api-key"
                                r"|authentication_error|not logged in|please run /login"
                                r"|/login\b|\b401\b|\b403\b|unauthori[sz]ed)", re.I | re.M)),
    (VERSION_SKEW, re.compile(r"^.*(?:unknown|unrecognized|unexpected)[ _-]"
                              r"(?:option|flag|argument)", re.I | re.M)),
]


def classify(stderr: bytes, stdout: bytes = b"") -> str:
    """The failure cause: the first class matching stderr's tail, then stdout's."""
    for stream in (stderr, stdout):
        text = stream[-TAIL_BYTES:].decode("utf-8", "replace")
        for cause, pattern in _PATTERNS:
            if pattern.search(text):
                return cause
    return OTHER


def marker_line(cause: str) -> str:
    """The stderr line callers look for."""
    return MARKER + cause
