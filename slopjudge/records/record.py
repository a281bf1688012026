"""The event log: one JSON line per check outcome, appended atomically.

Each line goes out in one ``os.write`` on an ``O_APPEND`` descriptor, newline last, so
concurrent writers never interleave. A SIGKILL can still cut a write between pages
(about one kill in a hundred), so writers hold an ``flock`` and cut off a last line
without its newline (only a dead writer leaves one), and readers ignore an
unterminated last line that does not parse; any other bad line is reported, never
a crash. Standard library only: the hook fast path records events too.
"""

from __future__ import annotations

import _thread
import os
import time

from slopjudge.jsonobject import dumps
from slopjudge.model import CheckResult, Event

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def _now_iso() -> str:
    """UTC now as ``2026-01-31T12:00:00.123Z``; without ``datetime``, which a hook
    recording one check would import for this alone."""
    seconds, rest = divmod(time.time_ns(), 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{rest // 1_000_000:03d}Z"


MAX_RECORDED_FINDINGS = 20
# The result's fields every record carries as they are, in the log's order. The
# prompt itself is kept apart (save_prompt): it can be large.
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
    text = dumps(record, ensure_ascii=False, separators=(",", ":"), default=str)
    # json.dumps escapes newlines inside strings, so the record is one line.
    # Lone surrogates (undecodable child output) become JSON \u escapes: the line stays UTF-8.
    return text.encode("utf-8", "backslashreplace") + b"\n"


LOCK_WAIT_S = 5.0  # a writer stuck longer than this holding the lock is not normal


def _lock(fd: int) -> None:
    """Take an exclusive flock on ``fd``, waiting at most LOCK_WAIT_S (then OSError)."""
    import fcntl
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
    end = os.fstat(fd).st_size
    if end == 0 or os.pread(fd, 1, end - 1) == b"\n":
        return
    newline = -1
    while newline < 0 and end > 0:  # back from the end, 64 KiB at a time
        start = max(0, end - 65536)
        newline = os.pread(fd, end - start, start).rfind(b"\n")
        end = start
    os.ftruncate(fd, start + newline + 1)  # no newline at all: start 0, newline -1


def append_events(path: str, records: list[dict[str, Any]]) -> None:
    """Append ``records`` to ``path``, one line each; ``OSError`` (unwritable folder,
    full disk) is the caller's to weigh."""
    if not records:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        _lock(fd)  # released by close, or by the kernel if this process dies
        _cut_torn_tail(fd)
        for record in records:
            # One write a line (see above); a short write (full disk) goes on where it stopped.
            view = memoryview(_line(record))
            while view:
                view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def read_events(path: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The records, and one ``path:line: problem`` per bad line; a missing file is an empty log."""
    try:
        return read_json_lines(path, lambda value, where: None if isinstance(value, dict)
                               else f"{where}: not a JSON object", torn_tail=True)
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [f"{path}: cannot read: {exc.strerror or exc}"]


def read_json_lines(path: str, problem: Callable[[Any, str], str | None], *,
                    torn_tail: bool = False) -> tuple[list[Any], list[str]]:
    """The JSON value of each line of ``path`` that is not blank and that ``problem``
    (value, ``path:line``) finds none with, and one ``path:line: problem`` per other line,
    in line order; OSError is the caller's. ``torn_tail``: an unterminated last line that
    does not parse is left out without a word."""
    import json

    with open(path, "rb") as handle:
        lines = handle.read().split(b"\n")
    values: list[Any] = []
    problems: list[str] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        unfinished = torn_tail and number == len(lines)  # no newline after it
        try:
            value = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            if not unfinished:
                problems.append(f"{where}: not UTF-8 (byte {exc.start + 1})")
            continue
        except json.JSONDecodeError as exc:
            if not unfinished:  # json's message expects a position; the column is given
                why = exc.msg.removesuffix(" starting at").lower()
                problems.append(f"{where}:{exc.colno}: not JSON: {why}")
            continue
        if (found := problem(value, where)) is None:
            values.append(value)
        else:
            problems.append(found)
    return values, problems


def recording(events_file: str | None, event: Event,
              then: Callable[[CheckResult], None] | None = None
              ) -> Callable[[CheckResult], None]:
    """An ``on_result`` for ``checks.engine.run``: each finished check goes to the event
    log as it finishes (none when ``events_file`` is None), so a run killed half way
    leaves every finished check on record; then to ``then``. A failing disk never turns
    a refusal into a pass: it is said once on stderr and the run goes on."""
    run = f"{os.getpid()}-{time.time_ns()}"  # names the run each line came from
    # Whether the log's failure, and a prompt's, was said (threading's Lock, without its import).
    said = _thread.allocate_lock(), _thread.allocate_lock()

    def record(result: CheckResult) -> None:
        _record(events_file, event, [result], run, said)
        if then is not None:
            then(result)

    return record


def record_all(events_file: str | None, event: Event, results: list[CheckResult]) -> None:
    """A run's results in one append (one open and lock of the file): a PreToolUse hook,
    whose checks take milliseconds, records them as it answers."""
    _record(events_file, event, results, f"{os.getpid()}-{time.time_ns()}",
            (_thread.allocate_lock(), _thread.allocate_lock()))


def _record(events_file: str | None, event: Event, results: list[CheckResult], run: str,
            said: tuple[_thread.LockType, _thread.LockType]) -> None:
    """``results`` to the log as lines of ``run``; a failing disk is said on stderr by
    the first caller to take ``said`` (the log's, a prompt's), never again."""
    if not events_file:
        return
    import sys

    records = []
    unkept: OSError | None = None
    for result in results:
        if result.outcome == "not_applicable":
            continue
        if result.prompt and result.prompt_sha256:
            try:  # a prompt not kept costs a replay, never the run's lines
                save_prompt(events_file, result.prompt_sha256, result.prompt)
            except OSError as exc:
                unkept = exc
        records.append(event_record(result, event_kind=event.kind,
                                    session_id=event.session_id) | {"run": run})
    try:
        append_events(events_file, records)
    except OSError as exc:
        if said[0].acquire(blocking=False):
            print(f"slopjudge: could not record events to {events_file}: {exc}",
                  file=sys.stderr)
        return
    if unkept is not None and said[1].acquire(blocking=False):
        print(f"slopjudge: could not keep a judge prompt beside {events_file} "
              f"(`slopjudge replay` needs it; the log is kept): {unkept}", file=sys.stderr)


# Each rendered judge prompt is kept once beside the log, by digest (the log names it by
# its sha256): `slopjudge replay` reads it back to re-judge it through another runner.
def _prompt_path(events_file: str, digest: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(events_file)), "prompts", f"{digest}.md")


def save_prompt(events_file: str, digest: str, prompt: str) -> None:
    path = _prompt_path(events_file, digest)
    if not os.path.exists(path):
        from slopjudge.fsutil import write_atomic

        write_atomic(path, prompt)


def load_prompt(events_file: str, digest: str) -> str | None:
    try:
        with open(_prompt_path(events_file, digest), encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None
