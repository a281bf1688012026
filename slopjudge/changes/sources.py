"""Changeset sources: the flags shared by `run`, `payload` and `test`, and what each reads."""

from __future__ import annotations

import sys

from slopjudge.changes import authored
from slopjudge.changes import changeset as cs
from slopjudge.model import Changeset

TYPE_CHECKING = False  # not typing's: a CI run of a docs-only commit never imports it
if TYPE_CHECKING:
    import argparse

    from slopjudge.changes.authored import Policy


def add_source_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--diff", metavar="FILE", help="a unified diff (git or plain); - for stdin")
    group.add_argument(
        "--base", metavar="REV",
        help="judge what HEAD (see --head) changed since its merge base with REV, "
             "as `git diff REV...HEAD` shows it",
    )
    group.add_argument("--staged", action="store_true", help="judge the index against HEAD")
    group.add_argument(
        "--working-tree", action="store_true",
        help="judge the work tree against HEAD, untracked files included (the default)",
    )
    parser.add_argument("--head", metavar="REV", help="the last commit with --base (default HEAD)")


def changeset_from_args(args: argparse.Namespace, workspace: str,
                        policy: Policy | None = None) -> Changeset:
    """The change the source flags name (the work tree when none is given), without the
    files ``policy`` leaves out; ChangesetError or OSError with a one-line message."""
    for flag in ("diff", "base", "head"):
        value = getattr(args, flag, None)
        if isinstance(value, str) and not value.strip():
            # An empty value (an unset CI variable) must not fall back to another source.
            raise cs.ChangesetError(f"--{flag} was given an empty value")
    if args.head and not args.base:
        raise cs.ChangesetError("--head goes with --base")
    if args.base:
        return cs.from_git_range(workspace, args.base, args.head or "HEAD", policy)
    if args.staged:
        return cs.from_staged(workspace, policy)
    if not args.diff:
        return cs.from_working_tree(workspace, policy=policy)
    # --diff FILE (-: stdin), its .gitattributes read from disk.
    if args.diff == "-":
        found = cs.read_diff(sys.stdin.buffer.read(), "<stdin>")
    else:
        try:
            with open(args.diff, "rb") as fh:
                data = fh.read()
        except OSError as exc:
            why = "no such file" if isinstance(exc, FileNotFoundError) else \
                "is a directory, not a diff file" if isinstance(exc, IsADirectoryError) else \
                f"cannot read it: {exc.strerror or exc}"
            raise cs.ChangesetError(f"--diff {args.diff}: {why}") from None
        found = cs.read_diff(data, args.diff)
    if policy is not None and policy.enabled and found.files:
        marks = authored.disk_marks(workspace, [f.path for f in found.files])
        found.files = authored.keep_judged(found.files, policy, marks)
        found.left_out = list(policy.left_out)
    return found

