"""`slopjudge report events|agreement|flips|cost|html`: read the event log (docs/records.md).
Lines that do not parse (a run killed mid-write can leave one) are named and skipped."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

from slopjudge.commands._shared import fail, settings_of
from slopjudge.fsutil import write_atomic
from slopjudge.loading.config import ensure_state_ignored, find_workspace
from slopjudge.records.agreement import agreement, flips, read_labels
from slopjudge.records.costreport import cost_report, number, render_cost
from slopjudge.records.record import read_events
from slopjudge.report import OUTCOMES, encodable, first_line
from slopjudge.report.html import DEFAULT_LINK, render


def _add_common(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument("--events", metavar="FILE", default=default,
                        help="the event log (default: events_file from the settings, "
                             "SLOPJUDGE_EVENTS_FILE, else .slopjudge/events.jsonl)")
    parser.add_argument("--format", choices=("text", "json"), default=default if default is
                        argparse.SUPPRESS else "text", help="text (default) or json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    # Common flags go before or after the subcommand: SUPPRESS keeps one given before.
    _add_common(parser, None)
    sub = parser.add_subparsers(dest="report_command", metavar="{" + ",".join(_SUBCOMMANDS) + "}")
    subs = {name: sub.add_parser(name, help=text) for name, (text, _) in _SUBCOMMANDS.items()}
    for p in subs.values():
        _add_common(p, argparse.SUPPRESS)
    subs["events"].add_argument("--last", type=int, default=0, metavar="N",
                                help="also list the last N events")
    subs["events"].add_argument("--rule", action="append", default=[], metavar="ID",
                                help="only this rule; repeatable")
    for name in ("events", "cost"):
        subs[name].add_argument("--session", metavar="ID", help="only this session's events")
    subs["agreement"].add_argument(
        "--labels", metavar="FILE", required=True,
        help='labels.jsonl: {"prompt_sha256" | "id" | "rule"+"check", "label": "pass"|"refuse"}')
    html = subs["html"]
    html.add_argument("--output", "-o", metavar="FILE",
                      help="where to write the page (default: report.html in slopjudge's "
                           "state folder, .slopjudge/, which git ignores: a page in the work "
                           "tree would be judged as part of the change)")
    html.add_argument("--labels", metavar="FILE",
                      help="labels.jsonl (as for `agreement`): adds the agreement matrices")
    html.add_argument("--link", metavar="TEMPLATE", default=None,
                      help="the link of a finding, with {path}, {abspath} and {line} (for "
                           "example https://github.com/o/r/blob/main/{path}#L{line}); "
                           "default: file://{abspath}")


def escaped_surrogates(value: Any) -> Any:
    """``value`` with each lone surrogate a rule's script printed (``"\ud800"``, kept as is
    in the log) written as its escape: text a report can write, each apart from another.
    A tuple comes back a list: a reader's (values, problems) is escaped whole."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, (list, tuple)):
        return [escaped_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {escaped_surrogates(k): escaped_surrogates(v) for k, v in value.items()}
    return value


def run(args: argparse.Namespace) -> int:
    path = args.events or settings_of(args).events_file
    if not os.path.isfile(path):
        return fail(f"{path}: no event log yet (runs record one; set --events FILE)")
    events, problems = escaped_surrogates(read_events(path))
    for problem in problems:
        print(f"slopjudge: skipped {problem}", file=sys.stderr)
    session = getattr(args, "session", None)  # events and cost take --session
    events = [e for e in events if not session or e.get("session_id") == session]
    _help, command = _SUBCOMMANDS[getattr(args, "report_command", None) or "events"]
    return command(args, path, events, problems)


def _html(args: argparse.Namespace, path: str, events: list[dict[str, Any]],
          _problems: list[str]) -> int:
    labels = None
    if args.labels:
        try:
            labels, problems = escaped_surrogates(read_labels(args.labels))
        except OSError as exc:
            return fail(f"{args.labels}: cannot read the labels: {exc.strerror or exc}")
        for problem in problems:
            print(f"slopjudge: skipped {problem}", file=sys.stderr)
    link = args.link or DEFAULT_LINK
    try:
        link.format(path="p", abspath="/p", line=1)
    except (KeyError, IndexError, ValueError) as exc:
        return fail(f"--link {link!r}: use only {{path}}, {{abspath}} and {{line}} ({exc!r})")
    page = render(events, labels=labels, link=link,
                  workspace=find_workspace(os.getcwd()), source=path)
    output = args.output
    if output is None:
        state = settings_of(args).state_dir
        output = os.path.relpath(os.path.join(state, "report.html"))
        ensure_state_ignored(state)  # creates the folder; never raises
    try:
        # A lone surrogate a script printed (JSON's "\ud800") is kept in the log, not here.
        write_atomic(output, page.encode("utf-8", "replace"))
    except OSError as exc:
        return fail(f"{output}: cannot write the report: {exc.strerror or exc}")
    print(f"slopjudge: wrote {output} ({len(events)} events)")
    return 0


# The log records no not_applicable outcome: a check that did not apply did not run.
_OUTCOME_COLUMNS = tuple(o for o in OUTCOMES if o != "not_applicable")


def _events(args: argparse.Namespace, path: str, events: list[dict[str, Any]],
            problems: list[str]) -> int:
    rules = set(getattr(args, "rule", []))  # none without the subcommand
    chosen = [e for e in events if not rules or e.get("rule") in rules]
    per_check: dict[str, list[dict[str, Any]]] = {}
    for event in chosen:
        key = str(event.get("id") or f"{event.get('rule')}/{event.get('check')}")
        per_check.setdefault(key, []).append(event)
    checks: list[dict[str, Any]] = [{
        "id": key,
        "runs": len(group),
        "outcomes": dict(Counter(str(e.get("outcome")) for e in group)),
        "mean_duration_ms": round(sum(number(e.get("duration_ms")) for e in group) / len(group)),
        "cache_hits": sum(e.get("cache_hit") is True for e in group),
        "tokens": sum(int(number(e.get("tokens"))) for e in group),
        "cost": round(sum(float(number(e.get("cost"))) for e in group), 6),
    } for key, group in sorted(per_check.items())]
    recent = chosen[-last:] if (last := getattr(args, "last", 0)) > 0 else []
    times = [e["time"] for e in chosen if isinstance(e.get("time"), str)]
    summary = {"file": path, "events": len(chosen), "problems": problems,
               "first": min(times, default=None), "last": max(times, default=None),
               "checks": checks, "recent": recent}
    span = f", {summary['first']} to {summary['last']}" if times else ""
    lines = [f"{path}: {len(chosen)} events{span}"]
    if problems:
        lines.append(f"  ({len(problems)} unreadable lines skipped)")
    if checks:
        width = max(len("check"), *(len(c["id"]) for c in checks))
        outcomes = "".join(f"  {o}" for o in _OUTCOME_COLUMNS)
        lines += ["", f"{'check'.ljust(width)}  {'runs':>5}{outcomes}  {'mean time':>10}  "
                      f"{'cached':>6}"]
        for c in checks:
            counts = "".join(f"  {c['outcomes'].get(o, 0):>{len(o)}}" for o in _OUTCOME_COLUMNS)
            lines.append(f"{c['id'].ljust(width)}  {c['runs']:>5}{counts}  "
                         f"{str(c['mean_duration_ms']) + ' ms':>10}  {c['cache_hits']:>6}")
    if recent:
        lines += ["", f"last {len(recent)} events:"]
        for e in recent:
            lines.append(f"  {e.get('time')}  {e.get('event')}  {e.get('outcome')}  "
                         f"{e.get('id') or e.get('rule')}  {first_line(e.get('reason'))}".rstrip())
    return _said(args, summary, "\n".join(lines))


def _agreement(args: argparse.Namespace, path: str, events: list[dict[str, Any]],
               _problems: list[str]) -> int:
    try:
        labels, label_problems = escaped_surrogates(read_labels(args.labels))
    except OSError as exc:
        return fail(f"{args.labels}: cannot read labels: {exc.strerror or exc}")
    for problem in label_problems:
        print(problem, file=sys.stderr)
    if label_problems:
        return fail(f"{len(label_problems)} unusable label line(s) in {args.labels}; "
                    "fix them first")
    result = agreement(events, labels)
    # Nothing compared is no measurement: say so in the exit status too.
    code = 0 if result.n else 2
    lines = [f"{args.labels}: {len(labels)} labels, {result.n} matched a recorded verdict"
             + (f", {result.missing} with none" if result.missing else "")]
    if result.skipped:
        lines.append(f"  skipped {result.skipped} judge record(s) that are not verdicts "
                     "(the judge could not decide: runner errors, timeouts, no verdict)")
    if result.n:
        lines += [
            f"  accuracy        {result.accuracy:.3f}",
            f"  Cohen's kappa   {result.kappa:.3f}",
            f"  false refusals  {result.false_refusals}  (slopjudge refused, label pass)",
            f"  false passes    {result.false_passes}  (slopjudge passed, label refuse)",
            "",
            f"  {'':16}{'label pass':>12}{'label refuse':>14}",
            f"  {'verdict pass':16}{result.true_passes:>12}{result.false_passes:>14}",
            f"  {'verdict refuse':16}{result.false_refusals:>12}{result.true_refusals:>14}",
        ]
    else:
        lines.append("  no label matched a recorded verdict: nothing to compare")
    return _said(args, {"events": path, "labels": args.labels, **result.to_dict()},
                 "\n".join(lines), code)


def _flips(args: argparse.Namespace, path: str, events: list[dict[str, Any]],
           _problems: list[str]) -> int:
    found = flips(events)
    lines = [f"{path}: {len(found)} check/prompt pair(s) changed verdict" if found
             else f"{path}: no check changed its verdict for the same prompt"]
    for flip in found:
        lines.append(f"\n{flip['id']}  prompt {flip['prompt_sha256'][:12]}: "
                     f"{flip['passes']} pass, {flip['refusals']} refuse")
        for v in flip["verdicts"]:
            where = "  ".join(f"{k} {v[k]}" for k in ("model", "session_id") if v.get(k))
            cached = "  (cached)" if v.get("cache_hit") else ""
            lines.append(f"  {v.get('time')}  {str(v['outcome']):<12}  {where}{cached}  "
                         f"{first_line(v.get('reason'))}".rstrip())
    return _said(args, {"events": path, "flips": found}, "\n".join(lines))


def _cost(args: argparse.Namespace, path: str, events: list[dict[str, Any]],
          _problems: list[str]) -> int:
    report = cost_report(events)
    return _said(args, {"events": path, **report}, render_cost(path, report))


def _said(args: argparse.Namespace, data: Any, text: str, code: int = 0) -> int:
    """``data`` printed as JSON with ``--format json``, else ``text``; then ``code``. The
    JSON is ASCII: it reads the same from an output of any encoding."""
    print(json.dumps(data, indent=2) if args.format == "json" else text)
    return code


# Each subcommand: its help, and (args, path, events, unreadable lines) -> exit code.
_SUBCOMMANDS: dict[str, tuple[str, Callable[..., int]]] = {
    "events": ("outcome counts per check (the default)", _events),
    "agreement": ("recorded verdicts against human labels", _agreement),
    "flips": ("checks whose verdict changed for the same prompt", _flips),
    "cost": ("judge spend by rule, check, model and day; cache savings", _cost),
    "html": ("one self-contained HTML page: refusals and errors over time, cost, latency, "
             "agreement, the last run's findings", _html),
}
