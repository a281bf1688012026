"""``slopjudge hook <point>`` as parsed (``--help``, odd spellings): the CLI normally goes
straight to :func:`slopjudge.hooks.main_fast`."""

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
