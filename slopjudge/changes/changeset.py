"""Changesets: what changed, read exactly as git reports it (SPEC §3).

A repository source runs ONE ``git diff --raw -p -z`` and one ``git cat-file --batch``
(:mod:`.gitio`): the raw records give statuses, paths and blob ids, the patch each file's
diff. Statuses are A, M, D, R (a copy is ``A`` with ``old_path``, a type or mode change
``M``). Text is decoded as UTF-8 with undecodable bytes replaced, so the payload is
always valid JSON; line endings are kept.
"""

from __future__ import annotations

import os

from slopjudge.changes import authored, diffparse, gitio
from slopjudge.changes.diffparse import decode, file_changes
from slopjudge.changes.gitio import ignored_paths, snapshot_worktree
from slopjudge.changes.proposed import from_proposed_edits, text_diff
from slopjudge.changes.rulefilter import split, unified_diff
from slopjudge.errors import ChangesetError
from slopjudge.model import Changeset, FileChange

TYPE_CHECKING = False  # not typing's: every hook imports this module
if TYPE_CHECKING:
    from typing import Any

    from slopjudge.changes.authored import Policy
    from slopjudge.changes.diffparse import FileStatus

__all__ = [
    "ChangesetError", "from_diff", "read_diff", "from_git_range", "from_staged",
    "from_working_tree", "snapshot_worktree", "from_tree_to_worktree",
    "from_proposed_edits", "ignored_paths", "split", "unified_diff",
]


def from_diff(data: bytes) -> Changeset:
    """A git or plain unified diff, read leniently; contents are never read from disk,
    since the diff need not match the tree."""
    return Changeset(files=file_changes(data))


def read_diff(data: bytes, name: str) -> Changeset:
    """A diff a user handed over (``--diff``, a rule fixture): well-formed, or a
    ChangesetError naming ``name`` and the line (:func:`.diffparse.check`)."""
    try:
        parsed = diffparse.check(data)
    except diffparse.DiffError as exc:
        where = f"{name}:{exc.line}" if exc.line else name
        raise ChangesetError(f"{where}: {exc}") from None
    return Changeset(files=file_changes(data, parsed))


class _Raw:
    """One file's raw record (a slotted class: see diffparse.Hunk)."""

    __slots__ = ("old_mode", "new_mode", "old_sha", "new_sha", "status", "src", "path")

    def __init__(self, meta: list[str], src: bytes, dst: bytes | None) -> None:
        self.old_mode, self.new_mode, self.old_sha, self.new_sha, self.status = meta
        self.src = src
        self.path = src if dst is None else dst

    def blobs(self) -> list[str]:
        """The ids of the blobs on its sides (none for an absent side or a submodule)."""
        return [sha for mode, sha in ((self.old_mode, self.old_sha), (self.new_mode, self.new_sha))
                if sha.strip("0") and mode != "160000"]


def _raw_records(data: bytes) -> tuple[list[_Raw], bytes]:
    """Split ``git diff --raw -p -z`` output: the raw records, then the patch text."""
    recs: list[_Raw] = []
    p = 0
    while data.startswith(b":", p):  # ":meta\0src\0", and "dst\0" for a rename or a copy
        z = data.index(b"\0", p)
        meta = data[p + 1 : z].decode("ascii").split(" ")
        s = data.index(b"\0", z + 1)
        d = data.index(b"\0", s + 1) if meta[4][:1] in ("R", "C") else s
        recs.append(_Raw(meta, data[z + 1 : s], data[s + 1 : d] if d > s else None))
        p = d + 1
    return recs, data[p + 1 if data.startswith(b"\0", p) else p:]


_STATUS: dict[str, FileStatus] = {"A": "A", "D": "D", "R": "R", "C": "A"}


def _blob(blobs: dict[str, bytes], sha: str) -> str | None:
    """One side's content; None for a blob not read (see :meth:`_Raw.blobs`)."""
    return decode(blobs[sha]) if sha in blobs else None


def _git_files(recs: list[_Raw], patch: bytes, blobs: dict[str, bytes]) -> list[FileChange]:
    """One FileChange per raw record, with its section of ``patch`` and its contents."""
    parts, lines = diffparse.parse(patch)
    groups = iter(diffparse.sections(patch, parts, lines))
    group = next(groups, None)
    files: list[FileChange] = []
    for r in recs:
        kind, path = r.status[:1], decode(r.path)
        status, old_path = _STATUS.get(kind, "M"), decode(r.src) if kind in ("R", "C") else None
        fields: dict[str, Any] = {"hunks": []}  # a record without a patch section
        if group is not None:
            a, b, section = group
            last = b or a
            if (a.old if a.status == "D" and b is None else (last.new or last.old)) == r.path:
                fields = section
                group = next(groups, None)
        binary = fields.get("binary", False)
        old = None if kind == "A" or binary else _blob(blobs, r.old_sha)
        new = None if kind == "D" or binary else _blob(blobs, r.new_sha)
        if binary and _text(path, r, blobs):
            # Binary to git because .gitattributes says so (``src/** binary``, ``-diff``),
            # though its content is text: judged as the text it is, or an attributes line
            # in the change would hide every file it names from the rules.
            old = None if status == "A" else _blob(blobs, r.old_sha)  # a copy: an addition
            new = None if kind == "D" else _blob(blobs, r.new_sha)
            mode = r.new_mode if status == "A" else r.old_mode
            diff = text_diff(old_path or path, path, status, mode, old, new)
            fields = dict(zip(("diff", "added", "removed", "hunks"), diff, strict=True))
        files.append(FileChange(path, status, old_path, old_content=old, new_content=new, **fields))
    return files


def _change(workspace: str, diff_args: list[str], policy: Policy | None,
            **fields: Any) -> Changeset:
    """The change ``diff_args`` name, less the files ``policy`` leaves out (each recorded,
    never read); ``.gitattributes`` are read from the diff's base side."""
    recs, patch = _raw_records(gitio.git(workspace, [*gitio.DIFF, *diff_args]))
    marks: dict[str, str] = {}
    judged = recs
    if policy is not None and policy.enabled and recs:
        paths = [decode(r.path) for r in recs]
        base = diff_args[1] if diff_args[0] == "--cached" else diff_args[0]
        marks = _base_marks(workspace, base, paths)
        judged = [r for r, p in zip(recs, paths, strict=True) if policy.why(p, marks) is None]
    # A binary file's blobs too: .gitattributes may call text binary (see _git_files).
    blobs = gitio.cat_blobs(workspace, sorted({sha for r in judged for sha in r.blobs()}))
    return Changeset(files=authored.keep_judged(_git_files(recs, patch, blobs), policy, marks),
                     left_out=list(policy.left_out) if policy is not None else [], **fields)


def _base_marks(workspace: str, base: str, paths: list[str]) -> dict[str, str]:
    """What the base's ``.gitattributes`` files say of ``paths``: only those the work
    tree still has are asked for (one removed can only judge more)."""
    top = gitio.toplevel(workspace)
    names = [n for n in authored.attribute_files(paths) if os.path.isfile(os.path.join(top, n))]
    texts = gitio.cat_blobs(workspace, [f"{base}:{n}" for n in names])
    return authored.marks(paths, {n: decode(texts[f"{base}:{n}"]) for n in names
                                  if f"{base}:{n}" in texts})


# Names that say "source text": a NUL byte in such a file (a comment, say) makes it
# binary to git, and no check would see the rest.
SOURCE_SUFFIXES = frozenset(
    ".py .pyi .js .jsx .mjs .cjs .ts .tsx .go .rs .java .kt .kts .scala .c .h .cc .cpp .hpp "
    ".cs .rb .php .swift .m .mm .sh .bash .zsh .ps1 .lua .pl .r .sql .html .css .scss .vue "
    ".svelte .json .yaml .yml .toml .ini .cfg .md .rst .txt .xml .gradle .tf .dart .ex .exs "
    ".erl .hs .ml .clj .el .vim .nix .proto .graphql".split())


def _text(path: str, r: _Raw, blobs: dict[str, bytes]) -> bool:
    """Every side of ``r`` was read and is text: no NUL byte in its first 8000 bytes (git's
    own test), or a source file's name."""
    source = os.path.splitext(path)[1].lower() in SOURCE_SUFFIXES
    sides = r.blobs()
    return bool(sides) and all(sha in blobs and (source or b"\0" not in blobs[sha][:8000])
                               for sha in sides)


def from_tree_to_worktree(workspace: str, base_tree: str,
                          policy: Policy | None = None) -> Changeset:
    """The change from ``base_tree`` (a session's baseline) to a snapshot of the work
    tree now; submodules' files count as files (the baseline was taken the same way)."""
    known = gitio.rev_parse(workspace, [f"{base_tree}^{{tree}}"], base_tree)
    snap = gitio.snapshot_worktree(workspace, policy, submodules=True)
    if known is None or len(known) != 1:  # asked again alone, for git's own complaint
        known = [gitio.resolve(workspace, base_tree, "tree")]
    return _change(workspace, [known[0], snap], policy, base=base_tree, head=snap)


def from_git_range(workspace: str, base: str, head: str = "HEAD",
                   policy: Policy | None = None) -> Changeset:
    """Commits ``base..head`` (oldest first) and their change from the merge base (as
    ``git diff base...head``: changes made on ``base`` after the branch point do not show
    up reversed), which ``Changeset.base`` names. One ``git rev-parse base...head`` names
    the top, both commits and their merge base; the commit list is read while the diff is."""
    known = gitio.rev_parse(workspace, [f"{base}^{{commit}}...{head}^{{commit}}"], base, head)
    # "<head>\n<base>\n^<merge base>..." (no merge base line: unrelated histories)
    # Two merge bases or more: `git merge-base` picks one, asked below.
    if known is not None and len(known) in (2, 3) and "^" not in known[0] + known[1] \
            and all(len(mb) > 1 and mb[0] == "^" for mb in known[2:]):
        head_sha, base_sha = known[0], known[1]
        start = known[2][1:] if len(known) == 3 else base_sha
        return _range_change(workspace, start, base_sha, head_sha, policy)
    gitio.toplevel(workspace)
    head_sha = gitio.resolve(workspace, head)
    try:
        base_sha = gitio.resolve(workspace, base)
    except ChangesetError:
        # A tree as base (git's empty tree: the whole history) has no merge
        # base; every commit reachable from head is in the range.
        tree = gitio.resolve(workspace, base, "tree")
        return _change(workspace, [tree, head_sha], policy, base=tree, head=head_sha,
                       commits=gitio.commits(workspace, head_sha))
    mb = decode(gitio.git(workspace, ["merge-base", base_sha, head_sha], ok=(0, 1))).split()
    return _range_change(workspace, mb[0] if mb else base_sha, base_sha, head_sha, policy)


def _range_change(workspace: str, start: str, base_sha: str, head_sha: str,
                  policy: Policy | None) -> Changeset:
    commits = gitio.Background(gitio.commits, workspace, f"{base_sha}..{head_sha}")
    try:
        change = _change(workspace, [start, head_sha], policy, base=start, head=head_sha)
    finally:
        commits.wait()  # a failed diff still lets the log finish first: no git left running
    change.commits = commits.result()
    return change


def _base(workspace: str, base: str) -> tuple[str, str]:
    """The tree of ``base`` (a commit or tree id; HEAD of an unborn branch is the empty
    tree) and its id: the commit's, else the tree's."""
    known = gitio.rev_parse(workspace, [f"{base}^{{tree}}", f"{base}^{{commit}}"], base)
    if known is not None and len(known) == 2:
        return known[0], known[1]
    gitio.toplevel(workspace)
    tree = gitio.head_tree(workspace, base)
    try:
        return tree, gitio.resolve(workspace, base, "commit")
    except ChangesetError:
        return tree, tree


def from_staged(workspace: str, policy: Policy | None = None) -> Changeset:
    """HEAD -> the index."""
    base = _base(workspace, "HEAD")[1]
    return _change(workspace, ["--cached", base], policy, base=base)


def from_working_tree(workspace: str, base: str = "HEAD",
                      policy: Policy | None = None) -> Changeset:
    """``base`` -> the work tree, untracked files included, .gitignore respected."""
    base_tree, base_id = _base(workspace, base)
    snap = gitio.snapshot_worktree(workspace, policy)
    return _change(workspace, [base_tree, snap], policy, base=base_id)
