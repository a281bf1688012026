"""``slopjudge-pre-commit``: the entry of the ``slopjudge`` hook in ``.pre-commit-hooks.yaml``.

``slopjudge run`` on what the commit would add: the index against HEAD, or
the range pre-commit names (``pre-commit run --from-ref A --to-ref B``, the
pre-push stage). Judges are rendered but not asked unless the hook's
``args`` say ``--judges``: a commit should not need model credentials or wait
on a model unless the repository asks for it. Every other argument goes to
``slopjudge run`` as it is (``--rule``, ``--jobs``, ``--format`` ...).
"""

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

    return slopjudge(run_args(sys.argv[1:] if argv is None else list(argv), os.environ))


if __name__ == "__main__":
    sys.exit(main())
