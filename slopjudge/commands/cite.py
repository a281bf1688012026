"""`slopjudge cite`: the agent cites what it relies on (docs/sloprail.md). Nothing is stored:
the call, in the session's transcript, is the record rules resolve (changes/citations.py);
``--transcript`` resolves it now. No quote is printed: tool output is a pool they resolve in."""

from __future__ import annotations

import argparse
import os
import sys

from slopjudge.changes.citations import _Record, parse_cite
from slopjudge.commands._shared import fail


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", action="append", default=[], metavar="QUOTE",
                        help="the person's own words, exactly as they wrote them")
    parser.add_argument("--tool-result", action="append", default=[], metavar="QUOTE",
                        help="a tool's output, exactly as it printed it")
    parser.add_argument("--any", action="append", default=[], metavar="QUOTE",
                        help="either of the two")
    parser.add_argument("--path", action="append", default=[], metavar="FILE",
                        help="a file this grounds (repeatable)")
    parser.add_argument("--transcript", metavar="JSONL",
                        help="check the quotes against this session transcript now")


def run(args: argparse.Namespace) -> int:
    # Back to the words an agent's call has, for the one parser of them (the transcript's).
    given = (("--user", args.user), ("--tool-result", args.tool_result), ("--any", args.any),
             ("--path", args.path))
    argv = ["slopjudge", "cite", *(w for flag, values in given for v in values for w in (flag, v))]
    try:
        parsed = parse_cite(argv)
    except ValueError as exc:
        return fail(str(exc))
    assert parsed is not None
    quotes, paths = parsed
    where = f" for {', '.join(paths)}" if paths else ""
    if not args.transcript:
        print(f"slopjudge: {len(quotes)} citation(s){where} noted; rules resolve them "
              "against this session's transcript")
        return 0
    if not os.path.isfile(args.transcript):
        return fail(f"no transcript at {args.transcript}")
    record = _Record(args.transcript)
    bad = 0
    for n, (quote, pools) in enumerate(quotes, 1):
        found = record.resolve(quote, pools, None)
        if "problem" in found:
            bad += 1
            print(f"citation {n} ({','.join(pools)}) {found['problem']}", file=sys.stderr)
        else:
            print(f"citation {n}: resolves in {','.join(found['sourceTypes'])} at line "
                  f"{found['line']}{where}")
    return 1 if bad else 0
