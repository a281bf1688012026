"""The check graph: needs order, skips naming the failed need, fixed report order, --jobs bound."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

from slopjudge.checks import graph
from slopjudge.model import Check, CheckResult
from tests.helpers import by_id, commit_all, make_repo, py, run_json, write_files, write_rule


def _check(full: str, needs: list[str] | None = None) -> Check:
    rule, cid = full.split("/")
    return Check(id=cid, rule=rule, kind="script", needs=needs or [])


def _result(check: Check, outcome: str) -> CheckResult:
    return CheckResult(id=check.full_id, rule=check.rule, check=check.id, kind="script",
                       outcome=outcome)


def test_needs_run_first_and_failures_skip_dependents() -> None:
    checks = [
        _check("b/late", ["a/first"]),
        _check("a/first"),
        _check("a/bad"),
        _check("b/after-bad", ["a/bad"]),
        _check("c/chain", ["b/after-bad"]),  # skipped transitively
        _check("c/both", ["a/first", "b/late"]),
    ]
    finished: list[str] = []
    lock = threading.Lock()

    def run_one(check: Check) -> CheckResult:
        with lock:
            for need in check.needs:
                assert need in finished, f"{check.full_id} started before {need} finished"
        time.sleep(0.01)
        with lock:
            finished.append(check.full_id)
        return _result(check, "refuse" if check.id == "bad" else "pass")

    results = graph.execute(checks, run_one, jobs=4)
    assert [r.id for r in results] == [c.full_id for c in checks]
    got = {r.id: r for r in results}
    assert got["b/late"].outcome == "pass"
    assert got["c/both"].outcome == "pass"
    assert got["b/after-bad"].outcome == "skipped"
    assert "a/bad" in got["b/after-bad"].reason and "refuse" in got["b/after-bad"].reason
    assert got["c/chain"].outcome == "skipped" and "b/after-bad" in got["c/chain"].reason
    assert "b/after-bad" not in finished and "c/chain" not in finished


def test_a_need_outside_the_run_skips_never_passes() -> None:
    checks = [_check("a/x", ["zz/missing"])]
    ran: list[str] = []
    results = graph.execute(checks, lambda c: (ran.append(c.full_id), _result(c, "pass"))[1])
    assert ran == []
    assert results[0].outcome == "skipped" and "zz/missing" in results[0].reason


def test_checks_whose_needs_make_a_cycle_are_errors_never_skipped() -> None:
    # The loader refuses a cycle; one reaching the graph all the same must block.
    checks = [_check("a/x", ["a/y"]), _check("a/y", ["a/x"]), _check("a/z")]
    for jobs in (1, 3):
        results = graph.execute(checks, lambda c: _result(c, "pass"), jobs=jobs)
        assert [r.outcome for r in results] == ["error", "error", "pass"]
        assert "cycle" in results[0].reason


def test_a_crashing_check_kind_is_an_error_not_a_crash() -> None:
    def boom(check: Check) -> CheckResult:
        raise RuntimeError("kaput")

    [res] = graph.execute([_check("a/x")], boom)
    assert res.outcome == "error" and "kaput" in res.reason


def test_result_order_does_not_follow_completion_order() -> None:
    checks = [_check(f"r/c{n}") for n in range(12)]
    delays = {c.full_id: random.Random(n).uniform(0, 0.05) for n, c in enumerate(checks)}
    delays["r/c0"] = 0.15  # the first listed finishes last
    seen: list[str] = []

    def run_one(check: Check) -> CheckResult:
        time.sleep(delays[check.full_id])
        seen.append(check.full_id)
        return _result(check, "pass")

    results = graph.execute(checks, run_one, jobs=6, on_result=lambda r: None)
    assert seen[-1] == "r/c0"
    assert [r.id for r in results] == [c.full_id for c in checks]


def test_jobs_bound_in_process() -> None:
    live = 0
    peak = 0
    lock = threading.Lock()

    def run_one(check: Check) -> CheckResult:
        nonlocal live, peak
        with lock:
            live += 1
            peak = max(peak, live)
        time.sleep(0.02)
        with lock:
            live -= 1
        return _result(check, "pass")

    graph.execute([_check(f"r/c{n}") for n in range(20)], run_one, jobs=3)
    assert peak == 3


# ---- through the CLI, with real scripts -----------------------------------------

STAMP = """
import json, os, sys, time
sys.stdin.read()
start = time.time()
time.sleep(float(os.environ.get("NAP", "0")) or {nap})
end = time.time()
with open({log!r}, "a") as fh:
    rec = {{"id": os.environ["SLOPJUDGE_RULE"] + "/{cid}", "start": start, "end": end}}
    fh.write(json.dumps(rec) + "\\n")
sys.exit({code})
"""


def _stamp_rule(
    rules: Path,
    rule_id: str,
    log: Path,
    checks: list[tuple[str, float, int, list[str]]],
    on: str = "",
) -> None:
    lines = [f"description: {rule_id} stamps", "checks:"]
    files = {}
    for cid, nap, code, needs in checks:
        lines += [f"  - id: {cid}", f"    script: ./{cid}.py"]
        if needs:
            lines.append(f"    needs: {json.dumps(needs)}")
        files[f"{cid}.py"] = py(STAMP.format(nap=nap, log=str(log), cid=cid, code=code))
    write_rule(rules, rule_id, "\n".join(lines), files)


def _log(path: Path) -> dict[str, dict[str, float]]:
    return {d["id"]: d for d in map(json.loads, path.read_text().splitlines())}


def _changed_repo(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo")
    return repo


def test_needs_within_and_across_files_via_cli(tmp_path: Path) -> None:
    repo = _changed_repo(tmp_path)
    log = tmp_path / "log.jsonl"
    _stamp_rule(repo / "rules", "alpha", log, [
        ("slow", 0.3, 0, []),
        ("after-slow", 0.0, 0, ["slow"]),  # same file, short id
        ("fails", 0.0, 1, []),
    ])
    _stamp_rule(repo / "rules", "beta", log, [
        ("cross", 0.0, 0, ["alpha/after-slow"]),  # across files
        ("blocked", 0.0, 0, ["alpha/fails"]),
    ])
    commit_all(repo, "rules")
    write_files(repo, {"README.md": "changed\n"})
    code, report = run_json("--jobs", "4", cwd=repo)
    assert code == 1
    got = by_id(report)
    stamps = _log(log)
    assert stamps["alpha/after-slow"]["start"] >= stamps["alpha/slow"]["end"]
    assert stamps["beta/cross"]["start"] >= stamps["alpha/after-slow"]["end"]
    assert got["beta/cross"]["outcome"] == "pass"
    assert got["beta/blocked"]["outcome"] == "skipped"
    assert "alpha/fails" in got["beta/blocked"]["reason"]
    assert "beta/blocked" not in stamps


def test_report_order_is_fixed_whatever_finishes_first(tmp_path: Path) -> None:
    repo = _changed_repo(tmp_path)
    log = tmp_path / "log.jsonl"
    # Earlier checks sleep longer, so they finish last.
    _stamp_rule(repo / "rules", "order", log,
                [(f"c{n}", 0.05 * (6 - n), 0, []) for n in range(6)])
    commit_all(repo, "rules")
    write_files(repo, {"README.md": "changed\n"})
    orders = []
    for _ in range(2):
        code, report = run_json("--jobs", "6", cwd=repo)
        assert code == 0
        orders.append([c["id"] for c in report["checks"]])
    finish = [d["id"] for d in sorted(map(json.loads, log.read_text().splitlines()),
                                      key=lambda d: d["end"])]
    assert finish[:6] != [f"order/c{n}" for n in range(6)]  # completion order differs...
    assert orders[0] == orders[1] == [f"order/c{n}" for n in range(6)]  # ...the report does not


def _peak_overlap(stamps: list[dict[str, float]]) -> int:
    edges = sorted([(s["start"], 1) for s in stamps] + [(s["end"], -1) for s in stamps],
                   key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
    live = peak = 0
    for _, delta in edges:
        live += delta
        peak = max(peak, live)
    return peak


def test_jobs_bound_respected_by_real_scripts(tmp_path: Path) -> None:
    repo = _changed_repo(tmp_path)
    log = tmp_path / "log.jsonl"
    _stamp_rule(repo / "rules", "many", log, [(f"c{n}", 0.15, 0, []) for n in range(8)])
    commit_all(repo, "rules")
    write_files(repo, {"README.md": "changed\n"})
    for jobs in (1, 2, 3):
        log.write_text("")
        code, report = run_json("--jobs", str(jobs), cwd=repo)
        assert code == 0, report
        stamps = list(_log(log).values())
        assert len(stamps) == 8
        peak = _peak_overlap(stamps)
        assert peak <= jobs, f"--jobs {jobs} but {peak} ran at once"
        if jobs > 1:
            assert peak > 1, "checks never overlapped: the pool is not parallel"
