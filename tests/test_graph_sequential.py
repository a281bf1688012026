"""The check graph one check at a time (``--jobs 1``, or a single check): no pool, the same
results as the pool gives, and no ``concurrent.futures`` import."""

from __future__ import annotations

import subprocess
import sys

import pytest

from slopjudge.checks import graph
from slopjudge.model import Check, CheckResult


def _check(full: str, needs: list[str] | None = None) -> Check:
    rule, cid = full.split("/")
    return Check(id=cid, rule=rule, kind="script", needs=needs or [])


CHECKS = [
    _check("b/late", ["a/first"]),
    _check("a/first"),
    _check("a/bad"),
    _check("b/after-bad", ["a/bad"]),
    _check("c/chain", ["b/after-bad"]),
    _check("c/both", ["a/first", "b/late"]),
    _check("d/orphan", ["z/missing"]),
    _check("d/crash"),
]


def _run_one(check: Check, ran: list[str]) -> CheckResult:
    for need in check.needs:
        assert need in ran, f"{check.full_id} ran before {need}"
    ran.append(check.full_id)
    if check.id == "crash":
        raise RuntimeError("kind blew up")
    return CheckResult(id=check.full_id, rule=check.rule, check=check.id, kind="script",
                       outcome="refuse" if check.id == "bad" else "pass")


def _summary(results: list[CheckResult]) -> list[tuple[str, str, str]]:
    return [(r.id, r.outcome, r.reason) for r in results]


def test_one_job_gives_what_the_pool_gives() -> None:
    ran: list[str] = []
    alone = graph.execute(CHECKS, lambda c: _run_one(c, ran), jobs=1)
    ran_pooled: list[str] = []
    pooled = graph.execute(CHECKS, lambda c: _run_one(c, ran_pooled), jobs=4)
    assert _summary(alone) == _summary(pooled)
    assert [r.id for r in alone] == [c.full_id for c in CHECKS]
    outcome = {r.id: r.outcome for r in alone}
    assert outcome["b/after-bad"] == outcome["c/chain"] == outcome["d/orphan"] == "skipped"
    assert outcome["d/crash"] == "error" and outcome["c/both"] == "pass"
    assert ran.index("a/first") < ran.index("b/late") < ran.index("c/both")


def test_an_interrupt_goes_up_and_starts_nothing_more() -> None:
    ran: list[str] = []

    def run_one(check: Check) -> CheckResult:
        ran.append(check.full_id)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        graph.execute([_check("a/x"), _check("a/y")], run_one, jobs=1)
    assert ran == ["a/x"]


def test_one_check_imports_no_thread_pool() -> None:
    code = ("import sys\nfrom slopjudge.checks import graph\nfrom slopjudge.model import "
            "Check, CheckResult\nc = Check(id='x', rule='r', kind='script')\n"
            "graph.execute([c], lambda c: CheckResult(id=c.full_id, rule='r', check='x', "
            "kind='script', outcome='pass'), jobs=4)\n"
            "print('concurrent.futures' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"


def test_a_change_no_rule_admits_starts_no_pool_and_no_process_machinery(tmp_path: object) -> None:
    # Every check is answered "not applicable" before anything runs: nothing to run at once.
    code = (
        "import sys, json\n"
        "from slopjudge.checks import engine\n"
        "from slopjudge.checks.options import RunOptions\n"
        "from slopjudge.records.record import recording\n"
        "from slopjudge.model import Changeset, Check, Event, FileChange, Rule\n"
        "rules = [Rule(id=f'r{n}', path='/x/rule.yaml', dir='/x', description='d', "
        "paths=['*.py'], checks=[Check(id='scan', rule=f'r{n}', kind='script', "
        "script='/bin/false')]) for n in range(3)]\n"
        "cs = Changeset(files=[FileChange(path='README.md', status='M', diff='')])\n"
        f"events = {str(tmp_path)!r} + '/events.jsonl'\n"
        "out = engine.run(rules, Event(kind='ci'), cs, workspace='/x', "
        "options=RunOptions(jobs=4), on_result=recording(events, Event(kind='ci')))\n"
        "print(json.dumps([[r.id, r.outcome] for r in out]))\n"
        "print('concurrent.futures' in sys.modules, 'slopjudge.procs' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == ('[["r0/scan", "not_applicable"], ["r1/scan", "not_applicable"], '
                      '["r2/scan", "not_applicable"]]')
    assert out[1] == "False False"
