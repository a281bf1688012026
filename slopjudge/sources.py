"""Changeset source flags shared by `run`, `payload` and `test`."""

from __future__ import annotations

import argparse
import sys

from .model import Changeset


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


def changeset_from_args(args: argparse.Namespace, workspace: str) -> Changeset:
    """Raises ChangesetError or OSError with a one-line message."""
    from . import changeset as cs

    if args.head and not args.base:
        raise cs.ChangesetError("--head goes with --base")
    if args.diff:
        if args.diff == "-":
            return cs.read_diff(sys.stdin.buffer.read(), "<stdin>")
        try:
            with open(args.diff, "rb") as fh:
                data = fh.read()
        except FileNotFoundError:
            raise cs.ChangesetError(f"--diff {args.diff}: no such file") from None
        except IsADirectoryError:
            raise cs.ChangesetError(
                f"--diff {args.diff}: is a directory, not a diff file") from None
        except OSError as exc:
            raise cs.ChangesetError(f"--diff {args.diff}: cannot read it: "
                                    f"{exc.strerror or exc}") from None
        return cs.read_diff(data, args.diff)
    if args.base:
        return cs.from_git_range(workspace, args.base, args.head or "HEAD")
    if args.staged:
        return cs.from_staged(workspace)
    return cs.from_working_tree(workspace)
