"""The PreToolUse hook server (slopjudge/hooks/server.py): a call it takes is answered
exactly as the hook's own process would answer it, and nothing about the server
lets a call through that the hook would block.

Each test has its own server folder; a call is known to have been served when the
check's parent (the process running the hook) is not the client that was started.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import (
    PY,
    cli_env,
    commit_all,
    kill_quietly,
    make_repo,
    pid_alive,
    py,
    running_servers,
    stop_servers,
    wait_gone,
    write_rule,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux only")

# A Python check that says what process state it ran with, and refuses FORBIDDEN.
CHECK = """
import json, os, resource, signal, sys
payload = json.load(sys.stdin)
text = "".join(f.get("newContent") or "" for f in payload["changeset"]["files"])
with open(os.environ["PARENT_FILE"], "w") as fh:
    fh.write(str(os.getppid()))
if "SLEEP" in text:
    with open(os.environ["PARENT_FILE"] + ".check", "w") as fh:
        fh.write(str(os.getpid()))
    import time
    time.sleep(60)
if "ASSERT" in text:
    assert "ASSERT" not in text, "assert refused"  # gone under python -O
def proc(name):
    with open("/proc/self/" + name) as fh:
        return fh.read().strip()
def ioprio():
    import ctypes
    number = {"x86_64": 252, "aarch64": 31}.get(os.uname().machine)
    return number and ctypes.CDLL(None).syscall(number, 1, 0)
state = {
    "oom": proc("oom_score_adj"), "personality": proc("personality"), "io": ioprio(),
    "tz": time.tzname[0] if (time := __import__("time")) else "",
    "marker": os.environ.get("CLIENT_MARKER"),
    "umask": oct(os.umask(0)),
    "nofile": resource.getrlimit(resource.RLIMIT_NOFILE),
    "pwr": "ignored" if signal.getsignal(signal.SIGPWR) == signal.SIG_IGN else "default",
}
if "FORBIDDEN" in text:
    print(json.dumps({"reason": "FORBIDDEN found " + json.dumps(state, sort_keys=True)}))
    sys.exit(1)
"""


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    """(repo, server folder, env): a repo whose one rule runs CHECK on Writes."""
    repo = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    write_rule(repo / "rules", "state", """
description: says the process state it ran with
on: [pre-tool]
tools: [Write]
checks:
  - id: look
    script: look.py
    timeout: 60s
""", {"look.py": py(CHECK)})
    commit_all(repo, "rules")
    # Short: a socket's path holds at most 108 bytes, and pytest's folders are long.
    folder = Path(tempfile.mkdtemp(prefix="sj-"))
    env = cli_env({"SLOPJUDGE_SERVER_DIR": str(folder), "SLOPJUDGE_SERVER_IDLE": "30",
                   "PARENT_FILE": str(tmp_path / "parent")})
    env.pop("SLOPJUDGE_SERVER", None)
    yield repo, folder, env
    kill_quietly(stop_servers(folder))
    shutil.rmtree(folder, ignore_errors=True)


def write(repo: Path, content: str) -> str:
    return json.dumps({
        "session_id": "s", "cwd": str(repo), "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(repo / "app.py"), "content": content},
    })


def hook(repo: Path, env: dict[str, str], payload: str, *, python: tuple[str, ...] = (PY,),
         **kw: object) -> tuple[subprocess.CompletedProcess[str], int]:
    """The hook as Claude Code starts it; (result, pid of the process that ran the check,
    -1 when it was the hook's own process)."""
    parent = Path(env["PARENT_FILE"])
    parent.unlink(missing_ok=True)
    proc = subprocess.Popen([*python, "-m", "slopjudge", "hook", "pre-tool"], cwd=repo, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)  # type: ignore[call-overload]
    out, err = proc.communicate(payload, timeout=60)
    ran_in = int(parent.read_text()) if parent.exists() else -1
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), (
        -1 if ran_in == proc.pid else ran_in)


def server_pid(folder: Path, within: float = 15.0) -> int:
    """The pid of the server running in ``folder`` once it listens."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        pids = running_servers(folder)
        if pids and list(folder.glob("*.sock")):
            return pids[0]
        time.sleep(0.05)
    raise AssertionError(f"no server started in {folder}")


def served(repo: Path, env: dict[str, str], payload: str, **kw: object
           ) -> subprocess.CompletedProcess[str]:
    """A call the server took (one more first, which starts it, when none runs)."""
    for _ in range(3):
        res, ran_in = hook(repo, env, payload, **kw)
        if ran_in > 0:
            return res
        server_pid(Path(env["SLOPJUDGE_SERVER_DIR"]))
    raise AssertionError("no call was served by the server")


def answer(res: subprocess.CompletedProcess[str]) -> dict[str, str]:
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["hookSpecificOutput"]  # type: ignore[no-any-return]


def test_a_served_call_is_answered_as_the_hook_process_answers_it(setup: tuple) -> None:
    repo, folder, env = setup
    alone, ran_in = hook(repo, dict(env, SLOPJUDGE_SERVER="0"), write(repo, "FORBIDDEN\n"))
    assert ran_in == -1 and not list(folder.iterdir())  # off: no server is started
    by_server = served(repo, env, write(repo, "FORBIDDEN\n"))
    assert (by_server.returncode, by_server.stdout, by_server.stderr) == (
        alone.returncode, alone.stdout, alone.stderr)
    assert answer(by_server)["permissionDecision"] == "deny"
    allowed = served(repo, env, write(repo, "x = 2\n"))
    assert (allowed.returncode, allowed.stdout) == (0, "")


def test_a_served_call_runs_with_the_callers_process_state(setup: tuple) -> None:
    """Environment, umask, resource limits and ignored signals are the caller's."""
    repo, _, env = setup
    served(repo, env, write(repo, "x = 2\n"))  # a server runs

    def narrow() -> None:
        os.umask(0o027)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 300), hard))
        signal.signal(signal.SIGPWR, signal.SIG_IGN)

    theirs = dict(env, CLIENT_MARKER="m-1")
    by_server = served(repo, theirs, write(repo, "FORBIDDEN\n"), preexec_fn=narrow)
    alone, _ = hook(repo, dict(theirs, SLOPJUDGE_SERVER="0"), write(repo, "FORBIDDEN\n"),
                    preexec_fn=narrow)
    reason = answer(by_server)["permissionDecisionReason"]
    assert '"marker": "m-1"' in reason and '"umask": "0o27"' in reason, reason
    assert '"nofile": [300' in reason and '"pwr": "ignored"' in reason, reason
    assert reason == answer(alone)["permissionDecisionReason"]
    plain = answer(served(repo, env, write(repo, "FORBIDDEN\n")))["permissionDecisionReason"]
    assert '"marker": null' in plain and '"pwr": "default"' in plain, plain


def test_a_caller_the_server_cannot_stand_in_for_runs_the_hook_itself(setup: tuple) -> None:
    """A server started under a lower hard limit cannot raise it for a caller: it
    declines, and the caller's own process answers."""
    repo, folder, env = setup
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 64:
        pytest.skip("RLIMIT_NOFILE too low to lower")

    def low() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft // 2, soft // 2))

    hook(repo, env, write(repo, "x = 2\n"), preexec_fn=low)  # starts the server, low
    server_pid(folder)
    res, ran_in = hook(repo, env, write(repo, "FORBIDDEN\n"))
    assert ran_in == -1  # declined: the hook ran in the caller's process
    assert answer(res)["permissionDecision"] == "deny"


def _wait_file(path: Path, within: float = 30.0) -> int:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{path} was never written")


def _slow_call(repo: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], int, int]:
    """A served call held by a check that sleeps: (client, hook process, check)."""
    served(repo, env, write(repo, "x = 2\n"))  # a server runs
    parent = Path(env["PARENT_FILE"])
    for f in (parent, parent.with_name(parent.name + ".check")):
        f.unlink(missing_ok=True)
    proc = subprocess.Popen([PY, "-m", "slopjudge", "hook", "pre-tool"], cwd=repo, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None
    proc.stdin.write(write(repo, "SLEEP\n"))
    proc.stdin.close()
    proc.stdin = None  # written: communicate() reads the answer only
    check = _wait_file(parent.with_name(parent.name + ".check"))
    runner = _wait_file(parent)
    assert runner != proc.pid  # the server's child runs it
    return proc, runner, check


def test_the_servers_child_killed_mid_check_blocks_the_call(setup: tuple) -> None:
    """The process running the hook dies from outside (OOM killer, kill -9): the call
    is blocked, said to be slopjudge's failure and not the code's."""
    repo, _, env = setup
    proc, runner, check = _slow_call(repo, env)
    try:
        os.kill(runner, signal.SIGKILL)
        out, err = proc.communicate(timeout=30)
    finally:
        kill_quietly([check, proc.pid])
    assert proc.returncode == 2, (out, err)
    assert out == ""
    assert "ended without an answer" in err and "blocked" in err, err
    assert "not a finding" in err


def test_sigterm_to_the_caller_stops_the_check_and_blocks(setup: tuple) -> None:
    repo, _, env = setup
    proc, runner, check = _slow_call(repo, env)
    try:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 2, (out, err)
        assert "stopped by SIGTERM" in err and "blocked" in err, err
        assert not wait_gone([check, runner], within=10)
    finally:
        kill_quietly([check, runner])


def test_a_caller_killed_mid_check_takes_its_checks_with_it(setup: tuple) -> None:
    repo, _, env = setup
    proc, runner, check = _slow_call(repo, env)
    try:
        proc.kill()
        proc.communicate(timeout=30)
        assert not wait_gone([check, runner], within=10)
    finally:
        kill_quietly([check, runner])


def test_calls_at_once_each_get_their_own_answer(setup: tuple) -> None:
    repo, _, env = setup
    served(repo, env, write(repo, "x = 2\n"))
    results: dict[int, subprocess.CompletedProcess[str]] = {}

    def one(i: int) -> None:
        proc = subprocess.run([PY, "-m", "slopjudge", "hook", "pre-tool"], cwd=repo,
                              env=dict(env, PARENT_FILE=f"{env['PARENT_FILE']}-{i}"),
                              input=write(repo, "FORBIDDEN\n" if i % 2 else f"x = {i}\n"),
                              capture_output=True, text=True, timeout=60)
        results[i] = proc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, res in sorted(results.items()):
        if i % 2:
            assert answer(res)["permissionDecision"] == "deny", (i, res.stderr)
        else:
            assert (res.returncode, res.stdout) == (0, ""), (i, res.stderr)


def test_a_folder_others_can_enter_is_never_used(setup: tuple) -> None:
    repo, folder, env = setup
    folder.chmod(0o755)
    for _ in range(2):
        res, ran_in = hook(repo, env, write(repo, "FORBIDDEN\n"))
        assert ran_in == -1
        assert answer(res)["permissionDecision"] == "deny"
    # A folder that fails the check is never created into or started in: the caller
    # returns before it forks anything, so there is nothing to wait for.
    assert not list(folder.iterdir())


def test_a_server_not_running_this_interpreter_is_not_trusted(setup: tuple) -> None:
    """A socket planted at the server's name by another program that would answer
    "allow" is not asked: the caller runs the hook itself."""
    repo, folder, env = setup
    served(repo, env, write(repo, "x = 2\n"))
    pid = server_pid(folder)
    sock_path = next(folder.glob("*.sock"))
    os.kill(pid, signal.SIGKILL)
    wait_gone([pid])
    other = shutil.which("perl")
    if other is None:
        pytest.skip("needs a second program able to serve a socket (perl)")
    sock_path.unlink(missing_ok=True)
    planted = subprocess.Popen([other, "-MIO::Socket::UNIX", "-e", """
        $SIG{PIPE} = "IGNORE";
        my $s = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Local => $ARGV[0], Listen => 5)
            or die;
        while (my $c = $s->accept) { my $b; sysread($c, $b, 65536); print $c "P1\\n";
            sysread($c, $b, 1); print $c "X0\\n"; close $c; }
    """, str(sock_path)])
    try:
        deadline = time.monotonic() + 10
        while not sock_path.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        res, ran_in = hook(repo, env, write(repo, "FORBIDDEN\n"))
        assert planted.poll() is None  # it was there to be asked
        assert ran_in == -1
        assert answer(res)["permissionDecision"] == "deny"
    finally:
        planted.kill()
        planted.wait()


def test_an_idle_server_leaves_and_removes_its_socket(setup: tuple) -> None:
    repo, folder, env = setup
    env = dict(env, SLOPJUDGE_SERVER_IDLE="1")
    served(repo, env, write(repo, "x = 2\n"))
    pid = server_pid(folder)
    assert not wait_gone([pid], within=15)
    assert not list(folder.glob("*.sock"))
    assert not pid_alive(pid)


def test_a_stopped_server_is_not_waited_on_for_good(setup: tuple) -> None:
    """SIGSTOP on the server and its spare: the call waits 3 s, is answered by the
    caller itself, and the stopped server is ended so the next calls start afresh."""
    repo, folder, env = setup
    with stopped_server(repo, folder, env) as pid:
        started = time.monotonic()
        res, ran_in = hook(repo, env, write(repo, "FORBIDDEN\n"))
        assert ran_in == -1 and time.monotonic() - started >= 2.5
        assert answer(res)["permissionDecision"] == "deny"
        assert not wait_gone([pid], within=10)
        again = served(repo, env, write(repo, "FORBIDDEN\n"))
        assert answer(again)["permissionDecision"] == "deny"


@contextlib.contextmanager
def stopped_server(repo: Path, folder: Path, env: dict[str, str]) -> Iterator[int]:
    """A running server and its spare, SIGSTOPped (the pid of the server); killed after."""
    served(repo, env, write(repo, "x = 2\n"))
    pid = server_pid(folder)
    group = os.getpgid(pid)
    # The server first: stopped after its spare, it would make a new one at once.
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
        assert time.monotonic() < deadline, "the server did not stop"
        time.sleep(0.01)
    os.killpg(group, signal.SIGSTOP)
    try:
        yield pid
    finally:
        try:
            os.killpg(group, signal.SIGKILL)
        except OSError:
            pass


def test_the_session_start_starts_a_server_for_the_first_tool_call(setup: tuple) -> None:
    repo, folder, env = setup
    start = subprocess.run([PY, "-m", "slopjudge", "hook", "start"], cwd=repo, env=env,
                           input=json.dumps({"session_id": "s", "cwd": str(repo),
                                             "hook_event_name": "SessionStart"}),
                           capture_output=True, text=True, timeout=60)
    assert start.returncode == 0, start.stderr
    pid = server_pid(folder)
    # No wait for its first spare: a call queues on the socket until the spare takes it.
    res, ran_in = hook(repo, env, write(repo, "FORBIDDEN\n"))
    assert ran_in > 0, res.stderr  # the first call was served
    assert answer(res)["permissionDecision"] == "deny"
    off = dict(env, SLOPJUDGE_SERVER="0", SLOPJUDGE_SERVER_DIR=tempfile.mkdtemp(prefix="sj-"))
    subprocess.run([PY, "-m", "slopjudge", "hook", "start"], cwd=repo, env=off,
                   input=b"{}", capture_output=True, timeout=60)
    assert not os.listdir(off["SLOPJUDGE_SERVER_DIR"])  # off: it returns before any fork
    shutil.rmtree(off["SLOPJUDGE_SERVER_DIR"])
    assert server_pid(folder) == pid


def test_a_stopped_server_and_a_large_environment_still_end_in_time(setup: tuple) -> None:
    """With an environment larger than a socket's buffer, sending the call to a stopped
    server waits too: that wait is bounded as well, and the caller's descriptors were
    never sent, so its output ends with its answer."""
    repo, folder, env = setup
    big = dict(env, **{f"BIG_{i}": "x" * 120_000 for i in range(8)})
    with stopped_server(repo, folder, env):
        started = time.monotonic()
        res, ran_in = hook(repo, big, write(repo, "FORBIDDEN\n"))
        assert time.monotonic() - started < 20
        assert ran_in == -1
        assert answer(res)["permissionDecision"] == "deny"


STOP_BETWEEN = r"""
import os, signal, sys

real_open = os.open

def open_then_stop(path, *args, **kw):
    # The client opens its working folder right after the child said it started, to
    # send it with the go-ahead: the moment to be stopped.
    if path == ".":
        os.kill(os.getpid(), signal.SIGTERM)
    return real_open(path, *args, **kw)

os.open = open_then_stop
from slopjudge.cli import main
main()
"""


def test_a_signal_between_start_and_go_ahead_blocks(setup: tuple) -> None:
    repo, _, env = setup
    served(repo, env, write(repo, "x = 2\n"))
    res = subprocess.run([PY, "-c", STOP_BETWEEN, "hook", "pre-tool"], cwd=repo, env=env,
                         input=write(repo, "x = 3\n"), capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert "stopped by SIGTERM, so this call is blocked" in res.stderr


def test_odd_settings_do_not_make_a_server_spin_or_land_in_the_repository(
        setup: tuple) -> None:
    repo, folder, env = setup
    res, _ = hook(repo, dict(env, SLOPJUDGE_SERVER_DIR="srv"), write(repo, "FORBIDDEN\n"))
    assert answer(res)["permissionDecision"] == "deny"
    assert not (repo / "srv").exists()  # a relative folder is never used
    served(repo, dict(env, SLOPJUDGE_SERVER_IDLE="nan"), write(repo, "x = 2\n"))
    pid = server_pid(folder)

    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    before = cpu()
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:  # a second of the server alone
        time.sleep(0.1)
    assert cpu() - before < 0.3  # waiting, not polling without end


def test_a_caller_started_with_other_interpreter_settings_gets_its_own_server(
        setup: tuple) -> None:
    """A server started by a caller with PYTHONOPTIMIZE (asserts gone) never serves a
    plain caller, whose own process would deny; a -O caller is served as -O."""
    repo, folder, env = setup
    optimized = dict(env, PYTHONOPTIMIZE="1")
    served(repo, optimized, write(repo, "x = 2\n"))
    res, ran_in = hook(repo, env, write(repo, "ASSERT\n"))
    assert ran_in == -1  # not that server's caller
    assert "assert refused" in answer(res)["permissionDecisionReason"]
    for _ in range(5):
        res, ran_in = hook(repo, env, write(repo, "ASSERT\n"), python=(PY, "-O"))
        assert (res.returncode, res.stdout) == (0, ""), res.stderr  # -O: no assert
        if ran_in > 0:
            break  # served, by a -O server
        deadline = time.monotonic() + 15
        while len(list(folder.glob("*.sock"))) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)  # the -O server this call started: PYTHONOPTIMIZE's, plain, -O
    else:
        raise AssertionError("no -O call was served")
    assert len(list(folder.glob("*.sock"))) == 3


@pytest.mark.parametrize("wrapper", [
    ["ionice", "-c", "3"], ["choom", "-n", "500", "--"], ["setarch", os.uname().machine, "-R"],
])
def test_process_settings_a_wrapper_gives_are_the_callers(setup: tuple,
                                                         wrapper: list[str]) -> None:
    repo, _, env = setup
    if shutil.which(wrapper[0]) is None:
        pytest.skip(f"{wrapper[0]} is not installed")
    served(repo, env, write(repo, "x = 2\n"))  # a server runs, started plainly
    argv = [*wrapper, PY, "-m", "slopjudge", "hook", "pre-tool"]
    got = {}
    for mode in ("server", "own"):
        run_env = env if mode == "server" else dict(env, SLOPJUDGE_SERVER="0")
        proc = subprocess.run(argv, cwd=repo, env=run_env, input=write(repo, "FORBIDDEN\n"),
                              capture_output=True, text=True, timeout=60)
        got[mode] = answer(proc)["permissionDecisionReason"]
    assert got["server"] == got["own"]


SIGNAL_AFTER = r"""
import os, signal, sys
from slopjudge.hooks import server
server._on_signals("pre-tool")
server._Client.child = int(sys.argv[1])  # a process that has ended
os.kill(os.getpid(), signal.SIGTERM)
print("stopped by", server._Client.stopped)
"""


def test_a_signal_for_a_child_that_has_ended_does_not_crash_the_caller(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    res = subprocess.run([PY, "-c", SIGNAL_AFTER, str(gone.pid)], capture_output=True,
                         text=True, timeout=60)
    assert (res.returncode, res.stdout) == (0, "stopped by 15\n"), res.stderr


FAIL_AT = r"""
import sys
from slopjudge.hooks import server

def broken(*args, **kw):
    raise RuntimeError("broken on purpose")

if sys.argv[1] == "before":
    server._request = broken  # before the go-ahead
else:
    server._Lines.next = lambda self, deadline=None: (
        b"P%d" % server.os.getpid() if deadline is not None else broken())
sys.argv[1:] = ["hook", "pre-tool"]
from slopjudge.cli import main
main()
"""


def test_a_client_that_fails_runs_the_hook_itself_before_the_go_ahead_and_blocks_after(
        setup: tuple) -> None:
    repo, _, env = setup
    served(repo, env, write(repo, "x = 2\n"))
    before = subprocess.run([PY, "-c", FAIL_AT, "before"], cwd=repo, env=env,
                            input=write(repo, "FORBIDDEN\n"), capture_output=True, text=True,
                            timeout=60)
    assert answer(before)["permissionDecision"] == "deny"  # answered by the caller itself
    after = subprocess.run([PY, "-c", FAIL_AT, "after"], cwd=repo, env=env,
                           input=write(repo, "x = 2\n"), capture_output=True, text=True,
                           timeout=60)
    assert after.returncode == 2, (after.stdout, after.stderr)
    assert "the hook server failed (RuntimeError: broken on purpose)" in after.stderr
    assert "Traceback" not in after.stderr


def test_a_stopped_server_with_a_full_queue_is_not_waited_on(setup: tuple) -> None:
    repo, folder, env = setup
    with stopped_server(repo, folder, env) as pid:
        sock_path = str(next(folder.glob("*.sock")))
        held = []
        for _ in range(200):  # more than the queue holds
            s = socket.socket(socket.AF_UNIX)
            s.setblocking(False)
            try:
                s.connect(sock_path)
            except BlockingIOError:
                s.close()
                break
            held.append(s)
        started = time.monotonic()
        res, ran_in = hook(repo, env, write(repo, "FORBIDDEN\n"))
        assert time.monotonic() - started < 20 and ran_in == -1
        assert answer(res)["permissionDecision"] == "deny"
        assert not wait_gone([pid], within=10)
        for s in held:
            s.close()
