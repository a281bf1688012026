"""``--format markdown``: a summary for a pull-request comment or a job's step summary
(docs/ci.md says what it holds).

Everything that comes from a check (reasons, messages, paths) is data: it is
escaped, or put in a code span or a fenced block, so it can neither format
the summary nor mention a person or team (``@name``).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from urllib.parse import quote

from slopjudge.model import CheckResult, Finding, RunReport, left_out_summary
from slopjudge.report import OUTCOMES, inert, outcome_count, outcome_label, reason_lines
from slopjudge.report.text import cost_line, format_duration

HEADINGS = {
    "pass": "slopjudge: passed",
    "refuse": "slopjudge: refused",
    "error": "slopjudge: error (could not decide)",
    "needs_person": "slopjudge: rule changes need a person",
}
_MAX_FINDINGS = 20  # per check
_MAX_REASON_LINES = 20  # reason lines after the first, in a fenced block
_MAX_TABLE_ROWS = 300
# A PR comment holds 65,536 characters; the folded table is dropped first to fit.
MAX_CHARS = 60_000

_ESCAPE = re.compile(r"([\\`*_\[\]!|~<>&@])")
# GitHub finds mentions in the rendered text, so a backslash would not stop one: a
# zero-width space after "@" does.
_REPLACE = {"<": "&lt;", ">": "&gt;", "&": "&amp;", "@": "@\u200b"}


def text(value: str) -> str:
    """``value`` as literal Markdown text on one line (no formatting, no mention)."""
    out = _ESCAPE.sub(lambda m: _REPLACE.get(m.group(1), "\\" + m.group(1)), inert(value))
    return " ".join(out.split())


def code(value: str) -> str:
    """``value`` as an inline code span, whatever backticks it holds."""
    value = " ".join(inert(value).split())
    longest = max((len(run) for run in re.findall(r"`+", value)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if value.startswith("`") or value.endswith("`") or not value else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def fenced(lines: list[str], indent: str) -> list[str]:
    """``lines`` in a fenced code block longer than any backtick run inside."""
    body = [inert(line) for line in lines]
    longest = max((len(run) for line in body for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{indent}{fence}text"] + [f"{indent}{line}" for line in body] + [f"{indent}{fence}"]


def line_link(path: str, line: int | None) -> str | None:
    """The URL of ``path`` (at ``line``) in the commit GitHub Actions runs on, if known."""
    server = os.environ.get("GITHUB_SERVER_URL", "").rstrip("/")
    repo = os.environ.get("GITHUB_REPOSITORY", "")
    sha = os.environ.get("GITHUB_SHA", "")
    if not (server and repo and sha) or os.path.isabs(path) or path.startswith("../"):
        return None
    url = f"{server}/{quote(repo)}/blob/{quote(sha)}/{quote(path)}"
    return f"{url}#L{line}" if line and line >= 1 else url


def where(finding: Finding) -> str:
    """``path:line`` as code, linked to the line when the commit is known; "" without a path."""
    if not finding.path:
        return ""
    shown = finding.path if not finding.line else f"{finding.path}:{finding.line}"
    link = line_link(finding.path, finding.line)
    return f"[{code(shown)}]({link})" if link else code(shown)


def _check_item(result: CheckResult) -> list[str]:
    first, rest = reason_lines(result.reason, _MAX_REASON_LINES)
    lines = [f"- {code(result.id)}: {text(first)}" if first else f"- {code(result.id)}"]
    if rest:
        lines += fenced(rest, "  ")
    for finding in result.findings[:_MAX_FINDINGS]:
        place = where(finding)
        message = text(finding.message or "(no message)")
        lines.append(f"  - {place}: {message}" if place else f"  - {message}")
    if len(result.findings) > _MAX_FINDINGS:
        lines.append(f"  - and {len(result.findings) - _MAX_FINDINGS} more")
    return lines


def summary_line(report: RunReport) -> str:
    counts: Counter[str] = Counter(c.outcome for c in report.checks)
    order = [*OUTCOMES, *sorted(set(counts) - set(OUTCOMES))]
    total = len(report.checks)  # no check: no outcome to count after "No check applied"
    line = f"{total} check{'' if total == 1 else 's'}: " if total else "No check applied"
    line += ", ".join(outcome_count(o, counts[o]) for o in order if counts[o])
    if report.load_errors:
        files = len({e.path for e in report.load_errors})
        line += f"; {files} rule file{'' if files == 1 else 's'} did not load"
    return line + "."


def _table(report: RunReport) -> list[str]:
    rows = report.checks[:_MAX_TABLE_ROWS]
    lines = ["<details><summary>All checks</summary>", "",
             "| outcome | check | kind | time |", "|---|---|---|---|"]
    for c in rows:
        cell = code(c.id).replace("|", "\\|")  # GFM splits cells before code spans
        lines.append(f"| {text(outcome_label(c.outcome))} | {cell} "
                     f"| {c.kind} | {format_duration(c.duration_ms)} |")
    if len(report.checks) > len(rows):
        lines.append(f"| | and {len(report.checks) - len(rows)} more | | |")
    return lines + ["", "</details>"]


# The sections under the summary, in order: the checks of an outcome, or (None) the rules
# that did not load.
_SECTIONS = (
    ("needs_person", "Rule changes need a person: the base commit's rules judged the rest"),
    ("refuse", "Refusals ({n})"),
    ("error", "Errors ({n}): slopjudge could not decide; not a verdict on the code"),
    (None, "Rules that did not load: not in force until fixed"),
    ("would_refuse", "Would refuse (shadow rules, not blocking) ({n})"),
)


def render(report: RunReport, *, color: bool = False) -> str:  # color: no meaning here
    lines = [f"## {HEADINGS.get(report.outcome, 'slopjudge: ' + report.outcome)}", "",
             summary_line(report)]
    if not_judged := sum(1 for c in report.checks if c.outcome == "not_judged"):
        lines += ["", f"Dry run: {not_judged} judge check{'' if not_judged == 1 else 's'} "
                      "not asked; script checks decided alone."]
    for outcome, title in _SECTIONS:
        if outcome is None:
            items = [[f"- {code(f'{e.path}:{e.line}:{e.col}')}: {text(e.message)}"]
                     for e in report.load_errors]
        else:
            items = [_check_item(c) for c in report.checks if c.outcome == outcome]
        if items:
            lines += ["", f"### {title.format(n=len(items))}", ""]
            lines += [line for item in items for line in item]
    if left := left_out_summary(report.left_out):
        lines += ["", text(left[0].upper() + left[1:])]
    if any(c.usage is not None for c in report.checks):  # the runner reported what it cost
        lines += ["", text(cost_line(report.checks))]
    table = ["", *_table(report)] if report.checks else []
    if sum(len(ln) + 1 for ln in lines + table) <= MAX_CHARS:
        return "\n".join(lines + table) + "\n"
    return "\n".join(_fit(lines)) + "\n"


def _fit(lines: list[str]) -> list[str]:
    """``lines`` cut to :data:`MAX_CHARS`, closing a fenced block left open."""
    if sum(len(ln) + 1 for ln in lines) <= MAX_CHARS:
        return lines
    note = "(summary cut to fit a comment: the full report is in the job's log and annotations)"
    kept: list[str] = []
    size = 0
    fence: str | None = None
    for line in lines:
        size += len(line) + 1
        if size > MAX_CHARS - len(note) - 200:
            break
        kept.append(line)
        bare = line.strip()
        if fence is None and bare.startswith("```"):
            fence = bare[: len(bare) - len(bare.lstrip("`"))]
        elif bare == fence:
            fence = None
    return kept + ([fence] if fence else []) + ["", note]
