"""The report for a person: one line per check, a summary table, the verdict; and
:class:`Progress`, the single updating line a terminal shows during a long run."""

from __future__ import annotations

import threading
import time
from collections import Counter

from slopjudge.model import CheckResult, Finding, RunReport, left_out_summary
from slopjudge.report import OUTCOMES, inert, outcome_count, outcome_label, reason_lines

TYPE_CHECKING = False  # not typing's: a CI run of a docs-only commit never imports it
if TYPE_CHECKING:
    from typing import TextIO

_RESET = "\x1b[0m"
# Blocking outcomes shout, so they stand out without color too.
_LOUD = {"refuse", "error", "needs_person"}
_LABEL_WIDTH = max(len(outcome_label(o)) for o in OUTCOMES)
_MORE_REASON_LINES = 12  # refusal reasons beyond their first line, shown indented
# Said once under a run with errors, so nobody reads an outage as a finding.
ERROR_NOTE = ("slopjudge: ERROR means slopjudge could not decide that check (runner, timeout, "
              "crash, no verdict); it is not a finding in the change, and it blocks until "
              "the check can run.")


def _paint(text: str, outcome: str, color: bool) -> str:
    code = OUTCOMES[outcome][2] if color and outcome in OUTCOMES else None
    return f"{code}{text}{_RESET}" if code else text


def format_duration(ms: int | float) -> str:
    if ms < 1000:
        return f"{int(ms)} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, rest = divmod(round(ms / 1000), 60)
    return f"{minutes}m {rest:02d}s"


def format_finding(finding: Finding) -> str:
    """``path:line: message``, leaving out what is unknown."""
    where = f"{finding.path}:{finding.line}" if finding.path and finding.line else finding.path
    message = finding.message or "(no message)"
    return f"{where}: {message}" if where else message


def _check_lines(result: CheckResult, color: bool, id_width: int) -> list[str]:
    label = outcome_label(result.outcome)
    if result.outcome in _LOUD:
        label = label.upper()
    head = (f"  {_paint(label.ljust(_LABEL_WIDTH), result.outcome, color)}  "
            f"{result.id.ljust(id_width)}  {format_duration(result.duration_ms):>7}")
    # Split first (so CRLF is a line break), then make each line inert.
    first, rest = reason_lines(result.reason, _MORE_REASON_LINES)
    lines = [f"{head}  {inert(first)}" if first else head]
    indent = " " * 6
    if result.outcome in _LOUD | {"would_refuse"}:
        lines += [f"{indent}{inert(ln)}" if ln else "" for ln in rest]
    for finding in result.findings:
        shown, *more = [inert(ln) for ln in format_finding(finding).splitlines()] or [""]
        lines += [f"{indent}{shown}", *(f"{indent}  {ln}" for ln in more)]
    return lines


def _summary_lines(report: RunReport, color: bool) -> list[str]:
    counts: Counter[str] = Counter(c.outcome for c in report.checks)
    order = [*OUTCOMES, *sorted(set(counts) - set(OUTCOMES))]
    lines = [f"  {'outcome'.ljust(_LABEL_WIDTH)}  checks"]
    for outcome in order:
        if counts[outcome]:
            label = _paint(outcome_label(outcome).ljust(_LABEL_WIDTH), outcome, color)
            lines.append(f"  {label}  {counts[outcome]:>6}")
    total_ms = sum(c.duration_ms for c in report.checks)
    lines.append(f"  {'total'.ljust(_LABEL_WIDTH)}  {len(report.checks):>6}"
                 f"  (check time {format_duration(total_ms)})")
    if cost := cost_line(report.checks):
        lines += ["", f"  {cost}"]
    return lines


def cost_line(checks: list[CheckResult]) -> str:
    """``judge cost: 3 judge calls (1 from cache), 5,400 tokens (...), $0.0123``; empty
    when the run had no judge check."""
    from slopjudge.usage import summary, total

    judges = [c for c in checks if c.kind == "judge"]
    if not judges:
        return ""
    calls = sum(c.judge_calls for c in judges)
    cached = sum(c.cached_calls for c in judges)
    line = "judge cost: " + summary(total(c.usage for c in judges), calls, cached)
    if sizes := [(c.prompt_tokens, c.units) for c in judges if c.prompt_tokens]:
        units = sum(u for _, u in sizes)
        line += (f"; {units} prompt{'s' if units != 1 else ''}, the largest about "
                 f"{max(t for t, _ in sizes):,} tokens (estimated)")
    return line


# What the closing line counts, what blocks first.
_VERDICT_ORDER = ("error", "needs_person", "refuse", "would_refuse", "not_judged", "pass")


def verdict_line(report: RunReport) -> str:
    """The closing line: the run's outcome and why."""
    counts: Counter[str] = Counter(c.outcome for c in report.checks)
    total = len(report.checks)
    errors = len(report.load_errors)
    parts = [f"{errors} load error{'s' if errors != 1 else ''}"] if errors else []
    parts += [outcome_count(o, counts[o]) for o in _VERDICT_ORDER if counts[o]]
    detail = ", ".join(parts) if parts else "nothing to check"
    shown = "NEEDS A PERSON" if report.outcome == "needs_person" else report.outcome.upper()
    return f"slopjudge: {shown}: {total} check{'' if total == 1 else 's'}: {detail}"


def render(report: RunReport, *, color: bool = False) -> str:
    lines: list[str] = []
    if errors := report.load_errors:
        head = (f"slopjudge: {len(errors)} problem{'' if len(errors) == 1 else 's'} loading "
                "rules; the rules concerned are NOT in force")
        lines += [_paint(head, "error", color), *(f"  {inert(str(e))}" for e in errors), ""]
    id_width = min(max((len(c.id) for c in report.checks), default=0), 40)
    for result in report.checks:
        lines += _check_lines(result, color, id_width)
    if report.checks:
        lines.append("")
    lines += _summary_lines(report, color)
    if left := left_out_summary(report.left_out):
        lines.append(f"  {left}")
    lines.append("")
    if any(c.outcome == "error" for c in report.checks):
        lines.append(ERROR_NOTE)
    lines.append(_paint(verdict_line(report), report.outcome, color))
    return "\n".join(lines) + "\n"


class Progress:
    """One updating status line on a terminal, silent anywhere else, safe from worker
    threads. Nothing is drawn before ``delay`` seconds, so quick runs do not flicker;
    with ``tick`` > 0 it is redrawn that often, so a running check's time moves."""

    def __init__(self, stream: TextIO, *, delay: float = 0.5, tick: float = 0.0) -> None:
        self.stream = stream
        self.delay = delay
        self.tick = tick
        self.total = self.done = self.refused = self.cached = 0
        self.running: dict[str, float] = {}  # check id -> start (monotonic)
        self._last: CheckResult | None = None
        self._started = 0.0
        self._drawn = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        try:
            self.enabled = bool(stream.isatty())
        except (AttributeError, ValueError):  # a closed or missing stderr: no progress line
            self.enabled = False

    def start(self, total: int) -> None:
        """Start counting (once): ``total`` checks to go."""
        self.total, self._started = total, time.monotonic()
        if self.enabled and self.tick > 0:
            self._ticker = threading.Thread(target=self._tick, daemon=True,
                                            name="slopjudge-progress")
            self._ticker.start()

    def begin(self, check_id: str) -> None:
        with self._lock:
            self.running[check_id] = time.monotonic()

    def advance(self, result: CheckResult) -> None:
        with self._lock:
            self.done += 1
            self.running.pop(result.id, None)
            self.refused += result.outcome in ("refuse", "error")
            self.cached += bool(result.cache_hit)
            self._last = result
            if self.enabled:
                self._draw()

    def _tick(self) -> None:
        while not self._stop.wait(self.tick):
            with self._lock:
                self._draw()

    def finish(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2)
        with self._lock:
            if self._drawn:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self._drawn = False

    def _draw(self) -> None:
        import shutil  # only on a terminal: a CI log never draws

        now = time.monotonic()
        if now - self._started < self.delay:
            return
        result = self._last
        text = f"[{self.done}/{self.total}] {format_duration((now - self._started) * 1000)}"
        if self.refused:
            text += f", {self.refused} refused"
        if self.cached:
            text += f", {self.cached} cached"
        if result is not None:
            text += f"  {result.id}: {outcome_label(result.outcome)}"
            if result.cache_hit:
                text += " (cached)"
        if self.running:
            oldest = list(self.running.items())  # in the order they began
            shown = [f"{cid} {format_duration((now - t0) * 1000)}" for cid, t0 in oldest[:3]]
            more = f" +{len(oldest) - 3}" if len(oldest) > 3 else ""
            text += "  running: " + ", ".join(shown) + more
        text = inert(text)[: max(shutil.get_terminal_size((80, 24)).columns - 1, 10)]
        self.stream.write(f"\r\x1b[K{text}")
        self.stream.flush()
        self._drawn = True
