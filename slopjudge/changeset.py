"""Changesets: what changed, read exactly as git reports it (SPEC §3).

Sources: a diff file (git or plain unified), a commit range, the index, the
work tree (untracked files included, ``.gitignore`` respected), two trees, or
a proposed edit from an agent's file tool.

Repository sources run ONE ``git diff --raw --numstat -p -z`` for the whole
change: the raw records give status, paths and blob ids, numstat the line
counts and the binary flag, the patch each file's diff. Contents then come
from a single ``git cat-file --batch``. The work tree is read through a tree
snapshot written with a temporary index, so the real index is never touched.

Mapping to :class:`FileChange`: statuses are A, M, D, R only. A copy is ``A``
with ``old_path`` set to its source; a type change (file <-> symlink) and a
mode-only change are ``M``. Paths are the real bytes git reports (C-style
quoting undone), decoded as UTF-8 with undecodable bytes replaced, so the
payload is always valid JSON. Contents and diffs are decoded the same way;
line endings (CRLF included) are kept as they are.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass

from .diffparse import FileStatus, decode, file_changes, merge_typechanges, parse
from .errors import SlopjudgeError
from .model import Changeset, Commit, FileChange
from .pathglob import match, matcher

__all__ = [
    "ChangesetError",
    "from_diff",
    "read_diff",
    "from_git_range",
    "from_staged",
    "from_working_tree",
    "snapshot_worktree",
    "from_trees",
    "from_proposed_edit",
    "from_proposed_edits",
    "split",
    "unified_diff",
]

_UNLIMITED = 1 << 62  # git output must never be cut short silently
_GIT_TIMEOUT_S = 600.0


class ChangesetError(SlopjudgeError):
    """A changeset could not be read; the message is one line."""


def from_diff(data: bytes, workspace: str | None = None) -> Changeset:
    """Read a git or plain unified diff.

    ``workspace`` is accepted for symmetry only: contents are never read from
    disk, since the diff need not match the tree. How the diff is read (names,
    statuses, contents rebuilt from hunks): :func:`.diffparse.file_changes`.
    """
    if isinstance(data, str):  # tolerate text callers
        data = data.encode("utf-8", errors="surrogateescape")
    return Changeset(base=None, head=None, commits=[], files=file_changes(data))


def read_diff(data: bytes, name: str) -> Changeset:
    """A diff a user handed over (``--diff``, a rule fixture): well-formed, or ChangesetError.

    The message names ``name`` and the line where reading failed
    (:func:`.diffparse.check`); :func:`from_diff` alone stays lenient.
    """
    from .diffparse import DiffError, check

    try:
        parsed = check(data)
    except DiffError as exc:
        where = f"{name}:{exc.line}" if exc.line else name
        raise ChangesetError(f"{where}: {exc.message}") from None
    return Changeset(base=None, head=None, commits=[], files=file_changes(data, parsed))


# --------------------------------------------------------------------------
# git plumbing


def _git(workspace: str, args: list[str], *, env: dict[str, str] | None = None,
         input: bytes = b"", ok: tuple[int, ...] = (0,)) -> bytes:
    from .procs import run

    argv = ["git", "-c", "core.quotepath=false", "-c", "color.ui=false", *args]
    res = run(argv, input=input, cwd=workspace, env=env, timeout=_GIT_TIMEOUT_S,
              max_output=_UNLIMITED)
    if res.start_error:
        raise ChangesetError(f"cannot run git: {res.start_error}")
    if res.timed_out:
        raise ChangesetError(f"git {args[0]} timed out after {int(_GIT_TIMEOUT_S)} s")
    if res.returncode not in ok:
        msg = _first_line(res.stderr) or f"git {args[0]} exited with {res.returncode}"
        raise ChangesetError(msg)
    return res.stdout


def _first_line(err: bytes) -> str:
    for ln in decode(err).splitlines():
        ln = ln.strip()
        if ln and not ln.startswith(("hint:", "warning:")):
            return ln.removeprefix("fatal: ").removeprefix("error: ")
    return ""


_TOPLEVELS: dict[str, str] = {}


def _toplevel(workspace: str) -> str:
    """The work tree holding ``workspace``; asked of git once per process (a Stop
    asks for it several times, a git call each)."""
    top = _TOPLEVELS.get(workspace)
    if top is None:
        top = _TOPLEVELS[workspace] = _ask_toplevel(workspace)
    return top


def _ask_toplevel(workspace: str) -> str:
    if not os.path.isdir(workspace):
        raise ChangesetError(f"not a directory: {workspace}")
    try:
        out = _git(workspace, ["rev-parse", "--show-toplevel"])
    except ChangesetError as exc:
        if "not a git repository" in str(exc).lower():
            raise ChangesetError(f"not a git repository: {workspace}") from None
        raise
    top = decode(out).strip()
    if not top:  # inside .git or a bare repository
        raise ChangesetError(f"not a git work tree: {workspace}")
    return top


def _resolve(workspace: str, rev: str, kind: str = "commit") -> str:
    """Full object id of ``rev`` peeled to ``kind``; ChangesetError if unknown."""
    if not rev or rev.startswith("-") or "\n" in rev:
        raise ChangesetError(f"unknown revision: {rev!r}")
    try:
        out = _git(workspace, ["rev-parse", "--verify", "--quiet", f"{rev}^{{{kind}}}"])
    except ChangesetError:
        raise ChangesetError(f"unknown revision: {rev}") from None
    sha = decode(out).strip()
    if not sha:
        raise ChangesetError(f"unknown revision: {rev}")
    return sha


def _empty_tree(workspace: str) -> str:
    return decode(_git(workspace, ["hash-object", "-t", "tree", "--stdin"])).strip()


def _head_tree(workspace: str, rev: str) -> str:
    """The tree of ``rev``; the empty tree when ``rev`` is HEAD of an unborn branch."""
    try:
        return _resolve(workspace, rev, "tree")
    except ChangesetError:
        if rev == "HEAD":
            return _empty_tree(workspace)
        raise


_DIFF_ARGS = [
    "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false", "-c", "diff.relative=false",
    "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--submodule=short",
    "--src-prefix=a/", "--dst-prefix=b/", "-M", "--raw", "--numstat", "-p", "-z", "--no-abbrev",
]


@dataclass
class _Raw:
    old_mode: str
    new_mode: str
    old_sha: str
    new_sha: str
    status: str
    src: bytes
    dst: bytes | None
    added: int = 0
    removed: int = 0
    binary: bool = False


def _diff_records(data: bytes) -> tuple[list[_Raw], bytes]:
    """Split ``git diff --raw --numstat -p -z`` output: raw records with
    numstat attached, then the patch text."""
    recs: list[_Raw] = []
    p, n = 0, len(data)
    while p < n and data[p] == 0x3A:  # ':'
        z = data.index(b"\0", p)
        meta = data[p + 1 : z].decode("ascii").split(" ")
        p = z + 1
        z = data.index(b"\0", p)
        src = data[p:z]
        p = z + 1
        dst = None
        if meta[4][:1] in ("R", "C"):
            z = data.index(b"\0", p)
            dst = data[p:z]
            p = z + 1
        recs.append(_Raw(meta[0], meta[1], meta[2], meta[3], meta[4], src, dst))
    k = 0
    while p < n and data[p] != 0x00 and data[p : p + 4] != b"diff":
        t1 = data.index(b"\t", p)
        t2 = data.index(b"\t", t1 + 1)
        a, r = data[p:t1], data[t1 + 1 : t2]
        p = t2 + 1
        if data[p] == 0:  # rename/copy: "\0old\0new\0"
            z = data.index(b"\0", p + 1)
            p = data.index(b"\0", z + 1) + 1
            key = data[z + 1 : p - 1]
        else:
            z = data.index(b"\0", p)
            key, p = data[p:z], z + 1
        # Numstat lists the raw records in order; check the name all the same.
        rec = recs[k] if k < len(recs) and _raw_key(recs[k]) == key else next(
            (x for x in recs if _raw_key(x) == key), None)
        if rec is not None:
            rec.binary = a == b"-"
            rec.added = 0 if a == b"-" else int(a)
            rec.removed = 0 if r == b"-" else int(r)
        k += 1
    if p < n and data[p] == 0x00:
        p += 1
    return recs, data[p:]


def _raw_key(rec: _Raw) -> bytes:
    return rec.dst if rec.dst is not None else rec.src


_STATUS: dict[str, FileStatus] = {
    "A": "A", "D": "D", "M": "M", "T": "M", "R": "R", "C": "A", "U": "M", "X": "M",
}


def _cat_blobs(workspace: str, shas: list[str]) -> dict[str, bytes]:
    """Blob contents for ``shas`` in one ``git cat-file --batch``."""
    if not shas:
        return {}
    out = _git(workspace, ["cat-file", "--batch"], input="".join(s + "\n" for s in shas).encode())
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


def _zero(sha: str) -> bool:
    return not sha.strip("0")


def _blob_text(blobs: dict[str, bytes], rec: _Raw, mode: str, sha: str) -> str | None:
    """One side's content; None for binary files, absent sides and submodules."""
    if rec.binary or _zero(sha) or mode == "160000":
        return None
    blob = blobs.get(sha)
    return None if blob is None else decode(blob)


def _changeset_from_git_diff(workspace: str, diff_args: list[str]) -> list[FileChange]:
    out = _git(workspace, [*_DIFF_ARGS, *diff_args])
    recs, patch = _diff_records(out)
    parts, _ = parse(patch)
    groups = merge_typechanges(parts)
    wanted: list[str] = []
    for r in recs:
        if r.binary:
            continue
        for mode, sha in ((r.old_mode, r.old_sha), (r.new_mode, r.new_sha)):
            if not _zero(sha) and mode != "160000":
                wanted.append(sha)
    blobs = _cat_blobs(workspace, sorted(set(wanted)))
    files: list[FileChange] = []
    g = 0
    for r in recs:
        kind = r.status[:1]
        status = _STATUS.get(kind, "M")
        new_path = r.dst if r.dst is not None else r.src
        diff = ""
        if g < len(groups):
            a, b = groups[g]
            last = b or a
            part_path = a.old if a.status == "D" and b is None else (last.new or last.old)
            if part_path == (r.src if kind == "D" else new_path):
                diff = decode(patch[a.start : last.end])
                g += 1
        files.append(FileChange(
            path=decode(r.src if kind == "D" else new_path),
            status=status,
            old_path=decode(r.src) if kind in ("R", "C") else None,
            old_content=None if kind == "A" else _blob_text(blobs, r, r.old_mode, r.old_sha),
            new_content=None if kind == "D" else _blob_text(blobs, r, r.new_mode, r.new_sha),
            diff=diff, binary=r.binary, added=r.added, removed=r.removed,
        ))
    return files


# --------------------------------------------------------------------------
# repository sources


def from_trees(workspace: str, base_tree: str, head_tree: str) -> Changeset:
    """The change between two tree-ish objects (trees or commits)."""
    _toplevel(workspace)
    base = _resolve(workspace, base_tree, "tree") if base_tree else _empty_tree(workspace)
    head = _resolve(workspace, head_tree, "tree")
    files = _changeset_from_git_diff(workspace, [base, head])
    return Changeset(base=base_tree, head=head_tree, commits=[], files=files)


def from_git_range(workspace: str, base: str, head: str = "HEAD") -> Changeset:
    """Commits ``base..head`` (oldest first) and their change.

    The diff runs from the merge base of ``base`` and ``head`` (as ``git diff
    base...head`` does), so changes made on ``base`` after the branch point do
    not show up reversed; when ``base`` is an ancestor of ``head`` that is
    ``base`` itself. ``Changeset.base`` is that commit.
    """
    _toplevel(workspace)
    head_sha = _resolve(workspace, head)
    try:
        base_sha = _resolve(workspace, base)
    except ChangesetError:
        # A tree as base (git's empty tree: the whole history) has no merge
        # base; every commit reachable from head is in the range.
        tree = _resolve(workspace, base, "tree")
        files = _changeset_from_git_diff(workspace, [tree, head_sha])
        return Changeset(base=tree, head=head_sha, files=files,
                         commits=_commits(workspace, head_sha))
    mb = decode(_git(workspace, ["merge-base", base_sha, head_sha], ok=(0, 1))).split()
    start = mb[0] if mb else base_sha
    files = _changeset_from_git_diff(workspace, [start, head_sha])
    return Changeset(base=start, head=head_sha, files=files,
                     commits=_commits(workspace, f"{base_sha}..{head_sha}"))


def _commits(workspace: str, rev_range: str) -> list[Commit]:
    """The commits of ``rev_range``, oldest first."""
    log = _git(workspace, [
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


def from_staged(workspace: str) -> Changeset:
    """HEAD (the empty tree on an unborn branch) -> the index."""
    _toplevel(workspace)
    try:
        base = _resolve(workspace, "HEAD")
    except ChangesetError:
        base = _empty_tree(workspace)
    files = _changeset_from_git_diff(workspace, ["--cached", base])
    return Changeset(base=base, head=None, commits=[], files=files)


def _index_path(workspace: str) -> str:
    path = decode(_git(workspace, ["rev-parse", "--git-path", "index"])).strip()
    return path if os.path.isabs(path) else os.path.join(workspace, path)


def snapshot_worktree(workspace: str) -> str:
    """A tree id for the work tree as it is now: tracked and untracked files,
    ignored ones left out. Written through a temporary copy of the index
    (``GIT_INDEX_FILE``), so the real index and the files are not touched; the
    blobs and trees it writes are ordinary unreferenced objects."""
    import shutil  # here, not at the top: a PreToolUse hook never snapshots (bz2, lzma, random)
    import tempfile

    top = _toplevel(workspace)
    real_index = _index_path(top)
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
        _unhide(top, env)
        nested = _nested_repos(top, env)
        _git(top, ["-c", "advice.addEmbeddedRepo=false", "-c", "core.safecrlf=false",
                   "add", "-A", "--", ".", *(f":(exclude,literal){n}" for n in nested)],
             env=env)
        _add_nested_files(top, env, nested)
        return decode(_git(top, ["write-tree"], env=env)).strip()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def ignored_paths(workspace: str, trees: list[str]) -> list[str]:
    """Files under ``trees`` (workspace-relative folders) that git ignores, every one
    listed (no folder collapsed)."""
    _toplevel(workspace)  # a clear error outside a repository
    out = _git(workspace, ["ls-files", "-o", "-i", "--exclude-standard", "-z", "--",
                     *(f":(literal){t}" for t in trees)])
    return sorted(decode(n) for n in out.split(b"\0") if n)


def _nested_repos(top: str, env: dict[str, str]) -> list[str]:
    """Untracked folders that hold a repository of their own (``git init sub``).

    ``git add`` would record such a folder as a bare commit pointer, hiding the
    files in it, or fail outright when it has no commit: either would let an
    agent put its change where the Stop hook cannot see it."""
    out = _git(top, ["ls-files", "-o", "--exclude-standard", "-z"], env=env)
    return [decode(n).rstrip("/") for n in out.split(b"\0") if n.endswith(b"/")]


def _add_nested_files(top: str, env: dict[str, str], nested: list[str]) -> None:
    """Add the files of each nested repository as plain files of this one."""
    # The nested repository's own git must not see this snapshot's index.
    own_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    entries: list[bytes] = []
    for folder in nested:
        listing = _git(os.path.join(top, folder),
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
            sha = decode(_git(top, ["hash-object", "-w", "--stdin"], env=env, input=data))
            entries.append(f"{mode} {sha.strip()}\t{path}".encode() + b"\0")
        if deeper:
            _add_nested_files(top, env, [f"{folder}/{d}" for d in deeper])
    if entries:
        _git(top, ["update-index", "--add", "-z", "--index-info"], env=env,
             input=b"".join(entries))


def _unhide(top: str, env: dict[str, str]) -> None:
    """Clear ``assume-unchanged`` and ``skip-worktree`` in the copied index, so
    ``git add`` looks at those files: either flag would hide an edit (to a rule
    file, say) from the snapshot. A skip-worktree file absent from disk (a
    sparse checkout, ``core.sparseCheckout``) keeps its flag: it is not deleted."""
    listing = _git(top, ["ls-files", "-v", "-z"], env=env)
    sparse = _git(top, ["config", "--bool", "core.sparseCheckout"], env=env,
                  ok=(0, 1)).strip() == b"true"
    flagged: dict[str, list[bytes]] = {"--no-assume-unchanged": [], "--no-skip-worktree": []}
    for entry in listing.split(b"\0"):
        tag, _, name = entry.partition(b" ")
        if not name:
            continue
        if tag.islower():
            flagged["--no-assume-unchanged"].append(name)
        if tag.upper() == b"S" and not (
                sparse and not os.path.lexists(os.path.join(top, decode(name)))):
            flagged["--no-skip-worktree"].append(name)
    # One flag per call: given both, git applies only one of them.
    for flag, paths in flagged.items():
        if paths:
            _git(top, ["update-index", flag, "-z", "--stdin"], env=env,
                 input=b"\0".join(paths) + b"\0")


def from_working_tree(workspace: str, base: str = "HEAD") -> Changeset:
    """``base`` (a commit or tree id; HEAD of an unborn branch is the empty
    tree) -> the work tree, untracked files included, .gitignore respected."""
    _toplevel(workspace)
    base_tree = _head_tree(workspace, base)
    try:
        base_id = _resolve(workspace, base, "commit")
    except ChangesetError:
        base_id = base_tree
    snap = snapshot_worktree(workspace)
    files = _changeset_from_git_diff(workspace, [base_tree, snap])
    return Changeset(base=base_id, head=None, commits=[], files=files)


# --------------------------------------------------------------------------
# proposed edits


_NEEDS_QUOTE = re.compile(r'["\\\x00-\x1f\x7f]')
_QUOTE_MAP = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v",
              "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _quote(name: str) -> str:
    """Quote a path as git does with core.quotepath=false."""
    if not _NEEDS_QUOTE.search(name):
        return name
    body = "".join(
        _QUOTE_MAP.get(ch, f"\\{ord(ch):03o}" if ord(ch) < 0x20 or ord(ch) == 0x7F else ch)
        for ch in name
    )
    return f'"{body}"'


def _dash_name(prefix: str, name: str) -> str:
    q = _quote(prefix + name)
    return q + "\t" if " " in q and not q.startswith('"') else q


def _split_keep(text: str) -> list[str]:
    """Lines with their "\\n" (only "\\n" ends a line, as in git)."""
    if not text:
        return []
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


def _synth_hunks(old: str, new: str) -> tuple[list[str], int, int]:
    a, b = _split_keep(old), _split_keep(new)
    out: list[str] = []
    added = removed = 0
    lines = difflib.unified_diff(a, b, lineterm="", n=3)
    for _ in range(2):  # difflib's own ---/+++ lines; the caller writes git's
        next(lines, None)
    for line in lines:
        if line.startswith("@@"):
            out.append(line + "\n")
            continue
        if line[:1] == "+":
            added += 1
        elif line[:1] == "-":
            removed += 1
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return out, added, removed


def from_proposed_edit(workspace: str, path: str, new_content: str | None) -> Changeset:
    """The change a file tool is about to make: old content from disk, new
    content as given (None: the file is deleted), the diff synthesized the
    way git prints it. The path is relative to ``workspace`` when inside it,
    else absolute."""
    return from_proposed_edits(workspace, [(path, None, new_content)])


def from_proposed_edits(
    workspace: str, items: list[tuple[str, str | None, str | None]]
) -> Changeset:
    """The change a multi-file edit (Codex's ``apply_patch``) is about to make.

    Each item is ``(path, moved-from path or None, new content or None for a
    deletion)``; a moved file is a rename (``R``) whose old content is the
    source's. Files the edit leaves as they are drop out.
    """
    ws = os.path.abspath(workspace)
    files: list[FileChange] = []
    for path, old_path, new_content in items:
        fc = _proposed_file(ws, _abs(ws, path),
                            None if old_path is None else _abs(ws, old_path), new_content)
        if fc is not None:
            files.append(fc)
    return Changeset(base=None, head=None, commits=[], files=files)


def _abs(ws: str, path: str) -> str:
    return os.path.abspath(path if os.path.isabs(path) else os.path.join(ws, path))


def _read_old(full: str, name: str) -> bytes | None:
    try:
        with open(full, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ChangesetError(f"is a directory: {name}") from None
    except OSError as exc:
        raise ChangesetError(f"cannot read {name}: {exc.strerror or exc}") from None


def _proposed_file(
    ws: str, full: str, old_full: str | None, new_content: str | None
) -> FileChange | None:
    name = _relative(ws, full)
    source = old_full if old_full is not None and old_full != full else full
    old_name = _relative(ws, source)
    old_bytes = _read_old(source, old_name)
    renamed = source != full and old_bytes is not None and new_content is not None
    if not renamed:
        source, old_name = full, name
        if old_full is not None and old_full != full:
            old_bytes = _read_old(full, name)  # the source is gone: judged as written
    if old_bytes is None and new_content is None:
        return None
    mode = "100644"
    if old_bytes is not None:
        try:
            mode = "100755" if os.stat(source).st_mode & 0o111 else "100644"
        except OSError:
            pass
    status: FileStatus
    if renamed:
        status = "R"
    else:
        status = "A" if old_bytes is None else ("D" if new_content is None else "M")
    binary = old_bytes is not None and b"\0" in old_bytes[:8000]
    old_text = None if old_bytes is None else decode(old_bytes)
    head = [f"diff --git {_quote('a/' + old_name)} {_quote('b/' + name)}\n"]
    if status == "A":
        head.append(f"new file mode {mode}\n")
    elif status == "D":
        head.append(f"deleted file mode {mode}\n")
    elif status == "R":
        ratio = difflib.SequenceMatcher(None, old_text or "", new_content or "").ratio()
        head += [f"similarity index {int(ratio * 100)}%\n",
                 f"rename from {_quote(old_name)}\n", f"rename to {_quote(name)}\n"]
    minus = "/dev/null" if status == "A" else _dash_name("a/", old_name)
    plus = "/dev/null" if status == "D" else _dash_name("b/", name)
    added = removed = 0
    if binary:
        body = [f"Binary files {minus.rstrip(chr(9))} and {plus.rstrip(chr(9))} differ\n"]
    else:
        hunks, added, removed = _synth_hunks(old_text or "", new_content or "")
        body = [f"--- {minus}\n", f"+++ {plus}\n", *hunks] if hunks else []
    if status == "M" and not body:
        return None  # nothing would change
    return FileChange(
        path=name, status=status, old_path=old_name if status == "R" else None,
        old_content=None if binary else old_text,
        new_content=None if binary else new_content,
        diff="".join(head + body), binary=binary, added=added, removed=removed,
    )


def _relative(ws: str, full: str) -> str:
    for root, target in ((ws, full), (os.path.realpath(ws), os.path.realpath(full))):
        if target == root:
            continue
        if os.path.commonpath([root, target]) == root:
            return os.path.relpath(target, root).replace(os.sep, "/")
    return full


# --------------------------------------------------------------------------
# rule filtering


def split(
    changeset: Changeset, paths: list[str], exclude: list[str]
) -> tuple[list[FileChange], list[dict[str, str]]]:
    """Files a rule's ``paths``/``exclude`` admit, and the others as
    ``{"path", "status"}``. A file is admitted when its path (or, for a
    rename, its old path) matches ``paths`` (empty: everything) and its path
    does not match ``exclude``.

    A proposed edit outside the workspace carries an absolute path: ``paths``
    are workspace-relative, so only a rule with no ``paths`` (or an absolute
    pattern) sees it. A rule guarding where files are written still can.
    """
    files: list[FileChange] = []
    others: list[dict[str, str]] = []
    admits = matcher(tuple(paths))
    excludes = matcher(tuple(exclude))
    for f in changeset.files:
        if f.path.startswith("/"):
            wanted = not paths or any(p.startswith("/") and match(p, f.path) for p in paths)
        else:
            wanted = not paths or admits(f.path) or (
            f.status == "R" and f.old_path is not None and admits(f.old_path))
        if wanted and not (exclude and excludes(f.path)):
            files.append(f)
        else:
            others.append({"path": f.path, "status": f.status})
    return files, others


def unified_diff(files: list[FileChange]) -> str:
    """The whole diff a rule sees: each of its files' diffs in order."""
    out: list[str] = []
    for f in files:
        if not f.diff:
            continue
        out.append(f.diff if f.diff.endswith("\n") else f.diff + "\n")
    return "".join(out)
