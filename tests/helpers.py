"""Small builders shared by the engine and CLI tests: temp git repos, rule folders, the CLI."""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

REPO_ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
# Variables from the caller's shell that would change what slopjudge does.
_SCRUB = ("SLOPJUDGE_RUNNER", "SLOPJUDGE_JUDGE_MOCKS", "SLOPJUDGE_EVENTS_FILE",
          "SLOPJUDGE_LAUNCHED_BY", "SLOPRAIL_LAUNCHED_BY", "SLOPJUDGE_DEBUG")
# A rule for hook tests: its script scan.py refuses added lines holding FORBIDDEN.
SCAN_RULE = """\
description: No FORBIDDEN markers in added lines
on: [pre-tool, stop, subagent-stop]
tools: [Write, Edit, MultiEdit, NotebookEdit, apply_patch]
checks:
  - id: scan
    script: scan.py
"""


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return out.stdout.strip()


def make_repo(
    path: Path, files: dict[str, str] | None = None, *, ignore_state: bool = True
) -> Path:
    """A git repo with one commit holding ``files`` (and a .gitignore for slopjudge's state)."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "test@example.com")
    git(path, "config", "user.name", "test")
    git(path, "config", "commit.gpgsign", "false")
    contents = dict(files or {"README.md": "hello\n"})
    if ignore_state:
        contents.setdefault(".gitignore", ".slopjudge/\n")
    write_files(path, contents)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    return path


def commit_all(repo: Path, message: str = "change") -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def sh(body: str) -> str:
    """A /bin/sh script (cheap to start)."""
    return "#!/bin/sh\n" + body.strip("\n") + "\n"


def py(body: str) -> str:
    """A Python script run by this interpreter."""
    return f"#!{PY}\n" + body.strip("\n") + "\n"


def write_rule(
    rules_dir: Path, rule_id: str, rule_yaml: str, files: dict[str, str] | None = None
) -> Path:
    """``rules/<id>/rule.yaml`` plus files beside it; .sh and .py files are made executable."""
    folder = rules_dir / rule_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rule.yaml").write_text(rule_yaml.strip("\n") + "\n", encoding="utf-8")
    for name, text in (files or {}).items():
        if name.endswith((".sh", ".py")):
            executable(folder / name, text)
        else:
            (folder / name).write_text(text, encoding="utf-8")
    return folder


def script_rule(rules_dir: Path, rule_id: str, body: str, **fields: Any) -> Path:
    """A rule with one script check ``check`` running the sh ``body``."""
    extra = "".join(f"{k}: {json.dumps(v)}\n" for k, v in fields.items())
    return write_rule(
        rules_dir,
        rule_id,
        f"description: {rule_id} test rule\n{extra}"
        "checks:\n  - id: check\n    script: ./check.sh\n",
        {"check.sh": sh(body)},
    )


def cli_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env.update(extra or {})
    return env


def sj(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``slopjudge ARGS`` in ``cwd``: the console script's ``main`` in this process, or
    with ``process`` the real ``python -m slopjudge ARGS`` (``timeout`` applies to it)."""
    if not process:
        from slopjudge.cli import main

        rc, out, err = in_process(lambda: main(list(args)), (input or "").encode(), cwd=cwd,
                                  env=cli_env(env))
        return subprocess.CompletedProcess([PY, "-m", "slopjudge", *args], rc, out, err)
    return subprocess.run(
        [PY, "-m", "slopjudge", *args], cwd=cwd, env=cli_env(env), input=input,
        capture_output=True, text=True, timeout=timeout,
    )


def sj_popen(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PY, "-m", "slopjudge", *args], cwd=cwd, env=cli_env(env),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def run_json(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    res = sj("run", "--format", "json", *args, cwd=cwd, env=env)
    try:
        return res.returncode, json.loads(res.stdout)
    except ValueError as exc:
        raise AssertionError(
            f"not JSON (rc {res.returncode}): {res.stdout!r} {res.stderr!r}"
        ) from exc


def by_id(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in report["checks"]}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every line must parse: a torn line fails the test."""
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as exc:
                raise AssertionError(f"{path}:{n}: not JSON: {line!r}") from exc
    return out


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs. A zombie counts as gone: it runs nothing, and in a
    container without a reaping init an orphan may stay a zombie for good."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def wait_gone(pids: list[int], within: float = 5.0) -> list[int]:
    """The pids still alive after ``within`` seconds."""
    deadline = time.monotonic() + within
    alive = [p for p in pids if pid_alive(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [p for p in alive if pid_alive(p)]
    return alive


def kill_quietly(pids: list[int]) -> None:
    """Test clean-up: never leave a process behind, even when an assertion failed."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def read_pids(folder: Path) -> list[int]:
    pids = []
    for f in folder.glob("*.pid"):
        text = f.read_text().strip()
        if text.isdigit():
            pids.append(int(text))
    return pids


def fake_runner(path: Path, *, passed: bool = True, calls: Path | None = None,
                exit_code: int = 0, reasoning: str = "ok") -> Path:
    """A judge runner (SPEC §5): reads the prompt, appends a line to ``calls``, prints a verdict."""
    count = f'echo call >> "{calls}"\n' if calls else ""
    verdict = json.dumps({"pass": passed, "reasoning": reasoning})
    if exit_code == 0:
        tail = f"printf '%s\\n' '{verdict}'\nexit 0\n"
    else:
        tail = f"echo 'runner broke' >&2\nexit {exit_code}\n"
    return executable(path, sh("cat > /dev/null\n" + count + tail))


_IN_PROCESS = threading.Lock()


class _ProcessExit(BaseException):
    """``os._exit(code)`` called during an in-process call: the call's end."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _exit_call(pid: int, real: Callable[[int], NoReturn]) -> Callable[[int], NoReturn]:
    def exit_call(code: int) -> NoReturn:
        if os.getpid() != pid:  # a forked child ends as it would have
            real(code)
        raise _ProcessExit(code)
    return exit_call


def in_process(
    entry: Callable[[], int], stdin: bytes, *, cwd: Path, env: dict[str, str]
) -> tuple[int, str, str]:
    """``entry()`` run as a process would run it: (exit code, stdout, stderr).

    What a process would own is lent for the call and given back: the environment,
    the working folder, stdin/stdout/stderr and the signal handlers. One call at a
    time: concurrent calls are tested as real processes. The call is a process of its
    own in two more ways: ``os._exit`` (a hook's deadline or signal handler) ends the
    call with that code, not the test run; and a hook's deadline counts from the call's
    start, not from when the test process started (a hook process's own start).
    """
    from slopjudge import cachesign, hooks

    with _IN_PROCESS:
        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        saved_sigs = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT,
                                                       signal.SIGHUP)}
        saved_streams = sys.stdin, sys.stdout, sys.stderr
        out, err = io.BytesIO(), io.BytesIO()
        streams = (io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"),
                   io.TextIOWrapper(out, encoding="utf-8", write_through=True),
                   io.TextIOWrapper(err, encoding="utf-8", write_through=True))
        sys.stdin, sys.stdout, sys.stderr = streams
        os.environ.clear()
        os.environ.update(env)
        # The signing key is read once per process; a new process would read this env's.
        cachesign._KEY, cachesign._LOADED = None, False
        saved_exit, saved_started = os._exit, hooks._started
        os._exit = _exit_call(os.getpid(), saved_exit)  # type: ignore[assignment]
        hooks._started = time.monotonic
        try:
            os.chdir(cwd)
            try:
                code = entry()
            except SystemExit as exc:  # argparse's --help, --version and usage errors
                code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            except _ProcessExit as exc:
                code = exc.code
        finally:
            os._exit, hooks._started = saved_exit, saved_started
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            for stream in streams:
                if not stream.closed:
                    stream.flush()
                    stream.detach()  # the buffers stay open to be read below
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
            cachesign._KEY, cachesign._LOADED = None, False
            for sig, handler in saved_sigs.items():
                if handler is not None:
                    signal.signal(sig, handler)
    return code, out.getvalue().decode("utf-8", "replace"), err.getvalue().decode(
        "utf-8", "replace")


def hook_in_process(
    point: str, stdin: bytes, *, cwd: Path, env: dict[str, str]
) -> tuple[int, str, str]:
    """``slopjudge hook <point>`` through the entry function the console script calls."""
    from slopjudge.hooks import main_fast

    return in_process(lambda: main_fast(point), stdin, cwd=cwd, env=env)

