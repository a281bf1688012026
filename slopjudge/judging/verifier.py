"""``slopjudge-verify``: the answer checker the judge runner calls after each attempt
(sr-agent's ``--verify``; arguments, exit codes and stderr lines: SPEC §5). With
``SLOPJUDGE_MIN_CONFIDENCE`` set, a pass without ``confidence`` is malformed (asked again);
one below the threshold is accepted here, so slopjudge, which applies it, can tell an unsure
pass from a refusal."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

from slopjudge.fsutil import read_or, write_atomic
from slopjudge.judging.verdict import parse_verdict


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    raw = b"" if sys.stdin.isatty() else sys.stdin.buffer.read()
    if not raw and args:  # some runners give only the path: read the file then
        raw = read_or(args[0], b"")
    try:
        verdict, problem = parse_verdict(raw.decode("utf-8"))
    except UnicodeDecodeError:
        verdict, problem = None, "the answer is not UTF-8 text"
    if (verdict is not None and verdict["pass"] is True and "confidence" not in verdict
            and os.environ.get("SLOPJUDGE_MIN_CONFIDENCE", "").strip()):
        verdict, problem = None, ('the verdict lacks "confidence" (a number from 0 to 1), '
                                  "which this check requires")
    if verdict is None:
        print(f"JUDGE-REASON: {' '.join(problem.split())}", file=sys.stderr)
        return 1  # malformed: the runner asks again
    reasoning = verdict.get("reasoning", "")
    if verdict["pass"] is True:
        if reasoning:
            print(f"JUDGE-PASS-REASON-JSON: {json.dumps(reasoning)}", file=sys.stderr)
        return 0
    print(f"JUDGE-REASON-JSON: {json.dumps(reasoning)}", file=sys.stderr)
    return 3  # a refusal: final


def _installed(name: str = "slopjudge-verify") -> str | None:
    """The console script ``name`` installed beside this Python, if there is one."""
    # Joined, not which(path=...): a folder name holding ":" would split into relative parts.
    candidate = os.path.join(os.path.dirname(sys.executable), name)
    return candidate if os.path.isfile(candidate) and os.access(candidate, os.X_OK) else None


def verifier_path() -> str:
    """An absolute path to an executable verifier for the runner's ``--verify``."""
    if installed := _installed():
        return installed
    script = f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m slopjudge.judging.verifier "$@"\n'
    import hashlib

    tag = hashlib.sha256(script.encode()).hexdigest()[:12]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    for root in (Path(cache) / "slopjudge" / "bin",
                 Path(tempfile.gettempdir()) / f"slopjudge-{os.getuid()}" / "bin"):
        target = root / f"slopjudge-verify-{tag}"
        with contextlib.suppress(OSError):  # this folder cannot hold it: the next one
            if target.is_file() and target.read_text() == script and os.access(target, os.X_OK):
                return str(target)
            write_atomic(str(target), script, mode=0o755)
            return str(target)
    raise RuntimeError("cannot write the slopjudge verifier wrapper to any cache folder")


if __name__ == "__main__":
    sys.exit(main())
