"""`slopjudge replay`: each distinct recorded judge prompt re-judged through another runner
and compared, to try a cheaper model on real traffic before switching (docs/records.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from slopjudge.commands._shared import fail, settings_of
from slopjudge.judging.runner.client import build_argv, call_runner, resolve_runner
from slopjudge.judging.verifier import verifier_path
from slopjudge.records.agreement import compare, not_verdicts, verdict
from slopjudge.records.record import load_prompt, read_events


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", metavar="FILE", help="the event log (default: the workspace's)")
    parser.add_argument("--runner", metavar="CMD", required=True,
                        help="the runner to re-judge with")
    parser.add_argument("--model", metavar="SET",
                        help="model set for the replay (default: as recorded)")
    parser.add_argument("--rule", metavar="ID", action="append", default=[], help="only this rule")
    parser.add_argument("--limit", type=int, default=0, metavar="N", help="at most N prompts")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="S", help="per call (s)")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    events_file = args.events or settings.events_file
    if not os.path.isfile(events_file):
        return fail(f"no event log at {events_file}")
    events, problems = read_events(events_file)
    for problem in problems:
        print(f"slopjudge: skipping {problem}", file=sys.stderr)

    judges = [e for e in events if e.get("kind") == "judge"
              and (not args.rule or e.get("rule") in args.rule)]
    # One replay per distinct prompt: its latest verdict.
    latest = {e["prompt_sha256"]: e for e in judges
              if verdict(e) is not None and e.get("prompt_sha256")}
    if skipped := not_verdicts(judges):
        print(f"slopjudge: skipped {skipped} recorded judge outcome(s) that are not verdicts "
              "(the judge could not decide)", file=sys.stderr)
    items = list(latest.values())[: args.limit if args.limit > 0 else None]
    if not items:
        return fail("no recorded judge verdict with a kept prompt to replay")

    runner = resolve_runner(args.runner)
    rows: list[dict[str, Any]] = []
    for ev in items:  # each judged again: its row of the comparison
        row = {"id": ev.get("id"), "recorded": verdict(ev), "replayed": None,
               "reason": "the prompt was not kept"}
        if (prompt := load_prompt(events_file, ev["prompt_sha256"])) is not None:
            argv = build_argv(runner, model=args.model or ev.get("model") or "size-md",
                              verifier=verifier_path(), allowed_tools=[], disallowed_tools=[],
                              readonly_dir=settings.workspace)
            out = call_runner(argv, prompt, cwd=settings.workspace, timeout=args.timeout,
                              launched_by=str(ev.get("id")), min_confidence=None, retries=0)
            row["replayed"] = None if out.verdict is None else ("pass" if out.passed else "refuse")
            row["reason"] = out.reason
        rows.append(row)
    judged = [r for r in rows if r["replayed"] is not None]
    # The replayed verdicts against the recorded ones: a false refusal is a new refusal.
    found = compare([r["replayed"] for r in judged], [r["recorded"] for r in judged])
    summary = {"prompts": len(rows), "replayed": len(judged),
               "no_verdict": len(rows) - len(judged), "skipped_records": skipped,
               "agreement": found.accuracy, "kappa": found.kappa,
               "new_refusals": found.false_refusals, "new_passes": found.false_passes}
    if args.format == "json":
        print(json.dumps({"summary": summary, "rows": rows}, indent=2))
    else:
        for r in rows:
            same = r["recorded"] == r["replayed"]
            why = f" ({r['reason']})" if not same and r["reason"] else ""
            print(f"{'same' if same else 'DIFF'} {r['id']}: recorded {r['recorded']}, "
                  f"replayed {r['replayed'] or 'no verdict'}{why}")
        print(f"replayed {summary['replayed']}/{summary['prompts']} prompts: agreement "
              f"{summary['agreement']:.2f}, kappa {summary['kappa']:.2f}, "
              f"{summary['new_refusals']} new refusals, {summary['new_passes']} new passes")
    if not judged:
        return fail(f"nothing was replayed: {len(rows)} prompt(s), no new verdict")
    return 0
