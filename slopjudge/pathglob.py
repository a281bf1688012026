"""Gitignore-like path globs, the one glob dialect of slopjudge: a rule's ``paths``,
``exclude`` and ``tools:`` patterns, the rule pack's scripts (the syntax:
docs/writing-rules.md, "Globs")."""

from __future__ import annotations

import re
from functools import lru_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["escape", "match", "match_any", "matcher"]

# A character class: ``[!...]`` or ``[^...]`` negates, a ``]`` first in it is literal.
_CLASS = r"\[([!^]?+)(\]?+[^\]]*)\]"


def _segment(seg: str) -> str:
    """Translate one path segment (no ``/``) into a regex fragment."""
    out: list[str] = []
    i, n = 0, len(seg)
    while i < n:
        c = seg[i]
        if c == "*":
            while i < n and seg[i] == "*":
                i += 1
            out.append("[^/]*")
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(seg[i]))
        elif c == "[" and (m := re.compile(_CLASS).match(seg, i)):  # re's cache holds it
            negate, body = m.groups()
            # Literal inside a class; re would read some of these as set syntax.
            body = "".join("\\" + ch if ch in "\\^[]&~|" else ch for ch in body)
            # A class never matches the separator, negated or not.
            out.append(f"[^/{body}]" if negate else f"(?!/)[{body}]")
            i = m.end() - 1
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def regex_source(pattern: str, below: bool = True) -> str:
    """The regex a pattern stands for (full match against a relative path). ``below=False``:
    a pattern matching a folder does not match the files in it (as ``.gitattributes``)."""
    if pattern.startswith("./"):
        pattern = pattern[1:]
    dir_only = pattern.endswith("/") and pattern.strip("/") != ""
    pat = pattern.rstrip("/") if dir_only else pattern
    anchored = "/" in pat
    pat = pat.lstrip("/")
    segs = pat.split("/") if pat else [""]
    parts: list[str] = []
    for idx, seg in enumerate(segs):
        last = idx == len(segs) - 1
        if seg == "**":
            if last:
                # "x/**": anything inside x (one segment at least); lone "**": anything.
                parts.append(".*" if idx == 0 else "[^/].*")
            else:
                parts.append("(?:[^/]+/)*")
            continue
        parts.append(_segment(seg) + ("" if last else "/"))
    body = "".join(parts)
    if not anchored:
        body = "(?:.*/)?" + body
    # Matching a directory matches everything below it (gitignore semantics).
    tail = "/.+" if dir_only else "(?:/.+)?" if below else ""
    return f"{body}{tail}"


def escape(text: str) -> str:
    """A pattern matching ``text`` literally (``*``, ``?``, ``[``, ``\\`` escaped)."""
    return "".join("\\" + c if c in "*?[\\" else c for c in text)


def match(pattern: str, path: str, below: bool = True) -> bool:
    """True when ``path`` (repository-relative, ``/``-separated) matches ``pattern``
    (``below``: see :func:`regex_source`)."""
    return matcher((pattern,), below)(path)


def match_any(patterns: list[str], path: str) -> bool:
    return matcher(tuple(patterns))(path)


@lru_cache(maxsize=256)
def matcher(patterns: tuple[str, ...], below: bool = True) -> Callable[[str], bool]:
    """A pattern list as one regex, each path's answer remembered: a rule's ``paths`` are
    asked about every changed file, and rules share lists."""
    source = "|".join(f"(?:{regex_source(p, below)})" for p in patterns if p)
    if not source:
        return lambda path: False
    regex = re.compile(source, re.DOTALL)

    @lru_cache(maxsize=65536)  # a long-lived process: stay bounded
    def admits(path: str) -> bool:
        return regex.fullmatch(path[2:] if path.startswith("./") else path) is not None

    return admits
