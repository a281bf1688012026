"""Report formats: one :class:`~slopjudge.model.RunReport`, six renderings.

Each format is one module with ``render(report, *, color=False) -> str``.
:data:`FORMATS` is the registry (protocol: ``hookspec.ReportFormat``); each
entry imports only its own module, so the text path never loads the XML or
SARIF code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model import RunReport

if TYPE_CHECKING:
    from ..hookspec import ReportFormat

# How each outcome reads to a person, in every format.
OUTCOME_LABELS: dict[str, str] = {
    "pass": "pass",
    "refuse": "refuse",
    "error": "error",
    "skipped": "skipped",
    "not_applicable": "not applicable",
    "not_judged": "not judged (dry run)",
    "would_refuse": "would refuse (shadow)",
}
OUTCOME_ORDER: tuple[str, ...] = tuple(OUTCOME_LABELS)


def outcome_label(outcome: str) -> str:
    return OUTCOME_LABELS.get(outcome, outcome)


def encodable(text: str) -> str:
    """``text`` with lone surrogates (undecodable bytes from a child) as ``\\udcff`` escapes.

    Inside a JSON string the escape is valid JSON for the same character;
    elsewhere it keeps the output writable as UTF-8.
    """
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, stripped ("" when there is none)."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def _text(report: RunReport, *, color: bool = False) -> str:
    from .text import render

    return render(report, color=color)


def _json(report: RunReport, *, color: bool = False) -> str:
    from .json import render

    return render(report, color=color)


def _junit(report: RunReport, *, color: bool = False) -> str:
    from .junit import render

    return render(report, color=color)


def _sarif(report: RunReport, *, color: bool = False) -> str:
    from .sarif import render

    return render(report, color=color)


def _github(report: RunReport, *, color: bool = False) -> str:
    from .github import render

    return render(report, color=color)


def _markdown(report: RunReport, *, color: bool = False) -> str:
    from .markdown import render

    return render(report, color=color)


FORMATS: dict[str, ReportFormat] = {
    "text": _text,
    "json": _json,
    "junit": _junit,
    "sarif": _sarif,
    "github": _github,
    "markdown": _markdown,
}


def render(report: RunReport, fmt: str, *, color: bool = False) -> str:
    """Render ``report`` in format ``fmt`` (a key of :data:`FORMATS`)."""
    renderer = FORMATS.get(fmt)
    if renderer is None:
        raise ValueError(f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})")
    return renderer(report, color=color)
