"""Compiled rule code kept between runs: a hook compiles the pack's scripts once,
not on every tool call.

Python checks run in a fork of slopjudge, which compiles each script (and the
pack's ``rules/_lib`` helpers) itself: bytecode is never read from a
``__pycache__`` beside a rule, a file the judged agent could plant. Compiling
the default pack costs more than the rest of a PreToolUse hook, so the code
objects are kept here, outside the workspace, beside the signing key
(``$XDG_STATE_HOME/slopjudge/code/``). Each entry is named by a digest of the
script's path, its source and the interpreter, and carries a MAC under
:mod:`slopjudge.cachesign`'s key: an entry slopjudge did not write, or one for
other source, is never run. Without a key, or on any problem reading or
writing, the source is compiled as before.

Standard library only, and nothing heavy: the PreToolUse hook uses it.
"""

from __future__ import annotations

import marshal
import os
import sys
import threading
import types

from slopjudge import cachesign
from slopjudge.fsutil import find_workspace

try:
    from _blake2 import blake2b
except ImportError:  # another Python: the same function through hashlib
    from hashlib import blake2b

_MAGIC = b"slopjudge-code 1\n"
# The interpreter whose bytecode an entry holds: marshal's format and the
# bytecode change with the version; -O changes what compile() produces.
_INTERPRETER = (f"{sys.implementation.cache_tag}\0{sys.hexversion}\0"
                f"{sys.flags.optimize}").encode()


def _folder() -> str:
    return os.path.join(os.path.dirname(cachesign.key_path()), "code")


def _name(path: str, source: bytes) -> bytes:
    digest = blake2b(_INTERPRETER + b"\0" + os.fsencode(path) + b"\0" + source,
                               digest_size=20)
    return digest.hexdigest().encode("ascii")


def _project_of(path: str) -> str:
    """The repository holding ``path``: the nearest folder above it with a ``.git``
    (the rules folder may be anywhere in it), else ``<project>/rules/<rule>/x.py``."""
    here = os.path.dirname(os.path.abspath(path))
    top = find_workspace(here)
    return top if os.path.exists(os.path.join(top, ".git")) else os.path.dirname(
        os.path.dirname(here))


def _outside_key(path: str) -> bool:
    """The key is not inside the project holding ``path``: there the agent could read
    it and sign code of its own."""
    return cachesign.key(_project_of(path)) is not None


def compile_source(source: bytes, path: str) -> types.CodeType:
    """``compile(source, path, "exec", dont_inherit=True)``, from the cache when it holds
    it. Raises what compile raises (SyntaxError, ValueError) for code that does not compile."""
    try:
        usable = _outside_key(path)
    except Exception:  # noqa: BLE001 - no cache is only slower
        usable = False
    if not usable:
        return compile(source, path, "exec", dont_inherit=True)
    name = _name(path, source)
    entry = os.path.join(_folder(), name.decode("ascii") + ".code")
    code = _read(entry, name)
    if code is not None:
        return code
    code = compile(source, path, "exec", dont_inherit=True)
    _write(entry, name, code)
    return code


def _read(entry: str, name: bytes) -> types.CodeType | None:
    try:
        with open(entry, "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    if not raw.startswith(_MAGIC):
        return None
    mac, _, body = raw[len(_MAGIC):].partition(b"\n")
    # The MAC covers the entry's name, which digests the path and source: a
    # signed entry copied under another name does not verify.
    try:
        if not cachesign.verify(name + b"\0" + body, "code", mac.decode("ascii")):
            return None
        code = marshal.loads(body)
    except (ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, types.CodeType) else None


# Entries for old versions of scripts pile up as rules are edited: past this many,
# a write removes the oldest half (a removed entry in use is only compiled again).
MAX_ENTRIES = 2000


def _prune(folder: str) -> None:
    try:
        names = [n for n in os.listdir(folder) if n.endswith(".code")]
        if len(names) <= MAX_ENTRIES:
            return
        aged = sorted(names, key=lambda n: os.stat(os.path.join(folder, n)).st_mtime_ns)
        for name in aged[: len(aged) // 2]:
            os.unlink(os.path.join(folder, name))
    except OSError:
        pass  # another process pruned first: nothing lost


def _write(entry: str, name: bytes, code: types.CodeType) -> None:
    _prune(os.path.dirname(entry))
    body = marshal.dumps(code)
    mac = cachesign.sign(name + b"\0" + body, "code")
    if mac is None:
        return
    tmp = f"{entry}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(os.path.dirname(entry), mode=0o700, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(_MAGIC + mac.encode("ascii") + b"\n" + body)
        os.replace(tmp, entry)  # readers see a whole entry or none
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
