"""Every git command slopjudge runs to read a change; what the output means is
:mod:`.changeset`'s job."""

from __future__ import annotations

import os
import re
import threading
from functools import cache

from slopjudge.changes.diffparse import decode
from slopjudge.errors import ChangesetError
from slopjudge.fsutil import inside, which
from slopjudge.model import Commit

TYPE_CHECKING = False  # not typing's: a CI run of a docs-only commit never imports it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from slopjudge.changes.authored import Policy

# On every git call: names unquoted, no colour, nothing the repository's configuration
# names runs, and no file is hidden by what only this clone says (the agent can write
# .git/config and .git/info). External diff and textconv are off where a diff runs (DIFF),
# filter drivers where files are hashed (no_filters).
_OPTIONS = (
    "-c", "core.quotepath=false", "-c", "color.ui=false",
    "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
    "-c", "core.untrackedCache=false", "-c", "core.excludesFile=/dev/null",
    "-c", "diff.external=", "-c", "core.splitIndex=false",
)
_UNLIMITED = 1 << 62  # git output must never be cut short silently
_GIT_TIMEOUT_S = 600.0


def git(workspace: str, args: list[str], *, env: dict[str, str] | None = None,
         input: bytes = b"", ok: tuple[int, ...] = (0,)) -> bytes:
    from slopjudge.procs import run

    program = _program(env)
    if program is None:  # never the bare name: exec would search PATH's relative folders too
        raise ChangesetError("cannot run git: git: not found in PATH's absolute folders")
    res = run([program, *_OPTIONS, *args], input=input, cwd=workspace, env=env,
              timeout=_GIT_TIMEOUT_S, max_output=_UNLIMITED,
              registry=getattr(_BACKGROUND, "registry", None))
    if res.start_error:
        raise ChangesetError(f"cannot run git: {res.start_error}")
    if res.timed_out:
        raise ChangesetError(f"git {args[0]} timed out after {int(_GIT_TIMEOUT_S)} s")
    if res.returncode not in ok:
        msg = _first_line(res.stderr) or f"git {args[0]} exited with {res.returncode}"
        raise ChangesetError(msg)
    return res.stdout


_PROGRAMS: dict[str, str | None] = {}  # PATH -> the git on it


def _program(env: dict[str, str] | None) -> str | None:
    """The git in PATH's absolute folders (:func:`fsutil.which`), looked up once per PATH:
    the agent could put a ``git`` that reports no change in the judged repository."""
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    if path not in _PROGRAMS:
        _PROGRAMS[path] = which("git", path)
    return _PROGRAMS[path]


def _first_line(err: bytes) -> str:
    lines = (ln.strip() for ln in decode(err).splitlines())
    first = next((ln for ln in lines if ln and not ln.startswith(("hint:", "warning:"))), "")
    return first.removeprefix("fatal: ").removeprefix("error: ")


_TOPLEVELS: dict[str, str] = {}


def toplevel(workspace: str) -> str:
    """The work tree holding ``workspace``; asked of git once per process (a Stop
    asks for it several times)."""
    if workspace in _TOPLEVELS:
        return _TOPLEVELS[workspace]
    if not os.path.isdir(workspace):
        raise ChangesetError(f"not a directory: {workspace}")
    try:
        out = git(workspace, ["rev-parse", "--show-toplevel"])
    except ChangesetError as exc:
        if "not a git repository" in str(exc).lower():
            raise ChangesetError(f"not a git repository: {workspace}") from None
        raise
    top = decode(out).split("\n")[0].strip()
    if not top:  # inside .git or a bare repository
        raise ChangesetError(f"not a git work tree: {workspace}")
    if not inside(workspace, top):
        # core.worktree naming another folder: git would read that folder's files.
        raise ChangesetError(f"git's work tree for {workspace} is {top}, a folder outside "
                             "it (core.worktree in the repository's configuration?)")
    _TOPLEVELS[workspace] = top
    return top


def plain_rev(rev: str) -> bool:
    """A revision that reads one way only, alone or as a side of ``A...B``."""
    return bool(rev) and not rev.startswith(("-", "^")) and not any(
        bad in rev for bad in ("..", ":", "\n", " ", "\t", "\r"))


def rev_parse(workspace: str, revs: list[str], *plain: str) -> list[str] | None:
    """``git rev-parse revs``'s lines (``revs`` made of the revisions ``plain``), asked in
    the same git call as the work tree's top: one call where a change's source would make
    two to four. None when a revision is not plain or git does not answer plainly: the
    caller then asks step by step, for git's own complaint."""
    if not all(map(plain_rev, plain)) or not os.path.isdir(workspace):
        return None
    try:
        out = git(workspace, ["rev-parse", "--show-toplevel", *revs])
    except ChangesetError:
        return None
    answer = decode(out).split("\n")
    top = answer[0].strip()
    # A top outside the workspace: asked again step by step, for toplevel's complaint.
    if len(answer) < 2 + len(revs) or answer[-1] != "" or not top or not inside(workspace, top):
        return None
    _TOPLEVELS[workspace] = top
    return [line.strip() for line in answer[1:-1]]


def resolve(workspace: str, rev: str, kind: str = "commit") -> str:
    """Full object id of ``rev`` peeled to ``kind``; ChangesetError if unknown."""
    if not rev or rev.startswith("-") or "\n" in rev:
        raise ChangesetError(f"unknown revision: {rev!r}")
    try:
        sha = decode(git(workspace, ["rev-parse", "--verify", "--quiet", f"{rev}^{{{kind}}}"]))
    except ChangesetError:
        sha = ""
    if not sha.strip():
        raise ChangesetError(f"unknown revision: {rev}")
    return sha.strip()


def head_tree(workspace: str, rev: str) -> str:
    """The tree of ``rev``; the empty tree when ``rev`` is HEAD of an unborn branch."""
    try:
        return resolve(workspace, rev, "tree")
    except ChangesetError:
        if rev == "HEAD":
            return decode(git(workspace, ["hash-object", "-t", "tree", "--stdin"])).strip()
        raise


DIFF = [  # the one diff a change is read from: raw records, then the patch
    "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false", "-c", "diff.relative=false",
    "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--submodule=short",
    "--src-prefix=a/", "--dst-prefix=b/", "-M", "--raw", "-p", "-z", "--no-abbrev",
]


def cat_blobs(workspace: str, asks: list[str]) -> dict[str, bytes]:
    """The blobs ``asks`` names (blob ids, ``rev:path``) that git has, by name, from one
    ``git cat-file --batch``."""
    # A name holding a line break would be two asks of the batch and put every later answer
    # under the wrong name (git drops a CR before one): such a name's blob id is found by
    # its path in the tree (never read as revision syntax), and that id asked for.
    odd = [a for a in asks if "\n" in a or "\r" in a]
    ids = dict(_tree_blob_ids(workspace, odd), **{a: a for a in asks if a not in odd})
    batch = list(dict.fromkeys(ids.values()))
    if not batch:
        return {}
    out = git(workspace, ["cat-file", "--batch"], input="".join(i + "\n" for i in batch).encode())
    found: dict[str, bytes] = {}
    p = 0
    for ask in batch:  # one answer per line asked, in order
        nl = out.index(b"\n", p)
        line = out[p:nl]
        p = nl + 1
        if line.endswith((b" missing", b" ambiguous")):  # the name asked, which may hold spaces
            continue
        _sha, kind, size = line.split(b" ")
        if kind == b"blob":
            found[ask] = out[p : p + int(size)]
        p += int(size) + 1
    return {a: found[i] for a, i in ids.items() if i in found}


def _tree_blob_ids(workspace: str, names: list[str]) -> dict[str, str]:
    """The blob ids of ``rev:path`` names, read from ``git ls-tree -z`` (one call a rev;
    its paths taken literally, no pathspec magic); a name naming no blob is left out."""
    by_rev: dict[str, list[str]] = {}
    for name in names:
        rev, colon, path = name.partition(":")
        if colon and rev and not rev.startswith("-"):
            by_rev.setdefault(rev, []).append(path)
    # The user's other pathspec settings would make git refuse the literal one.
    literal = dict({k: v for k, v in os.environ.items() if not k.endswith("_PATHSPECS")},
                   GIT_LITERAL_PATHSPECS="1")
    ids: dict[str, str] = {}
    for rev, paths in by_rev.items():
        listing = git(workspace, ["ls-tree", "-z", "--full-tree", rev, "--", *paths],
                      env=literal, ok=(0, 128))
        for entry in listing.split(b"\0"):
            meta, _, listed = entry.partition(b"\t")
            mode_kind_id = meta.decode().split(" ")
            if mode_kind_id[1:2] == ["blob"]:
                ids[f"{rev}:{listed.decode('utf-8', 'surrogateescape')}"] = mode_kind_id[2]
    return {n: ids[n] for n in names if n in ids}


def commits(workspace: str, rev_range: str) -> list[Commit]:
    """The commits of ``rev_range``, oldest first."""
    log = git(workspace, [
        "-c", "log.showSignature=false", "log", "-z", "--reverse", "--no-color",
        "--format=%H%n%s%n%b", rev_range, "--",
    ])
    recs = [(decode(rec) + "\n\n").split("\n", 2) for rec in log.split(b"\0") if rec.strip()]
    return [Commit(sha=sha.strip(), subject=subject, body=body.rstrip("\n"))
            for sha, subject, body in recs]


def snapshot_worktree(workspace: str, leave_out: Policy | None = None, *,
                      submodules: bool = False) -> str:
    """A tree id for the work tree now, through a temporary index: tracked and untracked
    files less what ``.gitignore`` and ``leave_out`` (:mod:`.authored`) leave out. Every
    file is hashed afresh (the real index's stat data could vouch for content the file no
    longer has), filter drivers off. ``submodules``: a checked-out submodule's files are
    recorded as files (the hooks compare two such snapshots), not as its commit pointer."""
    top = toplevel(workspace)
    import tempfile  # here: a PreToolUse hook never snapshots (it imports bz2, lzma, random)

    with tempfile.TemporaryDirectory(prefix="slopjudge-index-",
                                     ignore_cleanup_errors=True) as tmp:
        # One listing of the real index (entries, flags) and of untracked files.
        listing = git(top, ["ls-files", "-c", "-o", "-v", "-s", "-z",
                            _ignores(top, leave_out, tmp)])
        keep, paths, nested = _split_listing(top, listing, submodules, leave_out)
        env = dict(os.environ, GIT_INDEX_FILE=os.path.join(tmp, "index"))
        if keep:  # entries whose file is not there to hash: sparse, unchecked-out submodules
            git(top, ["update-index", "-z", "--index-info"], env=env, input=b"".join(keep))
        if paths:
            git(top, [*no_filters(top), "-c", "core.safecrlf=false", "update-index", "--add",
                      "--remove", "-z", "--stdin"], env=env, input=b"\0".join(paths) + b"\0")
        _add_nested_files(top, env, nested)
        return decode(git(top, ["write-tree"], env=env)).strip()


# Only the project's own .gitignore files say what is not the project's.
_OWN_IGNORES = "--exclude-per-directory=.gitignore"


def _ignores(top: str, leave_out: Policy | None, tmp: str) -> str:
    """The ``ls-files`` option saying what is ignored: the work tree's ``.gitignore``
    files, or those committed in ``leave_out.ignores_from``, as one list in ``tmp``."""
    if leave_out is None or not leave_out.ignores_from:
        return _OWN_IGNORES
    rev = leave_out.ignores_from
    from slopjudge.changes.authored import committed_ignores

    # A baseline is a tree id already: only HEAD (perhaps unborn) is asked of git first.
    tree = rev if len(rev) in (40, 64) and all(c in "0123456789abcdef" for c in rev) \
        else head_tree(top, rev)
    listing = git(top, ["ls-tree", "-r", "-z", "--full-tree", tree])
    entries = (entry.partition(b"\t") for entry in listing.split(b"\0"))
    found = {decode(name): decode(meta[12:]) for meta, _, name in entries
             if name.rpartition(b"/")[2] == b".gitignore"
             and meta.startswith((b"100644 blob ", b"100755 blob "))}
    blobs = cat_blobs(top, sorted(set(found.values())))
    path = os.path.join(tmp, "exclude")
    with open(path, "wb") as fh:
        fh.write(committed_ignores({p: blobs.get(sha, b"") for p, sha in found.items()},
                                   leave_out.own_ignores))
    return f"--exclude-from={path}"


def _split_listing(top: str, listing: bytes, submodules: bool, leave_out: Policy | None
                   ) -> tuple[list[bytes], list[bytes], list[str]]:
    """From ``ls-files -c -o -v -s`` output: index entries to keep as they are, paths to
    hash from disk, and folders holding a repository of their own, whose files are added
    one by one: git would record such a folder as a commit pointer (or fail without a
    commit), and an agent could put its change there unseen. Less the untracked
    dependency folders ``leave_out`` leaves out."""
    # Asked of git at the first skip-worktree entry whose file is absent.
    sparse = cache(lambda: git(top, ["config", "--bool", "core.sparseCheckout"],
                               ok=(0, 1)).strip() == b"true")
    keep: list[bytes] = []
    paths: list[bytes] = []
    nested: list[str] = []
    untracked: list[str] = []
    seen: set[bytes] = set()
    for entry in filter(None, listing.split(b"\0")):
        if entry.startswith(b"? "):
            untracked.append(decode(entry[2:]))
            if entry.endswith(b"/"):
                nested.append(untracked[-1].rstrip("/"))
            else:
                paths.append(entry[2:])
            continue
        meta, _, name = entry.partition(b"\t")
        tag, mode = meta.split(b" ")[:2]
        if name in seen:  # an unmerged file: one line per stage, hashed once
            continue
        seen.add(name)
        full = os.path.join(top, decode(name))
        if mode == b"160000" and submodules and os.path.lexists(os.path.join(full, ".git")):
            nested.append(decode(name))
        elif mode == b"160000":
            keep.append(entry[2:] + b"\0")  # less ls-files' tag
            paths.append(name)
        elif tag.upper() == b"S" and not os.path.lexists(full) and sparse():
            keep.append(entry[2:] + b"\0")  # outside a sparse checkout's cone: absent, not deleted
        elif not os.path.isdir(full) or os.path.islink(full):  # a file that became a folder:
            paths.append(name)  # its files are listed as untracked
    skip = tuple(f"{d}/" for d in leave_out.dependency_folders(
        [decode(n) for n in seen], untracked)) if leave_out is not None else ()
    if skip:
        paths = [p for p in paths if not decode(p).startswith(skip)]
        nested = [n for n in nested if not f"{n}/".startswith(skip)]
    return keep, paths, nested


@cache
def no_filters(top: str) -> list[str]:
    """``-c`` options that switch off every filter driver the repository names (a clean
    filter is a program of the agent's choosing; git records what it prints)."""
    out = git(top, ["config", "-z", "--name-only", "--get-regexp", r"^filter\."], ok=(0, 1))
    drivers = sorted({decode(n)[len("filter."):].rpartition(".")[0]
                      for n in out.split(b"\0") if n})
    return [opt for d in drivers for key, value in (
        ("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
        for opt in ("-c", f"filter.{d}.{key}={value}")]


def ignored_paths(workspace: str, trees: list[str]) -> list[str]:
    """Files under ``trees`` (workspace-relative folders) that git ignores, each listed."""
    toplevel(workspace)  # a clear error outside a repository
    out = git(workspace, ["ls-files", "-o", "-i", "--exclude-standard", "-z", "--",
                     *(f":(literal){t}" for t in trees)])
    return sorted(decode(n) for n in out.split(b"\0") if n)


def _add_nested_files(top: str, env: dict[str, str], nested: list[str]) -> None:
    """Add the files of each nested repository (or submodule) as plain files of this one,
    hashed as they are on disk: this project's ``.gitattributes`` (line ends, encodings)
    are not theirs."""
    entries: list[str] = []
    files: list[tuple[str, str]] = []
    for path in (path for folder in nested for path in _nested_listing(top, folder)):
        full = os.path.join(top, path)
        if os.path.islink(full):
            sha = decode(git(top, ["hash-object", "-w", "--no-filters", "--stdin"], env=env,
                             input=os.fsencode(os.readlink(full)))).strip()
            entries.append(f"120000 {sha}\t{path}\0")
        elif os.path.isfile(full):  # else listed but gone (deleted, tracked in the nested repo)
            files.append(("100755" if os.access(full, os.X_OK) else "100644", path))
    if files:
        from slopjudge.changes.proposed import _quote

        # --stdin-paths reads lines (a CR before the LF dropped) and C-unquotes a line that
        # starts with a quote: a name with a control character, a quote or a backslash is
        # quoted, any other is as git would write it already.
        out = git(top, ["hash-object", "-w", "--no-filters", "--stdin-paths"], env=env,
                  input="".join(_quote(p) + "\n" for _, p in files).encode())
        entries += [f"{mode} {sha}\t{path}\0"
                    for (mode, path), sha in zip(files, decode(out).split(), strict=True)]
    if entries:
        git(top, ["update-index", "--add", "-z", "--index-info"], env=env,
            input="".join(entries).encode())


def _nested_listing(top: str, folder: str) -> list[str]:
    """The files of the repository at ``folder``, nested ones included, its own
    ``.gitignore`` files respected."""
    where = os.path.join(top, folder)
    # Its own git, told its work tree (its config could name another), not this index.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_DIR=os.path.join(where, ".git"), GIT_WORK_TREE=where)
    listing = git(where, ["ls-files", "-co", _OWN_IGNORES, "-z"], env=env)
    out: list[str] = []
    for name in (decode(n) for n in listing.split(b"\0") if n):
        full = os.path.join(where, name)
        if name.endswith("/") or os.path.lexists(os.path.join(full, ".git")):
            out.extend(_nested_listing(top, f"{folder}/{name.rstrip('/')}"))
        elif os.path.islink(full) or not os.path.isdir(full):  # else: an unchecked-out
            out.append(f"{folder}/{name}")  # submodule, or a file that became a folder
    return out


# What in a git folder decides what git runs or hides: written by the agent, it acts at
# the person's next git command (a hook) or on slopjudge's view of the files.
_INTERNAL_FILES = ("config", "config.worktree")
_INTERNAL_TREES = ("hooks", "info")
# What ordinary work writes into a git folder's config and no git command runs: branch
# tracking (`git push -u`, `git checkout --track`) and where a remote is, as a key of
# ``git config --list`` (section.subsection.variable). A change to these is not a
# protected change, so pushing a branch does not block every later Stop.
_BENIGN = re.compile(rb"branch\..*\.(remote|merge|rebase|pushremote|description)"
                     rb"|remote\..*\.(url|pushurl|fetch|push|tagopt|prune)", re.I | re.S)


def internals(workspace: str) -> dict[str, str]:
    """A digest of each file among the git folders' configuration, hooks and info
    (submodules' and linked work trees' too), by path (relative inside the work tree)."""
    top = toplevel(workspace)
    out = decode(git(workspace, ["rev-parse", "--absolute-git-dir", "--git-common-dir"]))
    found: dict[str, str] = {}
    for folder in sorted({os.path.realpath(os.path.join(workspace, p))
                          for p in out.splitlines()[:2]}):  # its own and the common one
        _digest_internals(folder, found)
        for sub in ("modules", "worktrees"):
            for dirpath, dirnames, _ in os.walk(os.path.join(folder, sub)):
                if "HEAD" in os.listdir(dirpath):  # a git folder of its own
                    _digest_internals(dirpath, found)
                dirnames[:] = [d for d in sorted(dirnames) if d not in (
                    "objects", "refs", "logs", *_INTERNAL_TREES)]
    real_top = os.path.realpath(top)
    return {(os.path.relpath(p, real_top) if p.startswith(real_top + os.sep) else p): d
            for p, d in sorted(found.items())}


def _digest_internals(gitdir: str, found: dict[str, str]) -> None:
    import hashlib

    names = [os.path.join(gitdir, n) for n in _INTERNAL_FILES]
    for tree in _INTERNAL_TREES:
        for dirpath, dirnames, filenames in os.walk(os.path.join(gitdir, tree)):
            dirnames.sort()
            names += [os.path.join(dirpath, n) for n in filenames]
    for path in names:
        if os.path.islink(path):
            data = b"link\0" + os.fsencode(os.readlink(path))
        elif os.path.isfile(path):
            with open(path, "rb") as fh:
                data = (b"x\0" if os.access(path, os.X_OK) else b"f\0") + fh.read()
            if os.path.basename(path) in _INTERNAL_FILES and os.path.dirname(path) == gitdir:
                data = _config_digest_input(path, data)
        else:
            continue
        found[path] = hashlib.sha256(data).hexdigest()


def _config_digest_input(path: str, raw: bytes) -> bytes:
    """A config file's entries less the benign ones (an include line is an entry like
    any other); the raw bytes when git cannot read the file."""
    try:
        listing = git(os.path.dirname(path), ["config", "--file", path, "--no-includes",
                                              "--list", "-z"])
    except ChangesetError:
        return raw
    kept = sorted(e for e in listing.split(b"\0")
                  if e and not _BENIGN.fullmatch(e.split(b"\n", 1)[0]))
    return b"config\0" + b"\0".join(kept)


_BACKGROUND = threading.local()  # in a Background's thread: the registry of its git calls


class Background:
    """A git read run in a thread while this one runs another, so the two calls overlap
    (a Stop or a CI run pays for each git call in a row); interrupted while waiting for
    it, the git it runs is killed, as it would be in this thread."""

    def __init__(self, fn: Callable[..., Any], *args: Any) -> None:
        from slopjudge.procs import Registry

        self._value: Any = None
        self._error: BaseException | None = None
        self._registry = Registry()
        # An event, not Thread.join: a join cut short by a signal leaves the thread
        # marked as ended while it runs on (CPython 3.11).
        self._done = threading.Event()
        threading.Thread(target=self._run, args=(fn, args), daemon=True).start()

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        _BACKGROUND.registry = self._registry
        try:
            self._value = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
            self._error = exc
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Until it is done (its git process too); False when ``timeout`` passed first."""
        try:
            return self._done.wait(timeout)
        except BaseException:
            import signal

            self._registry.signal_all(signal.SIGKILL)
            raise

    def result(self) -> Any:
        self.wait()
        if self._error is not None:
            raise self._error
        return self._value
