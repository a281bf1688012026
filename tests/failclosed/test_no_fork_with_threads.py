"""Checks start while other threads of slopjudge's process hold locks (an import in
progress, a lock of their own): a child must never inherit one held. So no process
slopjudge runs checks in forks itself while it has other threads; every check is
spawned (exec right after the kernel's fork, no Python code in the child)."""

from __future__ import annotations

import builtins
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from slopjudge.checks import engine
from slopjudge.checks.options import RunOptions
from slopjudge.model import Changeset, Check, CheckResult, Event, FileChange, Rule

# Imported by the checks and, at the same time, by a thread of this process that stops
# half-way through (holding the module's import lock) until the test lets it go.
SLOWMOD = """\
import builtins
getattr(builtins, "_sj_hold_import", lambda: None)()
VALUE = 7
"""

CHECK = """\
import json, os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import sjslowmod
data = json.load(sys.stdin)
sys.exit(0 if sjslowmod.VALUE == 7 and data["check"]["id"] == "check" else 3)
"""


@pytest.fixture
def held_locks(tmp_path: Path) -> Iterator[Path]:
    """Rules whose scripts import ``sjslowmod``, while two threads of this process hold
    locks: one is inside ``import sjslowmod``, one holds a plain lock."""
    lib = tmp_path / "rules" / "_lib"
    lib.mkdir(parents=True)
    (lib / "sjslowmod.py").write_text(SLOWMOD)
    release = threading.Event()
    entered = threading.Event()
    lock = threading.Lock()

    def hold_import() -> None:
        entered.set()
        release.wait(120)

    builtins._sj_hold_import = hold_import  # type: ignore[attr-defined]

    def importer() -> None:
        sys.path.insert(0, str(lib))
        try:
            import sjslowmod  # noqa: F401
        finally:
            sys.path.remove(str(lib))

    def locker() -> None:
        with lock:
            release.wait(120)

    threads = [threading.Thread(target=importer, daemon=True),
               threading.Thread(target=locker, daemon=True)]
    for t in threads:
        t.start()
    assert entered.wait(30), "the import never started"
    try:
        yield tmp_path
    finally:
        release.set()
        for t in threads:
            t.join(30)
        del builtins._sj_hold_import  # type: ignore[attr-defined]
        sys.modules.pop("sjslowmod", None)


def _run(root: Path, count: int) -> list[CheckResult]:
    rules = []
    for n in range(count):
        folder = root / "rules" / f"r{n}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "check.py").write_text(CHECK)
        check = Check(id="check", rule=f"r{n}", kind="script", script=str(folder / "check.py"),
                      timeout=20.0)
        rules.append(Rule(id=f"r{n}", path=str(folder / "rule.yaml"), dir=str(folder),
                          description="imports a module a thread is importing",
                          checks=[check]))
    change = Changeset(files=[FileChange(path="a.py", status="A", new_content="x = 1\n",
                                         diff="+x = 1\n", added=1)])
    return engine.run(rules, Event(kind="ci"), change, workspace=str(root),
                      options=RunOptions(jobs=4))


def test_checks_run_while_other_threads_hold_locks(held_locks: Path) -> None:
    forks: list[int] = []
    os.register_at_fork(before=lambda: forks.append(threading.active_count()))
    results = _run(held_locks, 12)
    assert [(r.rule, r.outcome, r.reason) for r in results] == [
        (f"r{n}", "pass", "") for n in range(12)]
    # Only os.fork (and a Popen with preexec_fn) runs the before-fork hooks: none ran.
    assert forks == [], f"{len(forks)} forks of this process while it had other threads"
