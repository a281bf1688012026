"""Small pieces several commands share: finding the workspace, loading rules."""

from __future__ import annotations

import argparse
import os
import sys

from slopjudge.errors import SlopjudgeError
from slopjudge.loading.config import Settings, find_workspace, load_settings
from slopjudge.loading.rulecache import load_rules_cached
from slopjudge.model import LoadResult


def add_rules_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rules", metavar="DIR", help="the rules folder (default: rules_dir "
                        "from slopjudge.yaml or pyproject, else rules/)")


def settings_of(args: argparse.Namespace) -> Settings:
    return load_settings(find_workspace(os.getcwd()), getattr(args, "rules", None))


def settings_and_rules(args: argparse.Namespace) -> tuple[Settings, LoadResult]:
    settings = settings_of(args)
    return settings, load_rules_cached(settings)


def add_include_generated(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--include-generated", action="store_true",
                        help="judge every file of the change, installed and generated ones "
                             "too (see exclude_generated in the settings)")


def fail(message: str) -> int:
    print(f"slopjudge: {message}", file=sys.stderr)
    return 2


class UsageError(SlopjudgeError, ValueError):
    """Flags that do not go together or a value slopjudge cannot use: exit 2, as :func:`fail`."""


def require_git(folder: str, not_done: str) -> None:
    """:class:`UsageError` saying ``not_done`` when ``folder`` is in no git repository."""
    if not os.path.exists(os.path.join(find_workspace(folder), ".git")):
        raise UsageError(f"{folder} is not in a git repository. slopjudge judges changes "
                         "against git: the hooks compare the work tree with the commit a "
                         "session started from, and `run` compares commits. Run `git init` "
                         f"there (and commit what is there), then run this again; {not_done}")
