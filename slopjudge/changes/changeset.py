"""Changesets: what changed, read exactly as git reports it (SPEC §3).

The public face of the sources (a diff, a commit range, the index, the work tree, two
trees, a proposed edit). A repository source runs ONE ``git diff --raw -p -z`` and one
``git cat-file --batch`` (:mod:`.gitio`); :mod:`.gitraw` turns their output into
FileChanges (statuses A, M, D, R: a copy is ``A`` with ``old_path``, a
type or mode change ``M``). Paths, contents and diffs are decoded as UTF-8 with
undecodable bytes replaced, so the payload is always valid JSON; line endings are kept.
"""

from __future__ import annotations

import os

from slopjudge.changes import authored, gitio, gitraw
from slopjudge.changes.diffparse import decode, file_changes
from slopjudge.changes.gitio import ignored_paths, snapshot_worktree
from slopjudge.changes.proposed import from_proposed_edit, from_proposed_edits, text_diff
from slopjudge.changes.rulefilter import split, unified_diff
from slopjudge.errors import ChangesetError
from slopjudge.model import Changeset, FileChange

TYPE_CHECKING = False  # not typing's: every hook imports this module
if TYPE_CHECKING:
    from typing import Any

    from slopjudge.changes.authored import Policy

__all__ = [
    "ChangesetError", "from_diff", "read_diff", "from_git_range", "from_staged",
    "from_working_tree", "snapshot_worktree", "from_trees", "from_tree_to_worktree",
    "from_proposed_edit", "from_proposed_edits", "ignored_paths", "split", "unified_diff",
]


def from_diff(data: bytes) -> Changeset:
    """A git or plain unified diff, read leniently (:func:`.diffparse.file_changes`);
    contents are never read from disk, since the diff need not match the tree."""
    return Changeset(files=file_changes(data))


def read_diff(data: bytes, name: str) -> Changeset:
    """A diff a user handed over (``--diff``, a rule fixture): well-formed, or ChangesetError.

    The message names ``name`` and the line where reading failed
    (:func:`.diffparse.check`); :func:`from_diff` alone stays lenient.
    """
    from slopjudge.changes.diffparse import DiffError, check

    try:
        parsed = check(data)
    except DiffError as exc:
        where = f"{name}:{exc.line}" if exc.line else name
        raise ChangesetError(f"{where}: {exc.message}") from None
    return Changeset(files=file_changes(data, parsed))


# --------------------------------------------------------------------------
# repository sources


def _changeset_from_git_diff(workspace: str, diff_args: list[str],
                             policy: Policy | None = None) -> list[FileChange]:
    """The change ``diff_args`` name; without the files ``policy`` leaves out (their
    contents never read), with ``.gitattributes`` read from the diff's base side."""
    recs, patch = gitraw.diff_records(gitio.diff(workspace, diff_args))
    marks: dict[str, str] = {}
    judged = recs
    if policy is not None and policy.enabled and recs:
        paths = [decode(r.src if r.status[:1] == "D" or r.dst is None else r.dst) for r in recs]
        base = diff_args[1] if diff_args[0] == "--cached" else diff_args[0]
        marks = _base_marks(workspace, base, paths)
        judged = [r for r, p in zip(recs, paths, strict=True) if policy.why(p, marks) is None]
    # A binary file's blobs too: .gitattributes may call text binary (see _unless_text).
    blobs = gitio.cat_blobs(workspace, sorted({sha for r in judged for sha in r.blobs()}))
    files = gitraw.file_changes(recs, patch, blobs)
    for i, r in enumerate(recs):
        if r.binary:
            files[i] = _unless_text(files[i], r, blobs)
    return authored.keep_judged(files, policy, marks)


def _base_marks(workspace: str, base: str, paths: list[str]) -> dict[str, str]:
    """What the base's ``.gitattributes`` files say of ``paths``: only those the work
    tree still has are asked for (one removed can only judge more)."""
    top = gitio.toplevel(workspace)
    names = [n for n in authored.attribute_files(paths) if os.path.isfile(os.path.join(top, n))]
    if not names:
        return {}
    texts = gitio.cat_paths(workspace, base, names)
    return authored.marks(paths, {n: decode(texts[n]) for n in names if n in texts})


# Names that say "source text": a NUL byte in such a file (a comment, say) makes it
# binary to git, and no check would see the rest.
SOURCE_SUFFIXES = frozenset(
    ".py .pyi .js .jsx .mjs .cjs .ts .tsx .go .rs .java .kt .kts .scala .c .h .cc .cpp .hpp "
    ".cs .rb .php .swift .m .mm .sh .bash .zsh .ps1 .lua .pl .r .sql .html .css .scss .vue "
    ".svelte .json .yaml .yml .toml .ini .cfg .md .rst .txt .xml .gradle .tf .dart .ex .exs "
    ".erl .hs .ml .clj .el .vim .nix .proto .graphql".split())


def _text(path: str, data: bytes) -> bool:
    """Judged as text: no NUL byte in its first 8000 bytes (git's own test), or a source
    file's name."""
    return b"\0" not in data[:8000] or os.path.splitext(path)[1].lower() in SOURCE_SUFFIXES


def _unless_text(fc: FileChange, r: gitraw.RawRecord, blobs: dict[str, bytes]) -> FileChange:
    """A file git called binary because ``.gitattributes`` says so (``src/** binary``,
    ``-diff``), though its content is text: judged as the text it is, or an
    attributes line in the change would hide every file it names from the rules."""
    sides = r.blobs()
    if not sides or any(sha not in blobs or not _text(fc.path, blobs[sha]) for sha in sides):
        return fc  # binary by content, or no content to read
    old = None if gitraw.zero_id(r.old_sha) or fc.status == "A" else decode(blobs[r.old_sha])
    new = None if gitraw.zero_id(r.new_sha) or fc.status == "D" else decode(blobs[r.new_sha])
    old_name = fc.old_path or fc.path
    mode = r.new_mode if fc.status == "A" else r.old_mode
    diff, added, removed, hunks = text_diff(old_name, fc.path, fc.status, mode, old, new)
    return FileChange(path=fc.path, status=fc.status, old_path=fc.old_path, old_content=old,
                      new_content=new, diff=diff, binary=False, added=added, removed=removed,
                      hunks=hunks)


def _change(workspace: str, diff_args: list[str], policy: Policy | None,
            **fields: Any) -> Changeset:
    """The Changeset of ``diff_args``'s change, with what ``policy`` left out."""
    files = _changeset_from_git_diff(workspace, diff_args, policy)
    left_out = list(policy.left_out) if policy is not None else []
    return Changeset(files=files, left_out=left_out, **fields)


def from_trees(workspace: str, base_tree: str, head_tree: str, *,
               head_is_tree: bool = False, policy: Policy | None = None) -> Changeset:
    """The change between two tree-ish objects (trees or commits).

    ``head_is_tree``: ``head_tree`` is a tree id git just wrote (a work-tree
    snapshot), so it is not asked of git again."""
    gitio.toplevel(workspace)
    base = gitio.resolve(workspace, base_tree, "tree") if base_tree else gitio.empty_tree(workspace)
    head = head_tree if head_is_tree else gitio.resolve(workspace, head_tree, "tree")
    return _change(workspace, [base, head], policy, base=base_tree, head=head_tree)


def from_tree_to_worktree(workspace: str, base_tree: str,
                          policy: Policy | None = None) -> Changeset:
    """The change from ``base_tree`` (a session's baseline) to the work tree now,
    untracked files included, ``.gitignore`` respected: :func:`from_trees` from it to
    :func:`snapshot_worktree`, with the work tree's top and the base asked of git in
    one call. Submodules' files count as files (the baseline was taken the same way)."""
    known = gitio.rev_parse(workspace, [f"{base_tree}^{{tree}}"]) \
        if gitio.plain_rev(base_tree) else None
    snap = gitio.snapshot_worktree(workspace, policy, submodules=True)
    if known is None or len(known) != 1:  # asked again one by one, for git's own complaint
        return from_trees(workspace, base_tree, snap, head_is_tree=True, policy=policy)
    return _change(workspace, [known[0], snap], policy, base=base_tree, head=snap)


def from_git_range(workspace: str, base: str, head: str = "HEAD",
                   policy: Policy | None = None) -> Changeset:
    """Commits ``base..head`` (oldest first) and their change.

    The diff runs from the merge base of ``base`` and ``head`` (as ``git diff
    base...head`` does), so changes made on ``base`` after the branch point do
    not show up reversed; when ``base`` is an ancestor of ``head`` that is
    ``base`` itself. ``Changeset.base`` is that commit.

    One ``git rev-parse base...head`` names the top, both commits and their merge
    base; the commit list is read while the diff is.
    """
    known = gitio.rev_parse(workspace, [f"{base}^{{commit}}...{head}^{{commit}}"]) \
        if gitio.plain_rev(base) and gitio.plain_rev(head) else None
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


def from_staged(workspace: str, policy: Policy | None = None) -> Changeset:
    """HEAD (the empty tree on an unborn branch) -> the index."""
    known = gitio.rev_parse(workspace, ["HEAD^{commit}"])
    if known is not None and len(known) == 1:
        base = known[0]
    else:
        gitio.toplevel(workspace)
        try:
            base = gitio.resolve(workspace, "HEAD")
        except ChangesetError:
            base = gitio.empty_tree(workspace)
    return _change(workspace, ["--cached", base], policy, base=base)


def from_working_tree(workspace: str, base: str = "HEAD",
                      policy: Policy | None = None) -> Changeset:
    """``base`` (a commit or tree id; HEAD of an unborn branch is the empty
    tree) -> the work tree, untracked files included, .gitignore respected."""
    known = gitio.rev_parse(workspace, [f"{base}^{{tree}}", f"{base}^{{commit}}"]) \
        if gitio.plain_rev(base) else None
    if known is not None and len(known) == 2:
        base_tree, base_id = known
    else:
        gitio.toplevel(workspace)
        base_tree = gitio.head_tree(workspace, base)
        try:
            base_id = gitio.resolve(workspace, base, "commit")
        except ChangesetError:
            base_id = base_tree
    snap = gitio.snapshot_worktree(workspace, policy)
    return _change(workspace, [base_tree, snap], policy, base=base_id)
