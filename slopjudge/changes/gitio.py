"""git I/O for changesets: every git command slopjudge runs to read a change.

One ``git diff --raw --numstat -p -z`` per change (:func:`diff`), blob contents
from a single ``git cat-file --batch`` (:func:`cat_blobs`), commit lists, and
the work tree read through a tree snapshot written with a temporary index, so
the real index is never touched (:func:`snapshot_worktree`). What the output
means is :mod:`slopjudge.changes.gitraw`'s job; which sources exist,
:mod:`slopjudge.changes.changeset`'s.
"""

from __future__ import annotations

import os
import threading

from slopjudge.changes.diffparse import decode
from slopjudge.errors import ChangesetError
from slopjudge.model import Commit

TYPE_CHECKING = False  # not typing's: a CI run of a docs-only commit never imports it
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Generic, TypeVar

    from slopjudge.changes.authored import Policy

    T = TypeVar("T")

    class _Generic(Generic[T]):
        """typing's Generic, for mypy only."""
else:
    T = object

    class _Generic:
        """Background[...] at run time: the class itself."""

        def __class_getitem__(cls, item: object) -> type:
            return cls

_UNLIMITED = 1 << 62  # git output must never be cut short silently
_GIT_TIMEOUT_S = 600.0


def git(workspace: str, args: list[str], *, env: dict[str, str] | None = None,
         input: bytes = b"", ok: tuple[int, ...] = (0,)) -> bytes:
    from slopjudge.procs import run

    argv = [_program(env), "-c", "core.quotepath=false", "-c", "color.ui=false", *args]
    res = run(argv, input=input, cwd=workspace, env=env, timeout=_GIT_TIMEOUT_S,
              max_output=_UNLIMITED, registry=getattr(_BACKGROUND, "registry", None))
    if res.start_error:
        raise ChangesetError(f"cannot run git: {res.start_error}")
    if res.timed_out:
        raise ChangesetError(f"git {args[0]} timed out after {int(_GIT_TIMEOUT_S)} s")
    if res.returncode not in ok:
        msg = _first_line(res.stderr) or f"git {args[0]} exited with {res.returncode}"
        raise ChangesetError(msg)
    return res.stdout


_PROGRAMS: dict[str, str] = {}  # PATH -> the git on it


def _program(env: dict[str, str] | None) -> str:
    """The git on the PATH git is started with, found once per PATH: not again by the
    shell that starts each call and the checks before it (whose ``shutil`` costs a
    CI run more than its git calls). Only absolute folders count: a relative one (``.``,
    an empty entry) names the folder a hook runs in, the judged repository, where the
    agent could put a ``git`` of its own that reports no change. Plain "git" where no
    absolute folder has one (or there is no PATH): the starter looks, as it always did."""
    path = (os.environ if env is None else env).get("PATH")
    if not path:
        return "git"
    found = _PROGRAMS.get(path)
    if found is None:
        found = "git"
        for folder in path.split(os.pathsep):
            if not os.path.isabs(folder):
                continue
            candidate = os.path.join(folder, "git")
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                found = candidate
                break
        _PROGRAMS[path] = found
    return found


def _first_line(err: bytes) -> str:
    for ln in decode(err).splitlines():
        ln = ln.strip()
        if ln and not ln.startswith(("hint:", "warning:")):
            return ln.removeprefix("fatal: ").removeprefix("error: ")
    return ""


_TOPLEVELS: dict[str, tuple[str, str]] = {}


def toplevel(workspace: str) -> str:
    """The work tree holding ``workspace``; asked of git once per process (a Stop
    asks for it several times, a git call each)."""
    return _ask_toplevel(workspace)[0]


def _ask_toplevel(workspace: str) -> tuple[str, str]:
    """The work tree holding ``workspace`` and its index file, from one git call."""
    known = _TOPLEVELS.get(workspace)
    if known is not None:
        return known
    if not os.path.isdir(workspace):
        raise ChangesetError(f"not a directory: {workspace}")
    try:
        out = git(workspace, ["rev-parse", "--show-toplevel", "--git-path", "index"])
    except ChangesetError as exc:
        if "not a git repository" in str(exc).lower():
            raise ChangesetError(f"not a git repository: {workspace}") from None
        raise
    answer = decode(out).split("\n")
    top = answer[0].strip() if len(answer) >= 3 else ""  # "<top>\n<index>\n"
    if not top:  # inside .git or a bare repository
        raise ChangesetError(f"not a git work tree: {workspace}")
    return _remember_toplevel(workspace, top, answer[1].rstrip("\r"))


def _remember_toplevel(workspace: str, top: str, index: str) -> tuple[str, str]:
    index = index if os.path.isabs(index) else os.path.join(workspace, index)
    _TOPLEVELS[workspace] = (top, index)
    return top, index


def plain_rev(rev: str) -> bool:
    """A revision that reads one way only, alone or as a side of ``A...B`` (no range,
    no path, no option): one :func:`rev_parse` may ask about it."""
    return bool(rev) and not rev.startswith(("-", "^")) and not any(
        bad in rev for bad in ("..", ":", "\n", " ", "\t", "\r"))


def rev_parse(workspace: str, revs: list[str]) -> list[str] | None:
    """``git rev-parse revs``'s lines, asked in the same git call as the work tree's
    top (which :func:`toplevel` then knows): one call where a change's source would
    make two to four.

    None when git does not answer plainly (a revision it does not know, a range, no
    repository): the caller then asks step by step, and git's complaint reads as
    it always did."""
    if not revs or any(r.startswith("-") or "\n" in r for r in revs) \
            or not os.path.isdir(workspace):
        return None
    try:
        out = git(workspace, ["rev-parse", "--show-toplevel", "--git-path", "index", *revs])
    except ChangesetError:
        return None
    answer = decode(out).split("\n")
    if len(answer) < 3 + len(revs) or answer[-1] != "" or not answer[0].strip():
        return None
    _remember_toplevel(workspace, answer[0].strip(), answer[1].rstrip("\r"))
    return [line.strip() for line in answer[2:-1]]


def resolve(workspace: str, rev: str, kind: str = "commit") -> str:
    """Full object id of ``rev`` peeled to ``kind``; ChangesetError if unknown."""
    if not rev or rev.startswith("-") or "\n" in rev:
        raise ChangesetError(f"unknown revision: {rev!r}")
    try:
        out = git(workspace, ["rev-parse", "--verify", "--quiet", f"{rev}^{{{kind}}}"])
    except ChangesetError:
        raise ChangesetError(f"unknown revision: {rev}") from None
    sha = decode(out).strip()
    if not sha:
        raise ChangesetError(f"unknown revision: {rev}")
    return sha


def empty_tree(workspace: str) -> str:
    return decode(git(workspace, ["hash-object", "-t", "tree", "--stdin"])).strip()


def head_tree(workspace: str, rev: str) -> str:
    """The tree of ``rev``; the empty tree when ``rev`` is HEAD of an unborn branch."""
    try:
        return resolve(workspace, rev, "tree")
    except ChangesetError:
        if rev == "HEAD":
            return empty_tree(workspace)
        raise



_DIFF_ARGS = [
    "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false", "-c", "diff.relative=false",
    "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--submodule=short",
    "--src-prefix=a/", "--dst-prefix=b/", "-M", "--raw", "--numstat", "-p", "-z", "--no-abbrev",
]



def diff(workspace: str, diff_args: list[str]) -> bytes:
    """``git diff --raw --numstat -p -z`` output for ``diff_args`` (see :mod:`.gitraw`)."""
    return git(workspace, [*_DIFF_ARGS, *diff_args])


def cat_blobs(workspace: str, shas: list[str]) -> dict[str, bytes]:
    """Blob contents for ``shas`` in one ``git cat-file --batch``."""
    if not shas:
        return {}
    out = git(workspace, ["cat-file", "--batch"], input="".join(s + "\n" for s in shas).encode())
    blobs: dict[str, bytes] = {}
    p, n = 0, len(out)
    while p < n:
        nl = out.index(b"\n", p)
        head = out[p:nl].split(b" ")
        p = nl + 1
        if len(head) != 3:  # "<sha> missing"
            continue
        size = int(head[2])
        blobs[head[0].decode("ascii")] = out[p : p + size]
        p += size + 1
    return blobs



def cat_paths(workspace: str, rev: str, names: list[str]) -> dict[str, bytes]:
    """The contents of ``names`` (blobs) in the tree-ish ``rev``, those it has, from one
    ``git cat-file --batch``."""
    if not names:
        return {}
    out = git(workspace, ["cat-file", "--batch"],
              input="".join(f"{rev}:{n}\n" for n in names).encode())
    found: dict[str, bytes] = {}
    p = 0
    for name in names:  # one answer per line asked, in order
        nl = out.index(b"\n", p)
        line = out[p:nl]
        p = nl + 1
        if line.endswith((b" missing", b" ambiguous")):
            continue
        _sha, kind, size = line.split(b" ")
        if kind == b"blob":
            found[name] = out[p : p + int(size)]
        p += int(size) + 1
    return found


def commits(workspace: str, rev_range: str) -> list[Commit]:
    """The commits of ``rev_range``, oldest first."""
    log = git(workspace, [
        "-c", "log.showSignature=false", "log", "-z", "--reverse", "--no-color",
        "--format=%H%n%s%n%b", rev_range, "--",
    ])
    commits: list[Commit] = []
    for rec in log.split(b"\0"):
        if not rec.strip():
            continue
        sha, _, rest = decode(rec).partition("\n")
        subject, _, body = rest.partition("\n")
        commits.append(Commit(sha=sha.strip(), subject=subject, body=body.rstrip("\n")))
    return commits


def snapshot_worktree(workspace: str, leave_out: Policy | None = None) -> str:
    """A tree id for the work tree as it is now: tracked and untracked files,
    ignored ones left out, and the untracked dependency folders ``leave_out`` finds
    (:mod:`.authored`). Written through a temporary copy of the index
    (``GIT_INDEX_FILE``), so the real index and the files are not touched; the
    blobs and trees it writes are ordinary unreferenced objects."""
    top, real_index = _ask_toplevel(workspace)
    import shutil  # here, not at the top: a PreToolUse hook never snapshots (bz2, lzma, random)
    import tempfile

    tmp = tempfile.mkdtemp(prefix="slopjudge-index-")
    try:
        index = os.path.join(tmp, "index")
        if os.path.exists(real_index):
            # Starting from the real index lets git reuse its stat data. Keep its
            # mtime too: git trusts an entry's stat data only when the entry is
            # older than the index, so a fresh mtime would hide an edit made in
            # the same second as the last commit.
            shutil.copy2(real_index, index)
        env = dict(os.environ, GIT_INDEX_FILE=index)
        # One listing for both: index entries with their flags, and untracked files.
        listing = git(top, ["ls-files", "-c", "-o", "-v", "--exclude-standard", "-z"], env=env)
        _unhide(top, env, listing)
        nested = _nested_repos(listing)
        skipped = _dependency_folders(listing, leave_out) if leave_out else []
        git(top, ["-c", "advice.addEmbeddedRepo=false", "-c", "core.safecrlf=false",
                   "add", "-A", "--", ".",
                   *(f":(exclude,literal){n}" for n in [*nested, *skipped])],
             env=env)
        _add_nested_files(top, env, nested)
        return decode(git(top, ["write-tree"], env=env)).strip()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _dependency_folders(listing: bytes, leave_out: Policy) -> list[str]:
    """The untracked dependency folders ``leave_out`` leaves out of the snapshot."""
    tracked: list[str] = []
    untracked: list[str] = []
    for entry in listing.split(b"\0"):
        tag, _, name = entry.partition(b" ")
        if name:
            (untracked if tag == b"?" else tracked).append(decode(name))
    return leave_out.dependency_folders(tracked, untracked)


def ignored_paths(workspace: str, trees: list[str]) -> list[str]:
    """Files under ``trees`` (workspace-relative folders) that git ignores, every one
    listed (no folder collapsed)."""
    toplevel(workspace)  # a clear error outside a repository
    out = git(workspace, ["ls-files", "-o", "-i", "--exclude-standard", "-z", "--",
                     *(f":(literal){t}" for t in trees)])
    return sorted(decode(n) for n in out.split(b"\0") if n)


def _nested_repos(listing: bytes) -> list[str]:
    """Untracked folders that hold a repository of their own (``git init sub``), from
    ``ls-files -c -o -v`` (untracked entries tagged ``?``; git lists such a folder,
    not its files, with a trailing slash).

    ``git add`` would record such a folder as a bare commit pointer, hiding the
    files in it, or fail outright when it has no commit: either would let an
    agent put its change where the Stop hook cannot see it."""
    return [decode(n[2:]).rstrip("/") for n in listing.split(b"\0")
            if n.startswith(b"? ") and n.endswith(b"/")]


def _add_nested_files(top: str, env: dict[str, str], nested: list[str]) -> None:
    """Add the files of each nested repository as plain files of this one."""
    # The nested repository's own git must not see this snapshot's index.
    own_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    entries: list[bytes] = []
    for folder in nested:
        listing = git(os.path.join(top, folder),
                       ["ls-files", "-co", "--exclude-standard", "-z"], env=own_env)
        names = [decode(n) for n in listing.split(b"\0") if n]
        deeper = [n.rstrip("/") for n in names if n.endswith("/")]
        for rel in [n for n in names if not n.endswith("/")]:
            path = f"{folder}/{rel}"
            full = os.path.join(top, path)
            if os.path.islink(full):
                mode, data = "120000", os.fsencode(os.readlink(full))
            elif os.path.isfile(full):
                mode = "100755" if os.access(full, os.X_OK) else "100644"
                with open(full, "rb") as fh:
                    data = fh.read()
            else:
                continue  # listed but gone (a deleted tracked file of the nested repo)
            sha = decode(git(top, ["hash-object", "-w", "--stdin"], env=env, input=data))
            entries.append(f"{mode} {sha.strip()}\t{path}".encode() + b"\0")
        if deeper:
            _add_nested_files(top, env, [f"{folder}/{d}" for d in deeper])
    if entries:
        git(top, ["update-index", "--add", "-z", "--index-info"], env=env,
             input=b"".join(entries))


def _unhide(top: str, env: dict[str, str], listing: bytes) -> None:
    """Clear ``assume-unchanged`` and ``skip-worktree`` in the copied index, so
    ``git add`` looks at those files: either flag would hide an edit (to a rule
    file, say) from the snapshot. A skip-worktree file absent from disk (a
    sparse checkout, ``core.sparseCheckout``) keeps its flag: it is not deleted."""
    sparse: bool | None = None  # asked of git at the first skip-worktree entry
    flagged: dict[str, list[bytes]] = {"--no-assume-unchanged": [], "--no-skip-worktree": []}
    for entry in listing.split(b"\0"):
        tag, _, name = entry.partition(b" ")
        if not name or tag == b"?":
            continue
        if tag.islower():
            flagged["--no-assume-unchanged"].append(name)
        if tag.upper() == b"S":
            if sparse is None:
                sparse = git(top, ["config", "--bool", "core.sparseCheckout"], env=env,
                             ok=(0, 1)).strip() == b"true"
            if not (sparse and not os.path.lexists(os.path.join(top, decode(name)))):
                flagged["--no-skip-worktree"].append(name)
    # One flag per call: given both, git applies only one of them.
    for flag, paths in flagged.items():
        if paths:
            git(top, ["update-index", flag, "-z", "--stdin"], env=env,
                 input=b"\0".join(paths) + b"\0")


_BACKGROUND = threading.local()  # in a Background's thread: the registry of its git calls


class Background(_Generic[T]):
    """A git read run in a thread while this one runs another, so the two calls'
    start-up and wait overlap (a Stop or a CI run pays for each git call in a row).

    Interrupted while waiting for it (Ctrl-C, SIGTERM), the git it runs is killed, as
    it would be were it read in this thread."""

    def __init__(self, fn: Callable[..., T], *args: Any) -> None:
        from slopjudge.procs import Registry

        self._value: T | None = None
        self._error: BaseException | None = None
        self._registry = Registry()
        # An event, not Thread.join: a join cut short by a signal leaves the thread
        # marked as ended while it runs on (CPython 3.11).
        self._done = threading.Event()
        threading.Thread(target=self._run, args=(fn, args), daemon=True).start()

    def _run(self, fn: Callable[..., T], args: tuple[Any, ...]) -> None:
        _BACKGROUND.registry = self._registry
        try:
            self._value = fn(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever asks for the result
            self._error = exc
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Until it is done (its git process too), whatever it answered; False when
        ``timeout`` seconds passed first."""
        try:
            return self._done.wait(timeout)
        except BaseException:
            self.kill()
            raise

    def kill(self) -> None:
        """Kill the git it runs now (it then fails, as a killed git does)."""
        import signal

        self._registry.signal_all(signal.SIGKILL)

    def result(self) -> T:
        """Its answer, or what it raised, raised here."""
        self.wait()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set: no error was raised
