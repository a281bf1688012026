"""The event log: fields, atomic appends under real concurrency and real kills, tolerant reading."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from slopjudge.model import CheckResult, Event, Finding
from slopjudge.records.record import (
    append_events,
    event_record,
    read_events,
    record_all,
    recording,
)

SPEC_FIELDS = {
    "time",
    "event",
    "rule",
    "check",
    "outcome",
    "reason",
    "duration_ms",
    "runner",
    "model",
    "prompt_sha256",
    "template_sha256",
    "cache_hit",
    "tokens",
    "cost",
    "session_id",
}


def _judged(**kw) -> CheckResult:
    base = dict(
        id="docs/readme",
        rule="docs",
        check="readme",
        kind="judge",
        outcome="refuse",
        reason="README: no install section\n«non-ASCII» and 100%",
        findings=[Finding("README.md", 1, "x")],
        duration_ms=1234,
        runner="sr-agent",
        model="size-md",
        prompt_sha256="a" * 64,
        template_sha256="b" * 64,
        cache_hit=True,
        confidence=0.9,
        tokens=1500,
        cost=0.012,
        prompt="Judge this change.\n<diff>...</diff>",
    )
    base.update(kw)
    return CheckResult(**base)  # type: ignore[arg-type]


def test_event_record_has_the_spec_fields() -> None:
    before = datetime.now(UTC)
    rec = event_record(_judged(), event_kind="stop", session_id="sess-1")
    after = datetime.now(UTC)
    assert SPEC_FIELDS <= set(rec)
    assert "prompt" not in rec  # only on request
    assert rec["time"].endswith("Z")
    when = datetime.fromisoformat(rec["time"].replace("Z", "+00:00"))
    assert (
        when.tzinfo is not None
        and before.replace(microsecond=before.microsecond // 1000 * 1000) <= when <= after
    )
    assert (rec["event"], rec["rule"], rec["check"], rec["id"], rec["outcome"]) == (
        "stop", "docs", "readme", "docs/readme", "refuse")
    assert (
        rec["runner"],
        rec["model"],
        rec["cache_hit"],
        rec["tokens"],
        rec["cost"],
        rec["session_id"],
    ) == ("sr-agent", "size-md", True, 1500, 0.012, "sess-1")
    assert rec["prompt_sha256"] == "a" * 64 and rec["template_sha256"] == "b" * 64
    assert rec["duration_ms"] == 1234
    json.dumps(rec)  # plain JSON values only


def test_round_trip_one_line_per_record(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "events.jsonl"  # folders are created
    records = [
        event_record(_judged(), event_kind="stop", session_id="s"),
        event_record(_judged(outcome="pass", reason="fine"), event_kind="ci", session_id=None),
    ]
    append_events(str(path), records)
    append_events(str(path), [])  # nothing to write is not an error
    append_events(str(path), records[:1])
    data = path.read_bytes()
    assert data.count(b"\n") == 3 and data.endswith(b"\n")  # the reason's newline is escaped
    read, problems = read_events(str(path))
    assert problems == []
    assert read == [records[0], records[1], records[0]]
    assert "«non-ASCII»".encode() in data  # stored readable, as UTF-8


def test_append_raises_when_it_cannot_write(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(OSError):
        append_events(str(blocker / "events.jsonl"), [{"a": 1}])


def test_a_run_says_once_that_it_cannot_record(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    events = str(blocker / "events.jsonl")
    record = recording(events, Event(kind="ci"))
    for _ in range(3):
        record(_judged())
    record_all(events, Event(kind="pre-tool"), [_judged(), _judged()])
    said = capsys.readouterr().err.splitlines()
    # Once for the run and once for the hook's call; the prompts, lost with the log, not apart.
    assert len(said) == 2 and all("could not record events to" in line for line in said), said


def test_read_events_names_every_bad_line_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(
        b'{"outcome": "pass"}\n'
        b"\n"
        b"not json at all\n"
        b"[1, 2]\n"
        b'{"outcome": "re\xff\xfe"}\n'
        b'{"outcome": "ref\n'  # torn, then isolated by something else: a real problem
        b'{"outcome": "refuse"}\n'
        b'{"outcome": "pa'  # unterminated last line: not finished (yet), not a problem
    )
    records, problems = read_events(str(path))
    assert records == [{"outcome": "pass"}, {"outcome": "refuse"}]
    assert problems == [
        f"{path}:3:1: not JSON: expecting value",
        f"{path}:4: not a JSON object",
        f"{path}:5: not UTF-8 (byte 16)",
        f"{path}:6:13: not JSON: unterminated string",
    ]
    assert read_events(str(tmp_path / "missing.jsonl")) == ([], [])


def test_an_unterminated_last_line_that_parses_counts(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text(
        '{"outcome": "pass"}\n{"outcome": "refuse"}'
    )  # edited by hand, no final newline
    assert read_events(str(path)) == ([{"outcome": "pass"}, {"outcome": "refuse"}], [])


def test_a_torn_tail_is_cut_by_the_next_append(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(b'{"outcome": "pass"}\n{"outcome": "ref')  # a writer died mid-line
    append_events(str(path), [{"outcome": "error"}])
    assert path.read_bytes() == b'{"outcome": "pass"}\n{"outcome":"error"}\n'
    only_torn = tmp_path / "torn.jsonl"
    only_torn.write_bytes(b'{"outcome": "ref')
    append_events(str(only_torn), [{"outcome": "pass"}])
    assert only_torn.read_bytes() == b'{"outcome":"pass"}\n'


HOLDER = textwrap.dedent("""
    import fcntl, os, sys, time
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, b'{"holder": "partial')  # mid-write, as far as anyone can tell
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    os.write(fd, b'"}\\n')
""")


def test_writers_wait_for_the_lock_and_never_cut_a_live_line(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), "0.5"], stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout.readline() == b"locked\n"
        started = time.monotonic()
        append_events(str(path), [{"outcome": "pass"}])  # waits for the holder to finish its line
        assert time.monotonic() - started >= 0.3
        assert holder.wait(timeout=10) == 0
    finally:
        _stop([holder])
    assert read_events(str(path)) == ([{"holder": "partial"}, {"outcome": "pass"}], [])


def test_a_lock_held_too_long_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from slopjudge.records import record

    monkeypatch.setattr(record, "LOCK_WAIT_S", 0.2)
    path = tmp_path / "events.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path), "30"], stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout.readline() == b"locked\n"
        with pytest.raises(OSError, match="stayed locked for 0.2 s"):
            append_events(str(path), [{"outcome": "pass"}])
    finally:
        _stop([holder])
    assert b'"outcome"' not in path.read_bytes()


# --- real processes ------------------------------------------------------------

WRITER = textwrap.dedent("""
    import os, sys, time
    from slopjudge.records.record import append_events
    path, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    while not os.path.exists(go):
        time.sleep(0.001)
    i = 0
    while count < 0 or i < count:
        # Mostly event-sized lines; every 7th far beyond PIPE_BUF (a kept prompt).
        size = 70_000 if i % 7 == 6 else 200 + (i * 37) % 900
        append_events(path, [{"writer": name, "seq": i, "pad": "ü" * (size // 2)}])
        i += 1
""")


def _writer(tmp_path: Path, path: Path, name: str, count: int, go: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), name, str(count), str(go)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def test_twenty_concurrent_writers_leave_intact_lines(tmp_path: Path) -> None:
    path, go = tmp_path / "events.jsonl", tmp_path / "go"
    count = 60
    procs = [_writer(tmp_path, path, f"w{n}", count, go) for n in range(20)]
    try:
        go.touch()  # all start writing at once
        for proc in procs:
            assert proc.wait(timeout=60) == 0, proc.stderr.read().decode()
    finally:
        _stop(procs)
    records, problems = read_events(str(path))
    assert problems == []
    assert len(records) == 20 * count
    seen: dict[str, list[int]] = {}
    for rec in records:
        seen.setdefault(rec["writer"], []).append(rec["seq"])
    # Every writer's lines are all there, whole, in the order it wrote them.
    assert seen == {f"w{n}": list(range(count)) for n in range(20)}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_a_killed_writer_leaves_a_parseable_log(tmp_path: Path, sig: int) -> None:
    path, go = tmp_path / "events.jsonl", tmp_path / "go"
    go.touch()
    for round_ in range(4):
        before = len(read_events(str(path))[0])
        proc = _writer(tmp_path, path, f"r{round_}", -1, go)  # appends until stopped
        try:
            deadline = time.monotonic() + 30
            while (
                len(read_events(str(path))[0]) < before + 20 + 7 * round_
                and time.monotonic() < deadline
            ):
                time.sleep(0.005)
            proc.send_signal(sig)
            proc.wait(timeout=30)
        finally:
            _stop([proc])
        assert proc.returncode != 0  # it really was stopped mid-loop
        records, problems = read_events(str(path))
        assert problems == [], problems
        ours = [r["seq"] for r in records if r["writer"] == f"r{round_}"]
        assert ours == list(range(len(ours))) and len(ours) >= 20
    # Whatever the last kill left half written is gone after the next append:
    # every line in the file is a whole record.
    append_events(str(path), [{"writer": "after", "seq": 0}])
    data = path.read_bytes()
    assert data.endswith(b"\n")
    lines = data.split(b"\n")[:-1]
    assert all(isinstance(json.loads(line), dict) for line in lines)
    assert json.loads(lines[-1]) == {"writer": "after", "seq": 0}


def test_undecodable_output_in_a_reason_still_records(tmp_path: Path) -> None:
    reason = b"script said \xff\xfe".decode("utf-8", "surrogateescape") + " and \ud800"
    path = tmp_path / "events.jsonl"
    append_events(
        str(path), [event_record(_judged(reason=reason), event_kind="ci", session_id=None)]
    )
    path.read_bytes().decode("utf-8")  # valid UTF-8 throughout
    records, problems = read_events(str(path))
    assert problems == [] and records[0]["reason"] == reason


def test_a_prompt_that_cannot_be_kept_loses_no_line_of_the_log(tmp_path: Path, capsys) -> None:
    """The prompt beside the log serves a replay; the refusals of the call must be logged."""
    (tmp_path / "prompts").write_text("a file where the prompts' folder goes")
    events = tmp_path / "events.jsonl"
    record_all(str(events), Event(kind="pre-tool"), [_judged(), _judged()])
    read, problems = read_events(str(events))
    assert len(read) == 2 and problems == []
    assert "could not keep a judge prompt beside" in capsys.readouterr().err

