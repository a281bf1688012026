"""Compiled regular expressions kept from one PreToolUse call to the next.

A Write's hook compiles the same patterns on every call: the rules' path globs and,
since the default pack's scripts run in the hook process (``checks/inproc.py``), the
pack's own expressions, about 140 of them, 40 ms of CPU against 20 ms for all of
``python -c pass`` (a Write of a small .py file, bench venv). Compiling is pure Python
(``re._parser``, ``re._compiler``) and yields the same program for the same pattern and
flags on the same interpreter, so the program is kept in a file and handed back to
``_sre``: ``re.compile`` then finds the pattern in ``re``'s own cache.

The file is ``<state folder>/cache/regex.bin``, signed as the rules cache is
(:mod:`slopjudge.cachesign`): one slopjudge did not write is never read, since a
program changed there would change what a rule sees. It is stamped with the
interpreter's version and ``_sre``'s, and read only by the same.
"""

from __future__ import annotations

import _sre
import marshal
import re
import sys

from slopjudge import cachesign
from slopjudge.fsutil import write_atomic

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    from typing import Any

_MAGIC = b"slopjudge-regex-2 "
MAX_ENTRIES = 1024  # a script compiling patterns made from its input must not grow it for good


def _stamp() -> str:
    return f"{sys.version}|{sys.implementation.cache_tag}|{_sre.MAGIC}|{_sre.CODESIZE}"


class RegexCache:
    """The patterns one call can take from the file, and the file written back when the
    call compiled new ones."""

    def __init__(self, path: str, workspace: str) -> None:
        self.path, self.workspace = path, workspace
        self.entries: dict[tuple[bool, Any, int], tuple[int, list[int], int, dict[str, int],
                                                      tuple[str | None, ...]]] = {}

    def load(self) -> None:
        """Put the file's patterns in ``re``'s cache; a file that does not read or was
        not written by this interpreter is no cache."""
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read()
        except OSError:
            return
        head, _, body = raw.partition(b"\n")
        if not head.startswith(_MAGIC) or not cachesign.verify(
                body, "regex", head[len(_MAGIC):].decode("ascii", "replace"), self.workspace):
            return
        try:
            stamp, entries = marshal.loads(body)
            if stamp != _stamp():
                return
            for (is_str, pattern, flags), (full, code, groups, names, index) in entries.items():
                key = (str if is_str else bytes, pattern, flags)
                if key not in re._cache:  # type: ignore[attr-defined]
                    re._cache[key] = _sre.compile(  # type: ignore[attr-defined]
                        pattern, full, code, groups, names, index)
        except Exception:  # noqa: BLE001 - signed but unreadable (another layout): a miss
            return
        self.entries = entries

    def save(self) -> None:
        """Write the file again when ``re``'s cache holds patterns it does not. On a
        Python whose ``re`` is laid out otherwise, nothing is kept (it only costs speed)."""
        try:
            new = [key for key in list(re._cache)  # type: ignore[attr-defined]
                   if (key[0] is str, key[1], key[2]) not in self.entries
                   and not key[2] & re.DEBUG]
            room = MAX_ENTRIES - len(self.entries)
            if not new or room <= 0:
                return
            for kind, pattern, flags in new[:room]:
                self.entries[(kind is str, pattern, flags)] = _program(pattern, flags)
            body = marshal.dumps((_stamp(), self.entries))
        except Exception:  # noqa: BLE001 - another layout of re's internals: no cache
            return
        mac = cachesign.sign(body, "regex", self.workspace)
        if mac is None:
            return  # no key to sign with: an unsigned file would never be read
        try:
            write_atomic(self.path, _MAGIC + mac.encode("ascii") + b"\n" + body)
        except OSError:
            pass  # a read-only state folder only costs speed


def _program(pattern: Any, flags: int) -> tuple[int, list[int], int, dict[str, int],
                                                  tuple[str | None, ...]]:
    """What ``re._compiler.compile`` hands ``_sre.compile`` for this pattern."""
    from re import _compiler, _parser  # type: ignore[attr-defined]

    parsed = _parser.parse(pattern, flags)
    code = _compiler._code(parsed, flags)
    names = dict(parsed.state.groupdict)
    index: list[str | None] = [None] * parsed.state.groups
    for name, i in names.items():
        index[i] = name
    # The code as plain ints (its opcodes are an int subclass marshal refuses), not packed
    # in an array: the array module costs a Write's hook about 0.5 ms to import.
    return (int(flags | parsed.state.flags), list(map(int, code)),
            parsed.state.groups - 1, names, tuple(index))
