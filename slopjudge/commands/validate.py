"""`slopjudge validate`: every problem in every rule file, one line each."""

from __future__ import annotations

import argparse
import json
import os

from slopjudge.commands._shared import add_rules_argument, fail, settings_and_rules


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rules_argument(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    settings, result = settings_and_rules(args)
    if not os.path.isdir(settings.rules_dir):
        return fail(f"no rules folder at {settings.rules_dir}")
    if args.format == "json":
        # For tools: counts that match the text summary and the load check.
        print(json.dumps({
            "ok": not result.errors,
            "loaded": len(result.rules),
            "not_loaded": len({e.path for e in result.errors}),
            "rules": [r.id for r in result.rules],
            "errors": [e.to_dict() | {"text": str(e)} for e in result.errors],
        }, indent=2, ensure_ascii=False))
    else:
        for error in result.errors:
            print(error)
        broken = len({e.path for e in result.errors})
        summary = f"{len(result.rules)} rule(s) loaded"
        if result.errors:
            summary += f"; {len(result.errors)} problem(s) in {broken} file(s)"
        print(f"slopjudge: {summary}")
    return 1 if result.errors else 0
