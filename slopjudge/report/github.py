"""``--format github``: GitHub Actions workflow commands, one annotation per line:
``::error`` per finding of a refusal, for an errored check and a rule load error,
``::warning`` for a shadow ``would_refuse``, a last ``::notice`` with the verdict.
"""

from __future__ import annotations

from slopjudge.model import CheckResult, Finding, RunReport, left_out_summary
from slopjudge.report import encodable
from slopjudge.report.text import verdict_line


def escape_data(text: str) -> str:
    return encodable(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def command(kind: str, message: str, **properties: object) -> str:
    """``::kind key=value,...::message``, leaving out empty properties and a line or column
    before the first."""
    props = ",".join(f"{key}=" + escape_data(str(value)).replace(":", "%3A").replace(",", "%2C")
                     for key, value in properties.items()
                     if value not in (None, "") and not (isinstance(value, int) and value < 1))
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
    kind, title, prefix = ("error", result.id, "") if result.outcome == "refuse" else (
        "warning", f"{result.id} (shadow, not blocking)", "would refuse (shadow): ")
    return [command(kind, prefix + (f.message or result.reason), file=f.path, line=f.line,
                    title=title) for f in result.findings or [Finding()]]


def render(report: RunReport, *, color: bool = False) -> str:  # color: no meaning here
    lines = [command("error", f"{e.path} does not load: {e.message}", file=e.path, line=e.line,
                     col=e.col, title="slopjudge: rule does not load") for e in report.load_errors]
    for result in report.checks:
        lines += _check_commands(result)
    if left := left_out_summary(report.left_out):
        lines.append(command("notice", left, title="slopjudge: not judged"))
    lines.append(command("notice", verdict_line(report), title="slopjudge"))
    return "\n".join(lines) + "\n"
