"""``slopjudge uninstall claude|codex``: remove exactly what ``slopjudge install`` wrote
(docs/uninstall.md). Codex's trust entries stay in ``config.toml``, naming hooks now gone."""

from __future__ import annotations

import argparse
import os

from slopjudge.commands._shared import fail
from slopjudge.commands.install import uninstall
from slopjudge.harnesses.registry import HARNESSES
from slopjudge.loading.config import find_workspace


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("harness", choices=sorted(HARNESSES),
                        help="the agent to remove slopjudge's hooks from")
    parser.add_argument("--workspace", metavar="DIR", help="repository to uninstall from "
                        "(default: the one holding the current directory)")


def run(args: argparse.Namespace) -> int:
    workspace = os.path.abspath(args.workspace) if args.workspace else find_workspace(os.getcwd())
    try:
        removed, touched = uninstall(workspace, args.harness)
    except OSError as exc:
        return fail(f"could not uninstall: {exc.strerror or exc}: {exc.filename or workspace}")
    if not removed and not touched:
        print(f"slopjudge: no slopjudge hooks for {args.harness} in {workspace}; nothing changed")
        return 0
    print(f"slopjudge: removed {removed} hook{'' if removed == 1 else 's'} for {args.harness}; "
          "changed: " + ", ".join(os.path.relpath(p, workspace) for p in touched))
    return 0
