"""`slopjudge payload`: print exactly the JSON a rule's scripts receive."""

from __future__ import annotations

import argparse
import os

from slopjudge.changes.sources import add_source_arguments, changeset_from_args
from slopjudge.commands._shared import (
    add_include_generated,
    add_rules_argument,
    fail,
    settings_and_rules,
)
from slopjudge.hooks.backstop import leave_out_policy
from slopjudge.model import Event
from slopjudge.payload import dumps_readable, for_rule


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rules_argument(parser)
    add_source_arguments(parser)
    parser.add_argument("--event", choices=("ci", "stop", "subagent-stop"), default="ci")
    parser.add_argument("--rule", metavar="ID", help="filter files by this rule's paths/exclude")
    parser.add_argument("--check", metavar="ID", help="the check id to put in the payload")
    add_include_generated(parser)


def run(args: argparse.Namespace) -> int:
    settings, loaded = settings_and_rules(args)
    try:
        changeset = changeset_from_args(args, settings.workspace,
                                        leave_out_policy(settings, args.include_generated))
    except OSError as exc:  # a ChangesetError the CLI says as it is
        return fail(str(exc))
    rule = next((r for r in loaded.rules if r.id == args.rule), None)
    if args.rule and rule is None:
        if problems := [str(e) for e in loaded.errors if e.rule == args.rule]:
            return fail(f"rule {args.rule} does not load: " + "; ".join(problems))
        return fail(f"no rule {args.rule} in {settings.rules_dir}")
    check_id = args.check or (rule.checks[0].id if rule and rule.checks else None)
    # The engine's own per-rule step, so this prints exactly what a check receives.
    event = Event(kind=args.event, cwd=os.getcwd())
    _, payload = for_rule(event=event, workspace=settings.workspace, changeset=changeset,
                          rule=rule, check_id=check_id)
    print(dumps_readable(payload))
    return 0
