"""Report formats: one module each with ``render(report, *, color=False) -> str``, and
:data:`FORMATS`, the registry (``hookspec.ReportFormat``); an entry imports only its own
module, so the text path never loads the XML or SARIF code."""

from __future__ import annotations

import importlib
import re

from slopjudge.hookspec import ReportFormat
from slopjudge.model import RunReport

# How each outcome reads to a person, in every format: its label, its count in a
# sentence ("2 refused"), and its color on a terminal. A new outcome is one line here.
OUTCOMES: dict[str, tuple[str, str, str]] = {
    "pass": ("pass", "passed", "\x1b[32m"),
    "refuse": ("refuse", "refused", "\x1b[1;31m"),
    "error": ("error", "errored", "\x1b[1;31m"),
    "needs_person": ("needs a person", "need a person", "\x1b[1;35m"),
    "skipped": ("skipped", "skipped", "\x1b[2m"),
    "not_applicable": ("not applicable", "not applicable", "\x1b[2m"),
    "not_judged": ("not judged (dry run)", "not judged (dry run)", "\x1b[36m"),
    "would_refuse": ("would refuse (shadow)", "would refuse (shadow)", "\x1b[33m"),
}


def outcome_label(outcome: str) -> str:
    return OUTCOMES[outcome][0] if outcome in OUTCOMES else outcome


def outcome_count(outcome: str, n: int) -> str:
    """``n`` checks of ``outcome`` in words: "2 refused"."""
    return f"{n} {OUTCOMES[outcome][1] if outcome in OUTCOMES else outcome}"


def encodable(text: str) -> str:
    """``text`` with lone surrogates (undecodable bytes from a child) as ``\\udcff`` escapes:
    valid JSON for the same character inside a JSON string, writable UTF-8 elsewhere."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# Control characters from a check's output could drive a terminal or break a format.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def inert(text: str) -> str:
    """``text`` encodable, with its control characters shown as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", encodable(text))


def first_line(text: object) -> str:
    """The first non-blank line of ``text``, stripped ("" when there is none, or when
    ``text`` is no string: a log line may hold anything)."""
    lines = text.strip().splitlines() if isinstance(text, str) else []
    return lines[0].strip() if lines else ""


def reason_lines(reason: str, most: int) -> tuple[str, list[str]]:
    """A check's reason as its first line and at most ``most`` more, then how many were cut."""
    first, *rest = [line.rstrip() for line in reason.strip().splitlines()] or [""]
    if len(rest) > most:
        rest = [*rest[:most], f"... ({len(rest) - most} more lines)"]
    return first, rest


def _lazy(name: str) -> ReportFormat:
    """A format whose module is imported when it first renders (test_registries holds
    each module's ``render`` to the same output)."""

    def render(report: RunReport, *, color: bool = False) -> str:
        module = importlib.import_module(f"slopjudge.report.{name}")
        return str(module.render(report, color=color))

    return render


FORMATS: dict[str, ReportFormat] = {
    name: _lazy(name) for name in ("text", "json", "junit", "sarif", "github", "markdown")
}


def render(report: RunReport, fmt: str, *, color: bool = False) -> str:
    """Render ``report`` in format ``fmt`` (a key of :data:`FORMATS`)."""
    renderer = FORMATS.get(fmt)
    if renderer is None:
        raise ValueError(f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})")
    return renderer(report, color=color)
