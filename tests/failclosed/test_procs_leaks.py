"""No process of a run outlives it: script checks, prepares and judge runners, each
forking a daemon (setsid, double fork, keeping its environment or execing with an empty
one), on a normal end, a crash, a timeout and a SIGTERM to slopjudge. Checked by a marker
unique to each test in ``/proc/*/cmdline``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import PY, cli_env, commit_all, executable, make_repo, sj, write_files

# A process that notes it started (a file named after its marker), then sleeps with
# the marker on its command line.
SLEEPER = "import sys, time; open(sys.argv[1], 'w').close(); time.sleep(300)"

# Forks a child that leaves the session and forks again; the grandchild sleeps
# under the marker, re-parented away from the script (with SJLEAK_BARE set, in an
# environment of its own: it no longer carries what slopjudge put in the check's).
DAEMON = """{py} - <<'EOF'
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        env = {{}} if os.environ.get("SJLEAK_BARE") else os.environ
        os.execve({py!r}, [{py!r}, "-c", {sleeper!r}, {started!r}, {marker!r}], env)
    os._exit(0)
EOF
while [ ! -e {started} ]; do sleep 0.01; done
"""
STARTED = Path(os.environ.get("TMPDIR", "/tmp"))


def started_file(marker: str) -> str:
    return str(STARTED / f"{marker}.started")


def sleeper(marker: str) -> str:
    """A shell command that runs the sleeper in place of the shell."""
    return f"exec {PY} -c \"{SLEEPER}\" {started_file(marker)} {marker}"


def marked(marker: str) -> list[int]:
    """Pids whose command line holds ``marker`` (zombies have none: they run nothing)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(int(name))
        except OSError:
            pass
    return found


def wait_for(predicate: object, within: float = 10.0) -> bool:
    assert callable(predicate)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(params=["inherits", "bare"])
def mode(request: pytest.FixtureRequest) -> dict[str, str]:
    """The environment the run gets beyond the test's own: whether the daemon keeps the
    environment it inherits or execs with an empty one."""
    return {"SJLEAK_BARE": "1"} if request.param == "bare" else {}


@pytest.fixture
def marker() -> Iterator[str]:
    name = f"sjleak-{uuid.uuid4().hex[:12]}"
    yield name
    for suffix in ("", "-wait"):
        try:
            os.unlink(started_file(name + suffix))
        except OSError:
            pass
    for pid in marked(name):  # never leave one behind, even when the test failed
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def daemon(marker: str) -> str:
    return DAEMON.format(py=PY, sleeper=SLEEPER, started=started_file(marker), marker=marker)


def repo_with(tmp_path: Path, rule: str, files: dict[str, str]) -> Path:
    repo = make_repo(tmp_path / "repo")
    folder = repo / "rules" / "leaky"
    folder.mkdir(parents=True)
    (folder / "rule.yaml").write_text(rule, encoding="utf-8")
    for name, text in files.items():
        if name.endswith(".sh"):
            executable(folder / name, text)
        else:
            (folder / name).write_text(text, encoding="utf-8")
    (repo / "templates").mkdir()
    commit_all(repo, "rules")
    write_files(repo, {"README.md": "changed\n"})
    return repo


SCRIPT_RULE = (
    "description: leaky\nchecks:\n  - id: check\n    script: ./check.sh\n    timeout: 2s\n"
)
JUDGE_RULE = (
    "description: leaky judge\nchecks:\n  - id: judge\n    judge: judge.md.j2\n"
    "    timeout: 2s\n{prepare}"
)


def script_repo(tmp_path: Path, marker: str, tail: str) -> Path:
    body = "#!/bin/sh\ncat >/dev/null\n" + daemon(marker) + tail + "\n"
    return repo_with(tmp_path, SCRIPT_RULE, {"check.sh": body})


def judge_repo(tmp_path: Path, marker: str, *, prepare_tail: str | None = None) -> Path:
    files = {"judge.md.j2": "Judge this change:\n{{ change }}\n"}
    prepare = ""
    if prepare_tail is not None:
        files["prepare.sh"] = (
            "#!/bin/sh\ncat >/dev/null\n" + daemon(marker) + prepare_tail + "\n"
        )
        prepare = "    prepare: ./prepare.sh\n"
    return repo_with(tmp_path, JUDGE_RULE.format(prepare=prepare), files)


def runner(tmp_path: Path, marker: str, tail: str) -> str:
    """A judge runner that starts a daemon, then ends with ``tail``."""
    path = executable(
        tmp_path / "bin" / "runner.sh",
        "#!/bin/sh\ncat >/dev/null\n" + daemon(marker) + tail + "\n",
    )
    return str(path)


PASS = """echo '{"pass": true, "reasoning": "clean"}'"""


def run_env(mode: dict[str, str], **extra: str) -> dict[str, str]:
    return {**mode, **extra}


def run_cli(repo: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return sj("run", "--working-tree", "--no-cache", "--format", "json", cwd=repo, env=env,
              timeout=60, process=True)


def outcomes(res: subprocess.CompletedProcess[str]) -> dict[str, str]:
    try:
        report = json.loads(res.stdout)
    except ValueError as exc:
        raise AssertionError(f"rc {res.returncode}: {res.stdout!r} {res.stderr!r}") from exc
    return {c["id"]: c["outcome"] for c in report["checks"]}


def assert_none_left(marker: str) -> None:
    assert os.path.exists(started_file(marker)), "the daemon never started: the test proves nothing"
    # The run has returned: every process it made must already be gone (a short
    # grace covers only the kernel finishing a SIGKILL).
    assert wait_for(lambda: not marked(marker), within=2.0), (
        f"processes of the run survived it: {marked(marker)}"
    )


# ---- script checks -------------------------------------------------------------


@pytest.mark.parametrize(
    ("tail", "expected"),
    [("exit 0", "pass"), ("exit 1", "refuse"), ("kill -SEGV $$", "error"),
     ("exec sleep 60", None)],
    ids=["ends", "fails", "crashes", "times-out"],
)
def test_script_check_leaves_no_process(
    tmp_path: Path, mode: dict[str, str], marker: str, tail: str, expected: str | None
) -> None:
    repo = script_repo(tmp_path, marker, tail)
    res = run_cli(repo, run_env(mode))
    got = outcomes(res)["leaky/check"]
    assert got == (expected or "error"), res.stdout
    assert_none_left(marker)


def test_the_pre_commit_entry_point_leaves_no_process(
    tmp_path: Path, mode: dict[str, str], marker: str
) -> None:
    repo = script_repo(tmp_path, marker, "exit 0")
    res = subprocess.run(
        [PY, "-m", "slopjudge.precommit", "--working-tree", "--no-cache", "--format", "json"],
        cwd=repo, env=cli_env(run_env(mode)), capture_output=True, text=True, timeout=60)
    assert outcomes(res)["leaky/check"] == "pass", res.stdout
    assert_none_left(marker)


# ---- prepare -------------------------------------------------------------------


@pytest.mark.parametrize("tail", ["exit 3", "exec sleep 60"], ids=["fails", "times-out"])
def test_prepare_leaves_no_process(
    tmp_path: Path, mode: dict[str, str], marker: str, tail: str
) -> None:
    repo = judge_repo(tmp_path, marker, prepare_tail=tail)
    env = run_env(mode, SLOPJUDGE_RUNNER=runner(tmp_path, marker + "-runner", PASS))
    res = run_cli(repo, env)
    assert outcomes(res)["leaky/judge"] == "error", res.stdout
    assert_none_left(marker)


# ---- judge runner --------------------------------------------------------------


@pytest.mark.parametrize(
    ("tail", "expected"),
    [(PASS, "pass"), ("kill -KILL $$", None), ("exec sleep 60", None)],
    ids=["passes", "crashes", "times-out"],
)
def test_judge_runner_leaves_no_process(
    tmp_path: Path, mode: dict[str, str], marker: str, tail: str, expected: str | None
) -> None:
    repo = judge_repo(tmp_path, marker + "-unused")
    env = run_env(mode, SLOPJUDGE_RUNNER=runner(tmp_path, marker, tail))
    res = run_cli(repo, env)
    got = outcomes(res)["leaky/judge"]
    assert got == (expected or "error"), res.stdout
    assert_none_left(marker)


# ---- SIGTERM and SIGINT to slopjudge -------------------------------------------------


def _started(marker: str) -> bool:
    # The daemon and the runner's own sleep, both running.
    return os.path.exists(started_file(f"{marker}-wait")) and len(marked(marker)) >= 2


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_signal_to_run_leaves_no_process(
    tmp_path: Path, mode: dict[str, str], marker: str, sig: signal.Signals
) -> None:
    repo = judge_repo(tmp_path, marker + "-unused")
    slow = runner(tmp_path, marker, sleeper(f"{marker}-wait"))
    proc = subprocess.Popen(
        [PY, "-m", "slopjudge", "run", "--working-tree", "--no-cache"], cwd=repo,
        env=cli_env(run_env(mode, SLOPJUDGE_RUNNER=slow)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        # Until it started or the command ended: how long a start takes depends on load.
        wait_for(lambda: _started(marker) or proc.poll() is not None, within=120)
        assert _started(marker), f"the runner never started (exit {proc.poll()})"
        proc.send_signal(sig)
        proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode != 0
    assert_none_left(marker)


def _pre_tool_repo(tmp_path: Path, marker: str) -> Path:
    repo = make_repo(tmp_path / "repo")
    folder = repo / "rules" / "guard"
    folder.mkdir(parents=True)
    (folder / "rule.yaml").write_text(
        "description: a judge at pre-tool\non: [pre-tool]\ntools: [Write]\n"
        "checks:\n  - id: judge\n    judge: judge.md.j2\n    timeout: 60s\n", encoding="utf-8")
    (folder / "judge.md.j2").write_text("Judge:\n{{ change }}\n", encoding="utf-8")
    (repo / "templates").mkdir()
    commit_all(repo, "rules")
    return repo


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_signal_to_hook_pre_tool_blocks_and_leaves_no_process(
    tmp_path: Path, mode: dict[str, str], marker: str, sig: signal.Signals
) -> None:
    repo = _pre_tool_repo(tmp_path, marker)
    slow = runner(tmp_path, marker, sleeper(f"{marker}-wait"))
    payload = {
        "hook_event_name": "PreToolUse", "session_id": "s", "cwd": str(repo),
        "tool_name": "Write",
        "tool_input": {"file_path": str(repo / "app.py"), "content": "x = 1\n"},
    }
    proc = subprocess.Popen(
        [PY, "-m", "slopjudge", "hook", "pre-tool"], cwd=repo,
        env=cli_env(run_env(mode, SLOPJUDGE_RUNNER=slow)),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(payload))
        proc.stdin.close()
        # Until it started or the command ended: how long a start takes depends on load.
        wait_for(lambda: _started(marker) or proc.poll() is not None, within=120)
        assert _started(marker), f"the runner never started (exit {proc.poll()})"
        proc.send_signal(sig)
        proc.wait(timeout=30)
        assert proc.stderr is not None
        err = proc.stderr.read()
    finally:
        proc.kill()
    assert proc.returncode == 2, err  # it could not decide: the call is blocked
    assert "blocked" in err
    assert_none_left(marker)


# ---- a command that cannot start ----------------------------------------------


def test_a_script_without_an_interpreter_line_is_not_run_by_a_shell(
    tmp_path: Path, mode: dict[str, str]
) -> None:
    """`exit 0` with no #! line is no program: exec refuses it, so it must not pass."""
    repo = repo_with(tmp_path, SCRIPT_RULE, {"check.sh": "exit 0\n"})
    res = run_cli(repo, run_env(mode))
    assert outcomes(res)["leaky/check"] == "error", res.stdout
    assert "Exec format error" in res.stdout, res.stdout
