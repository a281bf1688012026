"""The validated-rules cache: every hook loads the rules, and parsing and validating
them costs far more than the hook's own work.

The last load result is kept under a key of the stats (config.file_stamp) of everything
it depends on, ``PATH`` only when a rule names a command found there. The file is signed:
one slopjudge did not write (a rules list an agent emptied) is a miss.
"""

from __future__ import annotations

import os
import time

from slopjudge import __version__, cachesign
from slopjudge.fsutil import identity, read_or, write_atomic
from slopjudge.jsonobject import dumps, loads
from slopjudge.loading.config import Settings, display_path, file_stamp, is_racy
from slopjudge.model import Check, LoadError, LoadResult, Rule, asdict, fields
from slopjudge.resources import PACKAGE_DIR, data_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CACHE_FORMAT = 3
# The code whose behaviour decides a load result: editing it (in a checkout) must invalidate.
# Every module a load imports, a template's sample payload's too (a test holds this to it).
_CODE = ("loading/loader.py", "loading/toolrules.py", "loading/templates.py",
         "loading/config.py", "loading/matchexpr.py", "loading/schemas.py", "model.py",
         "payload.py", "changes/diffparse.py", "changes/citations.py", "procs.py",
         "errors.py", "fsutil.py", "resources.py")
_SCHEMA = (data_path("schemas", "rule.schema.json"),)
_SKIP_DIRS = frozenset({"__pycache__", ".git"})


def cache_path(settings: Settings) -> str:
    return os.path.join(settings.state_dir, "cache", "rules.json")


def _walk(root: str, out: dict[str, Any]) -> None:
    # A folder that cannot be read counts as None: its becoming readable must count. Linked
    # folders are followed, each real folder once: a link to an ancestor is no endless walk.
    seen: set[tuple[int, int]] = set()
    for folder, dirs, names in os.walk(root, onerror=lambda e: out.update({e.filename: None}),
                                       followlinks=True):
        key = identity(folder)
        if key is None:  # gone since it was listed: as a folder that cannot be read
            out[folder] = None
        if key is None or key in seen:
            dirs[:] = []
            continue
        seen.add(key)
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        for name in names:
            out[os.path.join(folder, name)] = file_stamp(os.path.join(folder, name))


def cache_key(settings: Settings) -> dict[str, Any]:
    """Everything a load result depends on, as JSON-comparable data."""
    files: dict[str, Any] = {}
    for folder in [settings.rules_dir, *settings.template_dirs]:
        _walk(folder, files)
    for path in [*settings.config_files, *_SCHEMA, settings.rubric_path]:
        if path:
            files[path] = file_stamp(path)
    return {
        "format": CACHE_FORMAT,
        "version": __version__,
        "code": {name: file_stamp(os.path.join(PACKAGE_DIR, name)) for name in _CODE},
        "workspace": settings.workspace,
        "rules_dir": settings.rules_dir,
        "template_dirs": list(settings.template_dirs),
        "files": files,
    }


def _encode_rule(rule: Rule) -> list[Any]:
    # A row of values in field order, its checks rows too: a third of the size of dicts,
    # and faster to read. The key names the code, so a row is read by the model it was
    # written by.
    return [[[getattr(c, f.name) for f in fields(Check)] for c in rule.checks]
            if f.name == "checks" else getattr(rule, f.name) for f in fields(Rule)]


def _decode_rule(row: list[Any]) -> Rule:
    rule = Rule(*row)
    rows: list[Any] = rule.checks  # rows until here
    rule.checks = [Check(*c) for c in rows]
    return rule


def read_signed(path: str, domain: str, workspace: str) -> Any:
    """The JSON slopjudge signed into ``path`` for ``domain``; None for any other file:
    the agent can write the state folder."""
    mac, _, body = read_or(path, b"").partition(b"\n")
    if cachesign.verify(body, domain, mac.decode("ascii", "ignore"), workspace):
        return loads(body)
    return None


def write_signed(path: str, domain: str, workspace: str, value: Any) -> None:
    body = dumps(value, separators=(",", ":")).encode()
    mac = cachesign.sign(body, domain, workspace)
    if mac is None:
        return  # no key to sign with: an unsigned cache would never be read
    try:
        write_atomic(path, mac.encode() + b"\n" + body)
    except OSError:
        pass  # a read-only state folder only costs speed: the result is still right


def _read(path: str, key: dict[str, Any]) -> LoadResult | None:
    data = read_signed(path, "rules", key["workspace"])
    try:
        if data is None or data["key"] != key:
            return None
        if data["PATH"] is not None and data["PATH"] != os.environ.get("PATH", ""):
            return None  # a rule named a command PATH finds: another PATH may find another
        if any(file_stamp(p) != s for p, s in data["watched_stats"].items()):
            return None
        # Paths are stored absolute; shown relative to the cwd now.
        errors = [LoadError(**{**e, "path": display_path(e["path"])}) for e in data["errors"]]
        return LoadResult(rules=[_decode_rule(r) for r in data["rules"]], errors=errors,
                          files=list(data["files"]), watched=list(data["watched"]))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None  # from another format: load afresh


def _uses_path(result: LoadResult) -> bool:
    """Whether a rule's script, prepare, subjects or ``when`` is a command found on PATH (or
    looked for there in vain): only then does the result depend on PATH."""
    bare = any(name and "/" not in name for r in result.rules
               for name in (r.subjects, *(q.get("when") for q in r.require),
                            *(n for c in r.checks for n in (c.script, c.prepare))))
    return bare or any("a command on PATH" in e.message for e in result.errors)


def _write(path: str, key: dict[str, Any], result: LoadResult, start_ns: int) -> None:
    # Paths under the walked folders are in the key already (the walk sees new files there).
    prefixes = tuple(r.rstrip(os.sep) + os.sep for r in [key["rules_dir"], *key["template_dirs"]])
    watched = {p: file_stamp(p) for p in result.watched if not p.startswith(prefixes)}
    if any(is_racy(s, start_ns) for s in [*key["files"].values(), *watched.values()]):
        return
    data = {
        "key": key,
        "PATH": os.environ.get("PATH", "") if _uses_path(result) else None,
        "watched": result.watched,
        "watched_stats": watched,
        "rules": [_encode_rule(r) for r in result.rules],
        "errors": [{**asdict(e), "path": os.path.abspath(e.path)} for e in result.errors],
        "files": result.files,
    }
    write_signed(path, "rules", key["workspace"], data)


def load_rules_cached(settings: Settings) -> LoadResult:
    """The rules, from the cache when nothing they depend on changed. Every command and
    hook starts here: the state folder is marked ignored before anything is written."""
    from slopjudge.loading.config import ensure_state_ignored

    ensure_state_ignored(settings.state_dir)
    path = cache_path(settings)
    start_ns = time.time_ns()
    key = cache_key(settings)
    result = _read(path, key)
    if result is None:
        from slopjudge.loading.loader import load_rules

        result = load_rules(settings.rules_dir, workspace=settings.workspace,
                            template_dirs=settings.template_dirs)
        _write(path, key, result, start_ns)
    return enabled(result, settings)


def enabled(result: LoadResult, settings: Settings) -> LoadResult:
    """The result with the preview rules the settings do not enable set aside, not run."""
    wanted = settings.preview  # True, False or rule ids
    off = [r for r in result.rules
           if r.preview and wanted is not True and r.id not in (wanted or [])]
    if not off:
        return result
    return LoadResult(rules=[r for r in result.rules if r not in off], errors=result.errors,
                      files=result.files, watched=result.watched, preview_off=off)
