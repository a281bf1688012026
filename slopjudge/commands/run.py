"""`slopjudge run`: the rules on a change, as CI runs them."""

from __future__ import annotations

import argparse
import os
import re
import sys
from contextlib import closing, nullcontext

from slopjudge import report
from slopjudge.changes.sources import add_source_arguments, changeset_from_args
from slopjudge.checks import engine
from slopjudge.checks.options import options_from_settings
from slopjudge.checks.selection import applicable_rules, select_rules
from slopjudge.commands._shared import (
    UsageError,
    add_include_generated,
    add_rules_argument,
    fail,
    settings_of,
)
from slopjudge.commands.rulesfrom import RulesFrom, load, open_rules, rule_changes
from slopjudge.hooks.backstop import leave_out_policy
from slopjudge.loading.config import Settings, find_workspace
from slopjudge.loading.rulecache import load_rules_cached
from slopjudge.model import Event, LoadError, Rule, RunReport, overall_outcome
from slopjudge.records.record import recording
from slopjudge.report.text import Progress

EXIT = {"pass": 0, "refuse": 1, "needs_person": 1, "error": 2}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rules_argument(parser)
    add_source_arguments(parser)
    parser.add_argument("--event", choices=("ci", "stop"), default="ci",
                        help="run the rules whose `on` has this event (default ci)")
    parser.add_argument("--rule", metavar="ID", action="append", default=[],
                        help="run only this rule (and what its checks need); repeatable")
    parser.add_argument("--dry-run", action="store_true",
                        help="run scripts and prepares, render judge prompts, call no model")
    parser.add_argument("--prompts-dir", metavar="DIR",
                        help="with --dry-run: write each prompt here")
    parser.add_argument("--format", choices=tuple(report.FORMATS), default="text")
    parser.add_argument("--output", metavar="FILE", help="write the report here instead of stdout")
    parser.add_argument("--write", metavar="FORMAT=FILE", action="append", default=[],
                        help="also write the report in FORMAT to FILE, from the same run "
                             "(repeatable)")
    parser.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="script checks run at once, at least 1 (default: jobs from the "
                             "settings, else the CPU count); judge calls run at once up to "
                             "judge_slots (default 8)")
    parser.add_argument("--shard", metavar="I/N", help="run only shard I of N (1-based)")
    parser.add_argument("--runner", metavar="CMD", help="judge runner command (default: sr-agent "
                        "on PATH, else slopjudge-agent)")
    parser.add_argument("--no-cache", action="store_true",
                        help="ask judges again; ignore cached verdicts")
    parser.add_argument(
        "--rules-from", metavar="REV",
        help="take the rules, rubric, settings and templates from commit REV (a pull "
             "request's base); a change to them is reported as needing a person")
    add_include_generated(parser)


def parse_shard(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not m or not (1 <= int(m.group(1)) <= int(m.group(2))):
        raise UsageError(f"--shard takes I/N with 1 <= I <= N, not {text!r}")
    return int(m.group(1)), int(m.group(2))


def check_output(path: str) -> None:
    """:class:`UsageError` when the report cannot be written to ``path`` (before any check)."""
    if os.path.isdir(path):
        raise UsageError(f"--output {path}: is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"--output {path}: no folder {parent} to write it in")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise UsageError(f"--output {path}: the file is not writable")
    if not os.path.exists(path) and not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"--output {path}: the folder {parent} is not writable")


def parse_writes(values: list[str]) -> list[tuple[str, str]]:
    """``--write FORMAT=FILE`` values as (format, file); :class:`UsageError` when bad."""
    out = []
    for value in values:
        fmt, sep, path = value.partition("=")
        if not sep or not path or fmt not in report.FORMATS:
            raise UsageError("--write takes FORMAT=FILE with FORMAT one of "
                             f"{', '.join(report.FORMATS)}, not {value!r}")
        out.append((fmt, path))
    return out


def run(args: argparse.Namespace) -> int:
    writes = parse_writes(args.write)
    if args.prompts_dir and not args.dry_run:
        return fail("--prompts-dir goes with --dry-run")
    if args.jobs is not None and args.jobs < 1:
        return fail(f"--jobs takes a number of at least 1, not {args.jobs}")
    for target in filter(None, [args.output, *(path for _, path in writes)]):
        check_output(target)
    shard = parse_shard(args.shard) if args.shard else None
    if args.rules and args.rules_from is not None:
        return fail("--rules and --rules-from do not go together: the rules come from the "
                    "commit --rules-from names")
    with (nullcontext() if args.rules_from is None
          else closing(open_rules(find_workspace(os.getcwd()), args.rules_from))) as rf:
        return _run(args, writes, shard, rf)


def _run(args: argparse.Namespace, writes: list[tuple[str, str]],
         shard: tuple[int, int] | None, rf: RulesFrom | None) -> int:
    # The settings first (a small read): they say which files the change leaves out,
    # and those are left out of git's reading itself. With --rules-from, the commit's
    # settings, naming the workspace's files: none of them is ever left out.
    settings = rf.in_workspace if rf else settings_of(args)
    policy = leave_out_policy(settings, args.include_generated)
    settings, rules, load_errors, event = _rules_to_run(args, settings, rf)
    try:
        changeset = changeset_from_args(args, settings.workspace, policy)
    except OSError as exc:  # a ChangesetError the CLI says as it is
        return fail(str(exc))

    options = options_from_settings(
        settings, dry_run=args.dry_run, no_cache=args.no_cache, shard=shard,
        jobs=args.jobs or settings.jobs, runner=args.runner or settings.runner,
        prompts_dir=os.path.abspath(args.prompts_dir) if args.prompts_dir else None)
    progress = None
    if args.format == "text" and not args.output and sys.stderr.isatty():
        progress = Progress(sys.stderr, tick=0.5)
        progress.start(sum(len(r.checks) for r in rules))
    on_result = recording(settings.events_file, event, progress.advance if progress else None)
    results = engine.run(rules, event, changeset, workspace=settings.workspace, options=options,
                         on_result=on_result, on_start=progress.begin if progress else None)
    if progress:
        progress.finish()
    # A change to what decides the judging needs a person; only the first shard reports it.
    if rf is not None and (shard is None or shard[0] == 1):
        if (person := rule_changes(changeset, rf)) is not None:
            on_result(person)
            results = [person, *results]

    outcome = overall_outcome(results, load_errors, person_blocks=settings.rule_changes != "warn")
    _write(args, writes, RunReport(outcome=outcome, checks=results, load_errors=load_errors,
                                   rules=rules, left_out=changeset.left_out))
    return EXIT[outcome]


def _write(args: argparse.Namespace, writes: list[tuple[str, str]], run_report: RunReport) -> None:
    """The report in ``--format`` to ``--output`` or stdout, and to each ``--write`` file."""
    if not args.output:
        color = args.format == "text" and sys.stdout.isatty()
        text = report.render(run_report, args.format, color=color)
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    for fmt, path in ([(args.format, args.output)] if args.output else []) + writes:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(report.render(run_report, fmt))


def _rules_to_run(args: argparse.Namespace, settings: Settings, rf: RulesFrom | None
                  ) -> tuple[Settings, list[Rule], list[LoadError], Event]:
    """The settings, rules, load errors and event ``args`` ask for, else a UsageError."""
    settings, loaded = (rf.settings, load(rf)) if rf else (settings, load_rules_cached(settings))
    if not os.path.isdir(settings.rules_dir):
        raise UsageError(f"no rules folder {rf.shown(settings.rules_dir)} in {rf.rev}" if rf
                         else f"no rules folder at {settings.rules_dir}")
    # A preview rule named with --rule runs: asking for it by name enables it.
    rules = loaded.rules + [r for r in loaded.preview_off if r.id in args.rule]
    load_errors = loaded.errors
    if args.rule:
        rules, unknown = select_rules(rules, args.rule)
        if missing := [u for u in unknown if u not in {e.rule for e in loaded.errors}]:
            raise UsageError("no such rule: " + ", ".join(missing))
        chosen = set(args.rule) | {r.id for r in rules}
        load_errors = [e for e in loaded.errors if e.rule in chosen or e.rule is None]
    event = Event(kind=args.event, cwd=os.getcwd())
    return settings, applicable_rules(rules, event), load_errors, event
