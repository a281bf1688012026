"""Isolation every test gets, so the suite can run in parallel (pytest-xdist).

Each worker process keeps slopjudge's state outside the checkout and apart from the
user's and from other workers': the cache-signing key lives under a private
XDG_STATE_HOME, and the variables that would change what slopjudge does are
cleared. Tests that need another key or state set their own (monkeypatch or env=).

Every payload slopjudge builds while the suite runs, in this process and in every
subprocess it starts (hooks, `slopjudge run`, `slopjudge test`), is validated against
``schemas/payload.schema.json`` after the test that built it (tests/payloadcheck.py):
a payload of the wrong shape fails that test.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.payloadcheck import PayloadCheck, PayloadShapeError

# Hypothesis's timing checks (a deadline per example, "input generation is slow") would fail
# a test by how loaded the machine is (seen at load 20 on 2 cores); the suite's answer must not
# depend on load. Tests that set their own health checks add too_slow themselves.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

_PAYLOADS = pytest.StashKey[PayloadCheck]()
_ROOT = Path(__file__).resolve().parent.parent

# From the caller's shell, these would change what slopjudge does in every test.
_SCRUB = ("SLOPJUDGE_RUNNER", "SLOPJUDGE_JUDGE_MOCKS", "SLOPJUDGE_EVENTS_FILE",
          "SLOPJUDGE_LAUNCHED_BY", "SLOPRAIL_LAUNCHED_BY", "SLOPJUDGE_DEBUG")


@pytest.fixture(scope="session", autouse=True)
def _private_state(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in ("XDG_STATE_HOME", "CODEX_HOME", *_SCRUB)}
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("xdg-state"))
    # Codex's settings (its trust of hooks among them): an empty folder, not the user's.
    os.environ["CODEX_HOME"] = str(tmp_path_factory.mktemp("codex-home"))
    for name in _SCRUB:
        os.environ.pop(name, None)
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture
def verifier(tmp_path: Path) -> str:
    """slopjudge-verify (a judge runner's verifier), run from this checkout's interpreter."""
    path = tmp_path / "slopjudge-verify"
    path.write_text(f'#!/bin/sh\nexec {sys.executable} -m slopjudge.judging.verifier "$@"\n')
    path.chmod(0o755)
    return str(path)


@pytest.fixture(scope="session")
def slopjudge_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout built as a wheel once per run: the first worker to ask builds it
    (under a lock, in the folder all xdist workers' temporary folders share), the
    others wait for it. Two builds in one source tree at once would race on ``build/``."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out = shared / "slopjudge-wheel"
    with open(shared / "slopjudge-wheel.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not list(out.glob("slopjudge-*.whl")):
            # With this venv's setuptools (the `test` extra holds the build-system's
            # requirement): an isolated build would fetch setuptools from the index each
            # run, six seconds of waiting for the same wheel.
            build = subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                 "--disable-pip-version-check", "-w", str(out), str(_ROOT)],
                capture_output=True, text=True, timeout=600)
            assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = out.glob("slopjudge-*.whl")
    return wheel


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: one worker more than this process may use cores. Many tests wait more
    than they compute (a check's timeout, a pip install from the index, process starts):
    with one worker per core a core idles while its worker waits. On 2 cores the suite
    took 194 s with 2 workers, 134 s with 3 (same machine, same load, CPU time the same).
    PYTEST_XDIST_AUTO_NUM_WORKERS still wins (xdist's own hook reads it)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) + 1
    return (os.cpu_count() or 1) + 1


# Each file runs on one worker (`--dist loadfile`: its module fixtures are built once);
# files are handed out in this order (`--no-loadscope-reorder`, else xdist orders them
# by their number of tests): the ones that take longest first (wall-clock, measured with
# bench/suite.py), so the run does not end with one worker still in a long file while the
# others wait. test_precommit.py leads: most of its wall is pip waiting on the index, which
# the other workers' CPU work overlaps. Order only: nothing is skipped.
_LONGEST_FIRST = ("test_precommit.py", "test_action.py", "test_self.py", "test_inproc_scripts.py",
                  "test_protect_hooks.py", "test_packaging.py", "test_split.py",
                  "test_own_install.py", "test_procs_leaks.py", "test_hooks_fuzz.py",
                  "test_action_system_python.py", "test_self_history.py",
                  "test_self_history_judges.py", "test_hooks.py", "test_agent.py",
                  "test_hooks_claude_e2e.py", "test_agent_claude_e2e.py",
                  "test_hooks_outcomes.py", "test_loading_limits.py", "test_outcomes_run.py",
                  "test_hooks_helper_loading.py", "test_pyworker.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return _LONGEST_FIRST.index(name) if name in _LONGEST_FIRST else len(_LONGEST_FIRST)

    items.sort(key=rank)  # stable: the order inside each file is kept


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_PAYLOADS] = PayloadCheck()
    _interruptible()
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        _compile_slopjudge()


def _interruptible() -> None:
    """Ctrl-C as a terminal gives it: a shell without job control starts a background
    command with SIGINT ignored, every process below inherits that, and the tests that
    interrupt a run or a writer with SIGINT would wait for an end that never comes."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _compile_slopjudge() -> None:
    """slopjudge's bytecode, written once before any worker starts. Under
    PYTHONDONTWRITEBYTECODE (set on some machines and CI images) no process writes it, so
    each `slopjudge` the suite starts compiled the modules it imports: 0.2 of the 0.85
    CPU-s of a `slopjudge run --dry-run`. The package's data (the rule pack) is left as it
    is: its scripts keep their bytecode outside the checkout (PYTHONPYCACHEPREFIX)."""
    import compileall

    package = _ROOT / "slopjudge"
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).parts[0] != "data":
            compileall.compile_file(path, quiet=2)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> Iterator[None]:
    # Payloads kept after their test had finished (a process that outlived it).
    try:
        session.config.stash[_PAYLOADS].close()
    except PayloadShapeError as exc:
        # Printed, and under xdist what makes the controller fail the run.
        session.shouldfail = str(exc)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    # Before any fixture: what a module fixture builds for this test is this test's.
    item.stash[_FOLDER] = item.config.stash[_PAYLOADS].start(item.nodeid)
    return (yield)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    try:
        return (yield)
    finally:
        if _FOLDER in item.stash:
            item.config.stash[_PAYLOADS].finish(item.stash[_FOLDER])


_FOLDER = pytest.StashKey[Path]()
