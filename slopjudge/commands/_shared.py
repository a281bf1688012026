"""Small pieces several commands share: finding the workspace, loading rules."""

from __future__ import annotations

import os
import sys

from slopjudge.errors import SlopjudgeError

TYPE_CHECKING = False  # not typing's: a CI run of a docs-only commit never imports it
if TYPE_CHECKING:
    import argparse

    from slopjudge.loading.config import Settings
    from slopjudge.model import LoadResult


def add_rules_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--rules", metavar="DIR",
        help="the rules folder (default: rules_dir from slopjudge.yaml or pyproject, else rules/)",
    )


def settings_of(args: argparse.Namespace) -> Settings:
    from slopjudge.loading.config import find_workspace, load_settings

    rules_dir = getattr(args, "rules", None)
    if rules_dir:
        rules_dir = os.path.abspath(rules_dir)
    return load_settings(find_workspace(os.getcwd()), rules_dir)


def settings_and_rules(args: argparse.Namespace,
                       settings: Settings | None = None) -> tuple[Settings, LoadResult]:
    from slopjudge.loading.rulecache import load_rules_cached

    settings = settings or settings_of(args)
    return settings, load_rules_cached(settings)


def add_include_generated(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--include-generated", action="store_true",
                        help="judge every file of the change, installed and generated ones "
                             "too (see exclude_generated in the settings)")


def fail(message: str, code: int = 2) -> int:
    print(f"slopjudge: {message}", file=sys.stderr)
    return code


class UsageError(SlopjudgeError, ValueError):
    """Flags that do not go together or a value slopjudge cannot use: the CLI says
    ``slopjudge: <message>`` and exits 2, as :func:`fail` does."""


NOT_IN_GIT = ("is not in a git repository. slopjudge judges changes against git: the hooks "
              "compare the work tree with the commit a session started from, and `run` "
              "compares commits. Run `git init` there (and commit what is there), then run "
              "this again")


def git_top(folder: str) -> str | None:
    """The top level of the git repository holding ``folder``, or None outside one."""
    from slopjudge.loading.config import find_workspace

    top = find_workspace(folder)
    return top if os.path.exists(os.path.join(top, ".git")) else None
