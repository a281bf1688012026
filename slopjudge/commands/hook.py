"""``slopjudge hook <point>`` parsed (``--help``, odd spellings); the CLI's fast path skips it."""

from __future__ import annotations

import argparse

from slopjudge.hooks import POINTS, main_fast


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("point", choices=POINTS,
                        help="the hook point; the harness's JSON payload is read from stdin")
    parser.add_argument("--harness", default=None,
                        help="the agent calling (claude, the default, or codex): the answer "
                             "is written in its form")


def run(args: argparse.Namespace) -> int:
    return main_fast(args.point, args.harness)
