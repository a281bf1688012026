"""`slopjudge validate`: every problem in every rule file, one line each."""

from __future__ import annotations

import argparse
import json
import os

from slopjudge.commands._shared import add_rules_argument, fail, settings_and_rules
from slopjudge.model import asdict


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rules_argument(parser)
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    settings, result = settings_and_rules(args)
    if not os.path.isdir(settings.rules_dir):
        return fail(f"no rules folder at {settings.rules_dir}")
    all_rules = sorted([*result.rules, *result.preview_off], key=lambda r: r.id)
    unknown = sorted(set(settings.preview if isinstance(settings.preview, list) else [])
                     - {r.id for r in all_rules if r.preview})
    broken = len({e.path for e in result.errors})
    if args.format == "json":
        # For tools: counts that match the text summary and the load check.
        print(json.dumps({
            "ok": not result.errors,
            "loaded": len(all_rules),
            "not_loaded": broken,
            "rules": [r.id for r in all_rules],
            "preview_off": [r.id for r in result.preview_off],
            "status": {r.id: {"preview": r.preview, "on": r in result.rules,
                              "why": r.status_why()} for r in all_rules},
            "errors": [asdict(e) | {"text": str(e)} for e in result.errors],
        }, indent=2, ensure_ascii=False))
    else:
        for error in result.errors:
            print(error)
        for rule in (r for r in all_rules if r.preview):
            print(f"preview ({'on' if rule in result.rules else 'off'}): {rule.id}: "
                  f"{rule.status_why()}")
        for rule_id in unknown:
            print(f"slopjudge: `preview` names {rule_id}, which is no preview rule here")
        if result.preview_off:
            print(f"slopjudge: {len(result.preview_off)} preview rule(s) off; enable them with "
                  "`preview:` in slopjudge.yaml (`slopjudge rules` says why they are preview)")
        problems = f"; {len(result.errors)} problem(s) in {broken} file(s)" if result.errors else ""
        print(f"slopjudge: {len(all_rules)} rule(s) loaded{problems}")
    return 1 if result.errors or unknown else 0
