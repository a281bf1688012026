"""What is judged: the files a project authors, not those it installs or generates
(docs/what-is-judged.md). ``.gitattributes`` is read from the change's base, so a line an
agent adds hides nothing; a protected file is never left out (the backstop reads the
same change).
"""

from __future__ import annotations

import os
import re

from slopjudge import pathglob
from slopjudge.fsutil import read_or
from slopjudge.model import FileChange, LeftOut

TYPE_CHECKING = False  # not typing's: every hook imports the changes package
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

OWN = "slopjudge's own installed files"
DEPENDENCIES = "untracked environment or dependency folder"
LOCKFILE = "lockfile"
SOURCE_MAP = "source map"
MINIFIED = "minified bundle"
SETTING = "exclude_generated in the settings"
ATTRIBUTES = ("linguist-generated", "linguist-vendored")

LOCKFILES = (
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock",
    "bun.lockb", "deno.lock", "Cargo.lock", "poetry.lock", "Pipfile.lock", "uv.lock", "pdm.lock",
    "pylock.toml", "composer.lock", "Gemfile.lock", "go.sum", "go.work.sum", "flake.lock",
    "Podfile.lock", "Package.resolved", "pubspec.lock", "mix.lock", "packages.lock.json",
    "gradle.lockfile", "conan.lock", "MODULE.bazel.lock",
)
SOURCE_MAPS = ("*.js.map", "*.mjs.map", "*.cjs.map", "*.css.map", "*.ts.map")
MINIFIED_NAMES = ("*.min.js", "*.min.mjs", "*.min.cjs", "*.min.css", "*-min.js", "*-bundle.min.*")
_BUNDLE_SUFFIXES = (".js", ".mjs", ".cjs", ".css")


class Policy:
    """Which files of a change are left out, and the record of those that were."""

    def __init__(self, *, enabled: bool = True, patterns: Iterable[str] = (),
                 protected: Callable[[str], bool] | None = None, workspace: str = "") -> None:
        self.enabled = enabled
        self.patterns = [p for p in patterns if p.strip()]
        self.protected = protected or (lambda _path: False)
        self.own = _own_prefixes(workspace) if workspace else ()
        self.left_out: list[LeftOut] = []
        # A commit or tree whose committed .gitignore files alone say what a work-tree
        # snapshot ignores (the Stop hook's: the session baseline, or HEAD), and patterns
        # ignored besides (slopjudge's state folder); None: the .gitignore files on disk.
        self.ignores_from: str | None = None
        self.own_ignores: list[str] = []

    def _last_pattern(self, path: str) -> str | None:
        """The last pattern of the setting that names ``path``: it decides, as in git."""
        return next((p for p in reversed(self.patterns)
                     if pathglob.match(p[1:] if p.startswith("!") else p, path)), None)

    def keeps(self, path: str) -> bool:
        """A ``!pattern`` of the setting names it: judged whatever else says."""
        return (self._last_pattern(path) or "").startswith("!")

    def why(self, path: str, marks: dict[str, str] | None = None) -> str | None:
        """Why ``path`` is left out (its reason), or None when it is judged."""
        if not self.enabled or self.protected(path):
            return None
        reason = None
        if self.own and path.startswith(self.own):
            reason = OWN
        elif marks and path in marks:
            reason = marks[path]
        elif os.path.basename(path) in LOCKFILES:
            reason = LOCKFILE
        elif pathglob.match_any(list(SOURCE_MAPS), path):
            reason = SOURCE_MAP
        elif pathglob.match_any(list(MINIFIED_NAMES), path):
            reason = MINIFIED
        last = self._last_pattern(path)
        if last is None:
            return reason
        return None if last.startswith("!") else reason or SETTING

    # -- the work tree's snapshot ------------------------------------------------

    def dependency_folders(self, tracked: list[str], untracked: list[str]) -> list[str]:
        """Untracked dependency folders to leave out of a snapshot, each recorded."""
        if not self.enabled:
            return []
        roots = sorted({r for path in untracked if (r := _dependency_root(path))})
        chosen = []
        for i, folder in enumerate(roots):
            inside = folder + "/"
            # Nested candidates (a venv's site-packages) belong to the outermost one; a
            # folder holding a tracked file is the project's.
            if any(folder.startswith(o + "/") for o in roots[:i]) \
                    or any(t.startswith(inside) for t in tracked):
                continue
            files = [p for p in untracked if p.startswith(inside)]
            if self.protected(folder) or any(self.protected(f) or self.keeps(f) for f in files) \
                    or self.keeps(folder):
                continue
            chosen.append(folder)
            self.left_out.append(LeftOut(path=inside, files=len(files), why=DEPENDENCIES))
        return chosen


def _dependency_root(path: str) -> str | None:
    """The dependency folder ``path`` (an untracked file) marks or lies in, if any."""
    parts = path.split("/")
    for i, part in enumerate(parts[:-1]):
        if part in ("node_modules", "site-packages"):
            return "/".join(parts[: i + 1])
    # CACHEDIR.TAG: a tool's cache (pytest, mypy, ruff), which hides itself from git
    # with a .gitignore of its own that the snapshot does not read.
    if len(parts) > 1 and (parts[-1] in ("pyvenv.cfg", "CACHEDIR.TAG")
                           or (parts[-1] == "modules.txt" and parts[-2] == "vendor")):
        return "/".join(parts[:-1])
    return None


def _own_prefixes(workspace: str) -> tuple[str, ...]:
    """slopjudge's installed package and its metadata, relative to ``workspace`` when
    they lie inside it (an install, not a checkout: a checkout's files are authored)."""
    import glob

    from slopjudge.resources import DATA_DIR, PACKAGE_DIR

    if os.path.islink(os.path.join(DATA_DIR, "templates")):
        return ()  # a checkout (an editable install): its links lead to the sources
    ws = os.path.realpath(workspace)
    pkg = os.path.realpath(PACKAGE_DIR)
    if not pkg.startswith(ws + os.sep):
        return ()
    rel = os.path.relpath(pkg, ws).replace(os.sep, "/")
    parent = os.path.dirname(rel)
    meta = [f"{parent}/{n}/" if parent else f"{n}/" for n in
            sorted(glob.glob("slopjudge-*.dist-info", root_dir=os.path.dirname(pkg)))]
    return (rel + "/", *meta)


def minified(path: str, text: str | None) -> bool:
    """JavaScript or CSS whose lines average over 110 characters (linguist's test)."""
    if not text or not path.endswith(_BUNDLE_SUFFIXES):
        return False
    lines = text.count("\n") + 1
    return len(text) / lines > 110


# -- .gitattributes ----------------------------------------------------------------


def attribute_files(paths: Iterable[str]) -> list[str]:
    """The ``.gitattributes`` files that can apply to ``paths``: the top one and one in
    each folder holding a changed file, top first."""
    folders = {""} | {"/".join(parts[:i]) for parts in (p.split("/")[:-1] for p in paths)
                      for i in range(1, len(parts) + 1)}
    return [f"{d}/.gitattributes" if d else ".gitattributes"
            for d in sorted(folders, key=lambda d: (d.count("/") + bool(d), d))]


def marks(paths: Iterable[str], files: dict[str, str]) -> dict[str, str]:
    """``path -> reason`` for each path the attribute ``files`` (``name -> text``, top
    first) mark generated, vendored or ``-diff``; later lines and deeper files win."""
    rules = [(name[: -len(".gitattributes")].rstrip("/"), *parsed)
             for name, text in files.items() for line in text.splitlines()
             if (parsed := _attribute_line(line))]
    if not rules:
        return {}
    out: dict[str, str] = {}
    for path in paths:
        state: dict[str, bool] = {}
        for folder, pattern, attrs in rules:
            if folder and not path.startswith(folder + "/"):
                continue
            rel = path[len(folder) + 1:] if folder else path
            # gitignore's syntax, but a pattern naming a folder does not reach its files.
            if not pattern.endswith("/") and pathglob.match(pattern, rel, below=False):
                state.update(attrs)
        why = next((f"{a} in .gitattributes" for a in ATTRIBUTES if state.get(a)), None)
        if why is not None or state.get("diff") is False:
            out[path] = why or "-diff in .gitattributes"
    return out


def _attribute_line(line: str) -> tuple[str, dict[str, bool]] | None:
    words = line.split()
    if not words or words[0].startswith("#") or words[0].startswith("!"):
        return None
    attrs: dict[str, bool] = {}
    for word in words[1:]:
        if word == "binary":
            attrs["diff"] = False
        elif word.startswith("-"):
            attrs[word[1:]] = False
        elif word.startswith("!"):
            attrs.pop(word[1:], None)
        else:
            name, _, value = word.partition("=")
            attrs[name] = value.lower() not in ("false", "0", "no") if value else True
    wanted = {k: v for k, v in attrs.items() if k in (*ATTRIBUTES, "diff")}
    return (words[0], wanted) if wanted else None


def keep_judged(files: list[FileChange], policy: Policy | None,
                marks: dict[str, str] | None = None) -> list[FileChange]:
    """``files`` without those ``policy`` leaves out (each recorded on it)."""
    if policy is None or not policy.enabled:
        return files
    kept = []
    for f in files:
        why = policy.why(f.path, marks)
        if why is None and minified(f.path, f.new_content) and not policy.keeps(f.path) \
                and not policy.protected(f.path):
            why = MINIFIED
        if why is None:
            kept.append(f)
        else:
            policy.left_out.append(LeftOut(path=f.path, files=1, why=why))
    return kept


def disk_marks(top: str, paths: list[str]) -> dict[str, str]:
    """:func:`marks` from the ``.gitattributes`` files on disk (a diff file has no base)."""
    return marks(paths, {name: read_or(os.path.join(top, name), b"").decode("utf-8", "replace")
                         for name in attribute_files(paths)})


# -- .gitignore: the committed files only ---------------------------------------------


def committed_ignores(files: dict[str, bytes], extra: Iterable[str] = ()) -> bytes:
    """One top-level exclude list (``ls-files --exclude-from``) saying what the committed
    ``.gitignore`` files ``files`` (path -> content) say where they are, then ``extra``:
    a ``.gitignore`` the agent writes then hides nothing. Deeper files come later, so
    their patterns win, as in git."""
    out = [moved for path in sorted(files, key=lambda p: (p.count("/"), p))
           for line in files[path].split(b"\n")
           if (moved := _ignore_line(path[: -len(".gitignore")].rstrip("/"), line)) is not None]
    return b"".join(line + b"\n" for line in [*out, *(p.encode() for p in extra)])


def _ignore_line(folder: str, line: bytes) -> bytes | None:
    """One ``.gitignore`` line of ``folder`` as a top-level one (anchored at ``folder/``,
    at any depth below it without an inner slash); None for a blank line or a comment."""
    line = line[:-1] if line.endswith(b"\r") else line  # git drops the CR of CRLF
    if not line or line.startswith(b"#"):
        return None
    if not folder:
        return line
    body = _trim(line)
    negate = body.startswith(b"!")
    body = body[1:] if negate else body
    directory = body.endswith(b"/")
    body = body[:-1] if directory else body
    if not body:
        return None
    prefix = pathglob.escape(folder).encode("utf-8", "surrogateescape")
    if prefix[:1] in (b"#", b"!"):  # else read as a comment or a negation
        prefix = b"\\" + prefix
    moved = prefix + (b"/" + body.removeprefix(b"/") if b"/" in body else b"/**/" + body)
    return (b"!" if negate else b"") + moved + (b"/" if directory else b"")


def _trim(line: bytes) -> bytes:
    """``line`` without its trailing spaces, unless escaped (git's trim_trailing_spaces:
    a backslash escapes the next byte; a line ending in a lone one is kept whole)."""
    m = re.fullmatch(rb"((?:[^\\]|\\.)*?) *", line, re.S)
    return line if m is None else m.group(1)
