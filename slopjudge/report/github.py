"""``--format github``: GitHub Actions workflow commands, one annotation per line:
``::error`` per finding of a refusal, for an errored check and a rule load error,
``::warning`` for a shadow ``would_refuse``, a last ``::notice`` with the verdict.
"""

from __future__ import annotations

from slopjudge.model import CheckResult, RunReport, left_out_summary
from slopjudge.report import encodable
from slopjudge.report.text import verdict_line


def escape_data(text: str) -> str:
    return encodable(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def command(kind: str, message: str, **properties: object) -> str:
    """``::kind key=value,...::message`` with empty properties left out."""
    props = ",".join(f"{key}=" + escape_data(str(value)).replace(":", "%3A").replace(",", "%2C")
                     for key, value in properties.items() if value not in (None, ""))
    head = f"::{kind} {props}" if props else f"::{kind}"
    return f"{head}::{escape_data(message.strip() or '(no message)')}"


def _check_commands(result: CheckResult) -> list[str]:
    if result.outcome == "error":
        return [command("error", f"check error: {result.reason}", title=f"{result.id} (error)")]
    if result.outcome == "needs_person":
        title = "slopjudge: rule changes need a person"
        return [command("error", f.message, file=f.path, title=title) for f in result.findings] \
            + [command("error", result.reason, title=title)]
    if result.outcome not in ("refuse", "would_refuse"):
        return []
    kind = "error" if result.outcome == "refuse" else "warning"
    title = result.id if result.outcome == "refuse" else f"{result.id} (shadow, not blocking)"
    prefix = "" if result.outcome == "refuse" else "would refuse (shadow): "
    if not result.findings:
        return [command(kind, prefix + result.reason, title=title)]
    return [
        command(kind, prefix + (f.message or result.reason), file=f.path,
                line=f.line if f.line and f.line >= 1 else None, title=title)
        for f in result.findings
    ]


def render(report: RunReport, *, color: bool = False) -> str:  # color: no meaning here
    lines: list[str] = []
    for error in report.load_errors:
        lines.append(command(
            "error", f"{error.path} does not load: {error.message}",
            file=error.path,
            line=error.line if error.line >= 1 else None,
            col=error.col if error.col >= 1 else None,
            title="slopjudge: rule does not load",
        ))
    for result in report.checks:
        lines += _check_commands(result)
    left = left_out_summary(report.left_out)
    if left:
        lines.append(command("notice", left, title="slopjudge: not judged"))
    lines.append(command("notice", verdict_line(report), title="slopjudge"))
    return "\n".join(lines) + "\n"
