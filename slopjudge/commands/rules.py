"""`slopjudge rules`: every rule, stable or preview, on or off, and why."""

from __future__ import annotations

import argparse
import json

from slopjudge.commands._shared import add_rules_argument, settings_and_rules


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rules_argument(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    _settings, result = settings_and_rules(args)
    rows = [{"id": r.id, "status": "preview" if r.preview else "stable",
             "on": r in result.rules, "why": r.status_why(), "description": r.description}
            for r in sorted([*result.rules, *result.preview_off], key=lambda r: r.id)]
    if args.format == "json":
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    else:
        width = max((len(r.id) for r in [*result.rules, *result.preview_off]), default=0)
        for r in rows:
            print(f"{r['id']:{width}}  {r['status']:7}  {'on ' if r['on'] else 'off'}  {r['why']}")
        if any(not r["on"] for r in rows):
            print("preview rules are off unless slopjudge.yaml enables them: `preview: true`, "
                  "or `preview: [rule-id, ...]`")
    for error in result.errors:
        print(error)
    return 1 if result.errors else 0
