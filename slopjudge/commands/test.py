"""`slopjudge test`: run every rule's fixture cases and report coverage."""

from __future__ import annotations

import argparse
import filecmp
import json
import os
from dataclasses import asdict

from slopjudge.checks.options import options_from_settings
from slopjudge.commands._shared import add_rules_argument, fail, settings_and_rules
from slopjudge.model import Rule
from slopjudge.resources import DATA_DIR
from slopjudge.testing import run_tests


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rules_argument(parser)
    parser.add_argument("--cases", metavar="DIR",
                        help="the cases folder (default: tests/rules/ in the workspace)")
    parser.add_argument("--rule", metavar="ID", action="append", default=[],
                        help="only this rule's cases; repeatable")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument("--strict", action="store_true",
                        help="also fail when a rule lacks a refusing or a passing case")


def run(args: argparse.Namespace) -> int:
    settings, loaded = settings_and_rules(args)
    if not os.path.isdir(settings.rules_dir):
        return fail(f"no rules folder at {settings.rules_dir}")
    # A preview rule's cases are tested too: being off by default is no reason to break.
    rules = sorted([*loaded.rules, *loaded.preview_off], key=lambda r: r.id)
    cases_dir = os.path.abspath(args.cases) if args.cases else os.path.join(
        settings.workspace, "tests", "rules")
    if args.rule:
        known = {r.id for r in rules} | {e.rule for e in loaded.errors if e.rule}
        if missing := [r for r in args.rule if r not in known]:
            return fail("no such rule: " + ", ".join(missing))
    cases = run_tests(rules, cases_dir, options_from_settings(settings), args.rule or None)
    load_errors = [str(e) for e in loaded.errors]
    # The rules each kind of case covers; unchanged copies of the pack are covered by its own.
    packaged = _unchanged_packaged(rules, settings.rules_dir)
    ids = [r.id for r in rules if (not args.rule or r.id in args.rule) and r.id not in packaged]
    covered = {(c.rule, c.expected) for c in cases if not c.skipped}
    lacking = {word: [i for i in ids if (i, want) not in covered]
               for word, want in (("refusing", "refuse"), ("passing", "pass"))}
    ok = all(c.ok for c in cases) and not load_errors and not (
        args.strict and any(lacking.values()))
    if args.format == "json":
        print(json.dumps({
            "ok": ok,
            "cases": [{k: v for k, v in asdict(c).items() if k != "unreadable"} for c in cases],
            **{f"lacking_{word}_case": ids for word, ids in lacking.items()},
            "load_errors": load_errors,
            "tested_by_package": sorted(packaged),
        }, indent=2))
    else:
        for err in load_errors:
            print(err)
        for c in cases:
            mark = "skip" if c.skipped else "ok  " if c.ok else "FAIL"
            print(f"{mark} {c.rule}/{c.case} (expect {c.expected}, got {c.actual})")
            for problem in c.problems:
                print(f"       {problem}")
        for word, ids in lacking.items():
            if ids:
                print(f"rules with no {word} case: " + ", ".join(ids))
        if packaged:
            print(f"{len(packaged)} rule(s) are unchanged copies of the default pack, tested by "
                  "slopjudge's own cases; add cases under tests/rules/ once you change one")
        failed = sum(not c.ok for c in cases)
        skipped = sum(c.skipped for c in cases)
        print(f"{len(cases) - failed - skipped} passed, {failed} failed"
              + (f", {skipped} not run" if skipped else ""))
    if any(c.unreadable for c in cases):
        return 2  # a fixture that cannot be read is bad input, not a rule failing its case
    return 0 if ok else 1


def _same_tree(a: str, b: str) -> bool:
    """Whether two folders hold the same files, byte for byte, caches left out."""
    cmp = filecmp.dircmp(a, b, ignore=["__pycache__"])
    _same, differ, odd = filecmp.cmpfiles(a, b, cmp.common_files, shallow=False)
    return not (cmp.left_only or cmp.right_only or cmp.common_funny or differ or odd) and all(
        _same_tree(os.path.join(a, d), os.path.join(b, d)) for d in cmp.common_dirs)


def _unchanged_packaged(rules: list[Rule], rules_dir: str) -> set[str]:
    """Ids of the rules that are byte-for-byte copies of the pack's (``_lib`` too), which its
    own cases test; never of the packaged folder itself, whose cases this run checks."""
    pack = os.path.join(DATA_DIR, "rules")
    if not os.path.isdir(pack) or os.path.realpath(rules_dir) == os.path.realpath(pack):
        return set()
    try:
        if not _same_tree(os.path.join(rules_dir, "_lib"), os.path.join(pack, "_lib")):
            return set()
        return {r.id for r in rules
                if os.path.isdir(os.path.join(pack, r.id))
                and os.path.realpath(r.dir) == os.path.realpath(os.path.join(rules_dir, r.id))
                and _same_tree(r.dir, os.path.join(pack, r.id))}
    except OSError:
        return set()  # unreadable: counted as the person's own rule
