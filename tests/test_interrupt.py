"""A run cut short (Ctrl-C, kill -9) leaves a readable event log and, when it can, no processes."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers import (
    commit_all,
    kill_quietly,
    make_repo,
    read_jsonl,
    read_pids,
    sh,
    sj_popen,
    wait_gone,
    write_files,
    write_rule,
)

SLOW = 40  # slow checks: far more than the run can finish before it is interrupted


def slow_repo(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "repo")
    pids = tmp_path / "pids"
    pids.mkdir()
    lines = ["description: many slow checks", "checks:"]
    for n in range(6):
        lines += [f"  - id: quick-{n}", "    script: ./quick.sh"]
    for n in range(SLOW):
        lines += [f"  - id: slow-{n}", "    script: ./slow.sh"]
    write_rule(
        repo / "rules",
        "slow",
        "\n".join(lines),
        {
            "quick.sh": sh(
                "cat >/dev/null\necho 'quick refusal with a long reason " + "x" * 2000 + "'\nexit 1"
            ),
            # The script and its background child both record their pids.
            "slow.sh": sh(f"""
cat >/dev/null
sleep 600 &
echo $! > "{pids}/child-$$.pid"
echo $$ > "{pids}/$$.pid"
exec sleep 600
"""),
        },
    )
    commit_all(repo, "rules")
    write_files(repo, {"README.md": "changed\n"})
    return repo, pids


def start_and_wait_for_slow(repo: Path, pids: Path) -> subprocess.Popen[str]:
    proc = sj_popen("run", "--jobs", "4", cwd=repo)
    events = repo / ".slopjudge" / "events.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if len(read_pids(pids)) >= 8 and events.exists() and events.read_text().count("\n") >= 6:
            return proc
        if proc.poll() is not None:
            raise AssertionError(f"run ended early: {proc.communicate()}")
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the slow checks never started")


@pytest.mark.parametrize("sig, code, word", [
    (signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_interrupt_stops_promptly_and_leaves_nothing_behind(
        tmp_path: Path, sig: int, code: int, word: str) -> None:
    repo, pids = slow_repo(tmp_path)
    proc = start_and_wait_for_slow(repo, pids)
    try:
        proc.send_signal(sig)
        # The running checks sleep 600 s: a run that waited for them would time out here,
        # whatever the machine's load.
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == code, (proc.returncode, err)
        assert word in err and "Traceback" not in err
        assert wait_gone(read_pids(pids), within=5) == [], "a check process outlived the run"
        events = read_jsonl(repo / ".slopjudge" / "events.jsonl")
        assert len(events) >= 6
        assert {e["id"] for e in events} >= {f"slow/quick-{n}" for n in range(6)}
        assert len(read_pids(pids)) < 2 * SLOW, "queued checks still started after Ctrl-C"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        kill_quietly(read_pids(pids))


def test_sigkill_leaves_a_parseable_log(tmp_path: Path) -> None:
    repo, pids = slow_repo(tmp_path)
    proc = start_and_wait_for_slow(repo, pids)
    try:
        proc.kill()
        proc.wait(timeout=10)
        events = read_jsonl(repo / ".slopjudge" / "events.jsonl")  # every line parses
        assert len(events) >= 6
        assert all(e["outcome"] in ("pass", "refuse") for e in events)
        # A new run appends cleanly after the killed one.
        kill_quietly(read_pids(pids))
        write_rule(
            repo / "rules", "slow", "description: quick now\nchecks:\n  - script: ./quick.sh\n"
        )
        done = sj_popen("run", cwd=repo)
        done.communicate(timeout=60)
        assert done.returncode == 1
        assert len(read_jsonl(repo / ".slopjudge" / "events.jsonl")) == len(events) + 1
    finally:
        if proc.poll() is None:
            proc.kill()
        kill_quietly(read_pids(pids))
