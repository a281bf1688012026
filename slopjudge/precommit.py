"""``slopjudge-pre-commit``, the ``slopjudge`` hook of ``.pre-commit-hooks.yaml``: ``slopjudge
run`` on the index, or on the range pre-commit names (docs/ci.md). No judge is asked without
``--judges``: a commit should not need model credentials unless the repository says so."""

from __future__ import annotations

import os
import sys


def run_args(argv: list[str], environ: dict[str, str] | os._Environ[str]) -> list[str]:
    """The ``slopjudge`` argument list for the hook's own ``argv``."""
    args = [a for a in argv if a != "--judges"]
    if "--judges" not in argv and "--dry-run" not in args:
        args.append("--dry-run")
    source = ("--diff", "--base", "--staged", "--working-tree")
    if not any(a == s or a.startswith(s + "=") for a in args for s in source):
        base = environ.get("PRE_COMMIT_FROM_REF") or environ.get("PRE_COMMIT_SOURCE")
        head = environ.get("PRE_COMMIT_TO_REF") or environ.get("PRE_COMMIT_ORIGIN")
        args += ["--base", base, "--head", head] if base and head else ["--staged"]
    return ["run", *args]


def main(argv: list[str] | None = None) -> int:
    from slopjudge.cli import main as slopjudge

    return slopjudge(run_args(sys.argv[1:] if argv is None else list(argv), os.environ),
                     owns_process=argv is None)  # the command itself, as `slopjudge` is


if __name__ == "__main__":
    sys.exit(main())
