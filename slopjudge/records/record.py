"""The event log: one JSON line per check outcome, appended atomically.

Each line goes out in one ``os.write`` on an ``O_APPEND`` descriptor, newline last, so
concurrent writers never interleave. A SIGKILL can still cut a write between pages
(about one kill in a hundred), so writers hold an ``flock`` and cut off a last line
without its newline (only a dead writer leaves one), and readers ignore an
unterminated last line that does not parse; any other bad line is reported, never
a crash. Standard library only: the hook fast path records events too.
"""

from __future__ import annotations

import os
import threading
import time

from slopjudge.jsonobject import dumps
from slopjudge.model import CheckResult, Event

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    import json
    from collections.abc import Callable
    from typing import Any


def _now_iso() -> str:
    """UTC now as ``2026-01-31T12:00:00.123Z``; without ``datetime``, which a hook
    recording one check would import for this alone."""
    now = time.time_ns()
    seconds, rest = divmod(now, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest // 1_000_000:03d}Z"


MAX_RECORDED_FINDINGS = 20
# The result's fields every record carries as they are, in the log's order. The
# prompt itself is kept apart (records/prompts.py): it can be large.
_RECORDED = ("id", "rule", "check", "kind", "outcome", "reason", "duration_ms", "runner",
             "model", "prompt_sha256", "template_sha256", "cache_hit", "confidence", "tokens",
             "cost")


def event_record(result: CheckResult, *, event_kind: str,
                 session_id: str | None) -> dict[str, Any]:
    """The event-log record (SPEC §8) for one check outcome."""
    record: dict[str, Any] = {
        "time": _now_iso(),
        "event": event_kind,
        **{k: getattr(result, k) for k in _RECORDED},
        "session_id": session_id,
    }
    if result.findings:
        # For `report html`'s last run, linked to file and line; a few suffice there.
        record["findings"] = [{"path": f.path, "line": f.line, "message": f.message[:500]}
                              for f in result.findings[:MAX_RECORDED_FINDINGS]]
    if result.shadow_error:
        # Not a verdict: agreement and replay must not count it as a refusal.
        record["shadow_error"] = True
    if result.kind == "judge":
        # What the judge calls cost (usage.py): summed over the check's calls.
        record.update({k: getattr(result, k) for k in (
            "usage", "judge_calls", "cached_calls", "units", "prompt_tokens")})
    return record


def _line(record: dict[str, Any]) -> bytes:
    # default=str: a stray non-JSON value (a Path, a datetime) must not cost the record.
    # json.dumps's text without its import (a hook records without it).
    text = dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
    # json.dumps escapes newlines inside strings, so the record is one line.
    # Lone surrogates (undecodable child output) become JSON \u escapes: the line stays UTF-8.
    return text.encode("utf-8", "backslashreplace") + b"\n"


LOCK_WAIT_S = 5.0  # a writer stuck longer than this holding the lock is not normal


def _lock(fd: int) -> None:
    """Take an exclusive flock on ``fd``, waiting at most LOCK_WAIT_S (then OSError)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: appends stay atomic, tails are not repaired
        return
    deadline = time.monotonic() + LOCK_WAIT_S
    pause = 0.0005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise OSError(f"the events file stayed locked for {LOCK_WAIT_S:g} s") from None
            time.sleep(pause)
            pause = min(pause * 2, 0.01)


def _cut_torn_tail(fd: int) -> None:
    """Drop a last line that has no newline: under the lock, only a dead writer leaves one."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    end = size
    while end > 0:
        start = max(0, end - 65536)
        block = os.pread(fd, end - start, start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            os.ftruncate(fd, start + newline + 1)
            return
        end = start
    os.ftruncate(fd, 0)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:  # pragma: no cover - os.write raises instead on Linux
            raise OSError("short write to the events file")
        view = view[written:]


def append_events(path: str, records: list[dict[str, Any]]) -> None:
    """Append ``records`` to ``path``, one line each, creating folders as needed.

    Raises ``OSError`` (unwritable folder, full disk); the caller decides
    whether a run without its record should still count.
    """
    if not records:
        return
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        _lock(fd)  # released by close, or by the kernel if this process dies
        _cut_torn_tail(fd)
        for record in records:
            # One write per line, newline last: O_APPEND makes it land at the end, whole.
            _write_all(fd, _line(record))
    finally:
        os.close(fd)


def read_events(path: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Read the event log: the records, and one ``path:line: problem`` per bad line.

    A missing file is an empty log (no problems). Blank lines are skipped. A
    last line without its newline counts when it parses and is ignored when
    it does not (a record never completed, or being written right now).
    """
    import json

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [f"{path}: cannot read: {exc.strerror or exc}"]
    records: list[dict[str, Any]] = []
    problems: list[str] = []
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        unterminated = number == len(lines)  # no newline after it: possibly never completed
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if not unterminated:
                problems.append(f"{path}:{number}: not UTF-8 (byte {exc.start + 1})")
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            if not unterminated:
                problems.append(f"{path}:{number}:{exc.colno}: not JSON: {json_problem(exc)}")
            continue
        if not isinstance(value, dict):
            problems.append(f"{path}:{number}: not a JSON object")
            continue
        records.append(value)
    return records, problems


def json_problem(exc: json.JSONDecodeError) -> str:
    # json's messages expect a position after "starting at"; the column is given already.
    return exc.msg.removesuffix(" starting at").lower()


def recording(events_file: str | None, event: Event,
              then: Callable[[CheckResult], None] | None = None
              ) -> Callable[[CheckResult], None]:
    """An ``on_result`` for ``checks.engine.run``: each finished check goes to the event
    log (none when ``events_file`` is None), then to ``then``."""
    return Recorder(events_file, event, then).record


class Recorder:
    """Appends one event line per finished check of a run, as it finishes.

    Lines go out one at a time so that a run killed half way leaves every
    finished check on record. A failing disk never turns a refusal into a
    pass: recording problems are reported on stderr and the run goes on.
    """

    def __init__(self, events_file: str | None, event: Event,
                 then: Callable[[CheckResult], None] | None = None) -> None:
        self.path = events_file  # None: record nothing
        self.event = event
        self.then = then
        self.lock = threading.Lock()
        self.warned = False
        # Names the run each line came from (the checks of one hook call or `run`).
        self.run = f"{os.getpid()}-{time.time_ns()}"

    def record(self, result: CheckResult) -> None:
        if self.path and result.outcome != "not_applicable":
            self._append(result, self.path)
        if self.then is not None:
            self.then(result)

    def _append(self, result: CheckResult, path: str) -> None:
        try:
            if result.prompt and result.prompt_sha256:
                from slopjudge.records.prompts import save_prompt

                save_prompt(path, result.prompt_sha256, result.prompt)
            rec = event_record(result, event_kind=self.event.kind, session_id=self.event.session_id)
            rec["run"] = self.run
            append_events(path, [rec])
        except OSError as exc:
            with self.lock:
                if not self.warned:
                    self.warned = True
                    import sys

                    print(f"slopjudge: could not record events to {self.path}: {exc}",
                          file=sys.stderr)
