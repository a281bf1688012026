"""Gitignore-like path globs, the one glob dialect of slopjudge: a rule's ``paths``,
``exclude`` and ``tools:`` patterns, the rule pack's scripts (the syntax:
docs/writing-rules.md, "Globs")."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

# One token of a segment: a run of ``*``, ``?``, an escaped character, a character class
# (``[!...]`` or ``[^...]`` negates, a ``]`` first in it is literal), any other character.
_TOKEN = r"(\*+)|(\?)|\\(.)|\[([!^]?+)(\]?+[^\]]*)\]|(.)"


def _segment(seg: str) -> str:
    """Translate one path segment (no ``/``) into a regex fragment."""
    import re  # see _Matcher._match

    def token(m: re.Match[str]) -> str:
        stars, question, escaped, negate, body, char = m.groups()
        if stars or question:
            return "[^/]*" if stars else "[^/]"
        if body is None:
            return re.escape(escaped if escaped is not None else char)
        # Literal inside a class; re would read some of these as set syntax.
        body = "".join("\\" + ch if ch in "\\^[]&~|" else ch for ch in body)
        # A class never matches the separator, negated or not.
        return f"[^/{body}]" if negate else f"(?!/)[{body}]"

    return re.sub(_TOKEN, token, seg, flags=re.DOTALL)


def regex_source(pattern: str, below: bool = True) -> str:
    """The regex a pattern stands for (full match against a relative path). ``below=False``:
    a pattern matching a folder does not match the files in it (as ``.gitattributes``)."""
    if pattern.startswith("./"):
        pattern = pattern[1:]
    dir_only = pattern.endswith("/") and pattern.strip("/") != ""
    pat = pattern.rstrip("/") if dir_only else pattern
    anchored = "/" in pat
    segs = pat.lstrip("/").split("/")
    parts: list[str] = []
    for idx, seg in enumerate(segs):
        last = idx == len(segs) - 1
        if seg == "**" and not last:
            parts.append("(?:[^/]+/)*")
        elif seg == "**":  # "x/**": anything inside x (one segment at least); lone "**": anything
            parts.append(".*" if idx == 0 else "[^/].*")
        else:
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


def _suffix(pattern: str) -> tuple[str, bool] | None:
    """``(text, deep)`` for ``*text`` (``deep`` False) or ``**/*text`` (True), ``text``
    holding no ``*?[\\/``: a name ending in ``text`` at any depth. None for any other."""
    deep = pattern.startswith("**/*")
    text = pattern[4:] if deep else pattern[1:] if pattern.startswith("*") else ""
    if not text or any(c in "*?[\\/" for c in text):
        return None
    return text, deep


def _ends_in(key: str, text: str, deep: bool, below: bool) -> bool:
    """Whether ``key`` fully matches :func:`regex_source` of :func:`_suffix`'s pattern:
    some segment ends in ``text``, it is the last one (or, ``below``, a non-empty rest
    follows it), and, ``deep``, no segment before it is empty."""
    segs = key.split("/")
    last = len(segs) - 1
    for k, seg in enumerate(segs):
        if seg.endswith(text) and (k == last or below and (k + 1 < last or segs[last] != "")):
            return True
        if deep and not seg:
            return False
    return False


def _literal_pieces(pattern: str) -> tuple[str, ...] | None:
    """Text every path ``pattern`` matches contains: its runs between ``*``, ``?`` and
    ``/`` (a match has each, as written). None for a pattern with a class or an escape."""
    if "[" in pattern or "\\" in pattern:
        return None
    text = pattern[1:] if pattern.startswith("./") else pattern
    return tuple(p for p in text.replace("*", "/").replace("?", "/").split("/") if p)


class _Matcher:
    """A pattern list, each path's answer remembered: a rule's ``paths`` are asked about
    every changed file, and rules share lists. ``*.py`` and ``**/*.py`` are answered by
    their text (:func:`_suffix`), the others by one regex, compiled the first time a path
    holds one pattern's literal text: a clean Write's hook then never imports `re`."""

    def __init__(self, patterns: tuple[str, ...], below: bool = True) -> None:
        self.suffixes = [s for s in map(_suffix, patterns) if s is not None]
        self.patterns = tuple(p for p in patterns if p and _suffix(p) is None)
        self.below = below
        self.pieces = [_literal_pieces(p) for p in self.patterns]
        self.regex: re.Pattern[str] | None = None
        self.seen: dict[str, bool] = {}

    def __call__(self, path: str) -> bool:
        hit = self.seen.get(path)
        if hit is None:
            if len(self.seen) >= 65536:  # a long-lived process: stay bounded
                self.seen.clear()
            key = path[2:] if path.startswith("./") else path
            hit = self.seen[path] = self._match(key)
        return hit

    def _match(self, key: str) -> bool:
        if any(_ends_in(key, text, deep, self.below) for text, deep in self.suffixes):
            return True
        if self.regex is None:
            if not any(pieces is None or all(piece in key for piece in pieces)
                       for pieces in self.pieces):
                return False  # no pattern's literal text is in it
            # Imported here: `re` (with the enum it loads) costs about half a whole
            # `python -c pass`, and a clean Write's hook needs it nowhere else.
            import re

            self.regex = re.compile("|".join(f"(?:{regex_source(p, self.below)})"
                                             for p in self.patterns), re.DOTALL)
        return self.regex.fullmatch(key) is not None


_MATCHERS: dict[tuple[tuple[str, ...], bool], _Matcher] = {}


def matcher(patterns: tuple[str, ...], below: bool = True) -> _Matcher:
    """The list's matcher, kept (a dict, not functools' cache: a Write's hook imports
    nothing else of functools, 1-4 ms)."""
    found = _MATCHERS.get((patterns, below))
    if found is None:
        if len(_MATCHERS) >= 256:
            _MATCHERS.clear()
        found = _MATCHERS[(patterns, below)] = _Matcher(patterns, below)
    return found
