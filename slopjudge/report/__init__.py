"""Report formats: one :class:`~slopjudge.model.RunReport`, six renderings.

Each format is one module with ``render(report, *, color=False) -> str``;
:func:`render` imports only the module asked for, so the text path never
loads the XML or SARIF code.
"""

from __future__ import annotations

import importlib

from ..model import RunReport

FORMATS: tuple[str, ...] = ("text", "json", "junit", "sarif", "github", "markdown")

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


def render(report: RunReport, fmt: str, *, color: bool = False) -> str:
    """Render ``report`` in format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format {fmt!r} (choose from {', '.join(FORMATS)})")
    module = importlib.import_module(f"{__name__}.{fmt}")
    text: str = module.render(report, color=color)
    return text
