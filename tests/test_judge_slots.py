"""Judge concurrency is its own setting, ``judge_slots`` (default 8), apart from the
script checks' ``jobs`` (the CPU count), and a cap for the whole machine: every
slopjudge process of the user takes its model calls' slots from one folder."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from slopjudge.judging.slots import folder, slot
from slopjudge.loading.config import ConfigError, load_settings

# Logs "+" when a call starts and "-" when it ends, one line each, appended.
RUNNER = """#!{python}
import os, sys, time
sys.stdin.read()
def log(mark):
    fd = os.open(os.environ["CALL_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, mark.encode() + b"\\n")
    os.close(fd)
log("+")
# With CALL_BARRIER=N a call ends only once N calls have started (or after 30 s): how
# many run at once then depends on slopjudge alone, not on how fast they start.
need, deadline = int(os.environ.get("CALL_BARRIER", "0")), time.monotonic() + 30
while open(os.environ["CALL_LOG"]).read().split().count("+") < need:
    if time.monotonic() > deadline:
        break
    time.sleep(0.01)
time.sleep(float(os.environ.get("CALL_SECONDS", "0.2")))
log("-")
print('{{"pass": true, "reasoning": "fine"}}')
"""


def most_at_once(log: Path) -> int:
    running = most = 0
    for mark in log.read_text().split():
        running += 1 if mark == "+" else -1
        most = max(most, running)
    return most


def judge_repo(root: Path, judges: int, settings: str) -> Path:
    repo = root / "repo"
    for n in range(judges):
        rule = repo / "rules" / f"judge-{n}"
        rule.mkdir(parents=True)
        (rule / "rule.yaml").write_text(
            f"description: judge {n}\nchecks:\n  - id: judge\n    judge: j.md.j2\n")
        (rule / "j.md.j2").write_text("Judge {{ rule.id }}.\n{{ change }}\n")
    (repo / "slopjudge.yaml").write_text(settings)
    (repo / "a.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    runner = root / "runner.py"
    runner.write_text(RUNNER.format(python=sys.executable))
    runner.chmod(0o755)
    return repo


def start_run(repo: Path, log: Path, *extra: str, barrier: int = 0) -> subprocess.Popen[str]:
    env = {**os.environ, "CALL_LOG": str(log), "CALL_BARRIER": str(barrier),
           "SLOPJUDGE_EVENTS_FILE": str(repo.parent / f"events-{len(extra)}.jsonl")}
    env.pop("SLOPJUDGE_JUDGE_MOCKS", None)
    return subprocess.Popen(
        [sys.executable, "-m", "slopjudge", "run", "--working-tree", "--no-cache",
         "--runner", str(repo.parent / "runner.py"), "--format", "json", *extra],
        cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_judges_run_at_once_whatever_jobs_says(tmp_path: Path) -> None:
    repo = judge_repo(tmp_path, 6, "judge_slots: 8\n")
    log = tmp_path / "calls.log"
    proc = start_run(repo, log, "--jobs", "1", barrier=6)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, out + err
    assert most_at_once(log) == 6  # --jobs 1 bounds script checks, not model calls


def test_the_cap_holds_across_slopjudge_processes(tmp_path: Path) -> None:
    repo = judge_repo(tmp_path, 4, "judge_slots: 2\n")
    log = tmp_path / "calls.log"
    runs = [start_run(repo, log), start_run(repo, log, "--jobs", "4")]
    for proc in runs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, out + err
    marks = log.read_text().split()
    assert marks.count("+") == 8  # every judge of both runs was asked
    assert most_at_once(log) <= 2


def test_a_slot_held_by_a_dead_process_is_free_again(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom slopjudge.judging.slots import slot\n"
         "with slot(1, 10):\n    print('held', flush=True)\n    time.sleep(120)\n"],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(TimeoutError, match="no judge slot of 1 came free"):
            with slot(1, 0.2):
                pass
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        with slot(1, 10) as fd:  # the kernel let go of the dead process's lock
            assert fd >= 0
    finally:
        holder.kill()
        holder.wait()
    assert oct(os.stat(folder()).st_mode & 0o777) == "0o700"


def test_calls_of_one_process_wait_for_its_own_slots() -> None:
    """Threads of one process (a run's judges) hold at most ``judge_slots`` at once; one
    waiting past its timeout is an error and leaves no slot taken."""
    import threading
    import time

    lock = threading.Lock()
    holding: list[int] = []
    most = [0]

    def call(n: int) -> None:
        with slot(2, 60):
            with lock:
                holding.append(n)
                most[0] = max(most[0], len(holding))
            time.sleep(0.02)
            with lock:
                holding.remove(n)

    threads = [threading.Thread(target=call, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads) and holding == []
    assert 1 <= most[0] <= 2
    with slot(1, 10):
        errors: list[BaseException] = []

        def late() -> None:
            try:
                with slot(1, 0.1):
                    pass
            except TimeoutError as exc:
                errors.append(exc)

        waiter = threading.Thread(target=late)
        waiter.start()
        waiter.join(timeout=60)
        assert [str(e).split(" came")[0] for e in errors] == ["no judge slot of 1"]
    with slot(1, 10) as fd:  # the one that timed out took nothing
        assert fd >= 0


@pytest.mark.parametrize(("text", "message"), [
    ("judge_slots: many\n", "slopjudge.yaml:1:1: `judge_slots` must be a whole number >= 1"),
    ("judge_slots: 0\n", "slopjudge.yaml:1:1: `judge_slots` must be a whole number >= 1"),
    ("jobs: 2\njudge_slots: 2.5\n",
     "slopjudge.yaml:2:1: `judge_slots` must be a whole number >= 1"),
    ("judge_slot: 4\n", "slopjudge.yaml:1:1: unknown setting `judge_slot`; did you mean "
                        "`judge_slots`?"),
])
def test_a_wrong_judge_slots_setting_is_one_line(tmp_path: Path, text: str, message: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "slopjudge.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_settings(str(tmp_path))
    assert str(info.value) == message
    proc = subprocess.run([sys.executable, "-m", "slopjudge", "run", "--dry-run"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stderr.splitlines()) == (2, [f"slopjudge: {message}"])


def test_judge_slots_default_and_pyproject(tmp_path: Path) -> None:
    assert load_settings(str(tmp_path)).judge_slots == 8
    (tmp_path / "pyproject.toml").write_text("[tool.slopjudge]\njudge_slots = 3\n")
    assert load_settings(str(tmp_path)).judge_slots == 3
