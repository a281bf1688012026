#!/usr/bin/env python3
"""What each test file costs: CPU seconds (the tests' own process and every process they
start and wait for) and wall seconds, the suite's total, and the wall the slowest worker
would take under ``--dist loadfile`` (one file stays on one worker) with N workers.

    python bench/suite.py [--workers 3] [--from DIR] [pytest args, default: -n 0 tests]

CPU seconds are the figure to trust on a shared machine: they do not change with the
load, wall does. The critical path replays xdist's loadfile scheduler (files in the order
tests/conftest.py sets; a worker is handed its next file once two or fewer of its tests
are left) over each test's measured wall, so it is as loaded as the run it replays: read
it next to the load averages printed with it, and next to the total CPU over the cores.
``--from`` prints the figures of an earlier run's folder again (several folders merge:
a file measured twice keeps its last run).

Also a pytest plugin (``-p bench.suite``): with SUITE_CLOCK_DIR set, each worker writes
one line per test (file, order, wall, CPU) to a file in that folder.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _cpu() -> float:
    """This process's CPU seconds and those of its children it has waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


# The plugin half: one JSON line per test, setup and teardown included (a module
# fixture's cost lands on the test that builds or ends it, as it does on a worker).
_order: dict[str, int] = {}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    _order.update((item.nodeid, i) for i, item in enumerate(items))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    out = os.environ.get("SUITE_CLOCK_DIR")
    wall, cpu = time.perf_counter(), _cpu()
    try:
        return (yield)
    finally:
        if out:
            row = {"test": item.nodeid, "file": item.nodeid.split("::")[0],
                   "order": _order.get(item.nodeid, 0),
                   "wall": time.perf_counter() - wall, "cpu": _cpu() - cpu}
            name = os.environ.get("PYTEST_XDIST_WORKER", "main")
            with open(Path(out) / f"{name}-{os.getpid()}.jsonl", "a") as fh:
                fh.write(json.dumps(row) + "\n")


# The script half.

def read_rows(folders: list[Path]) -> dict[str, list[dict[str, float]]]:
    """Each file's tests in run order; a file met in a later folder replaces the earlier."""
    files: dict[str, list[dict[str, float]]] = {}
    for folder in folders:
        seen: dict[str, list[dict[str, float]]] = {}
        for path in sorted(folder.glob("*.jsonl")):
            for line in path.read_text().splitlines():
                row = json.loads(line)
                seen.setdefault(row["file"], []).append(row)
        files.update(seen)
    return {f: sorted(rows, key=lambda r: r["order"]) for f, rows in files.items()}


def critical_path(files: dict[str, list[dict[str, float]]], workers: int) -> list[float]:
    """Each worker's busy wall when xdist's loadfile scheduler hands out ``files`` (in
    their run order) over ``workers``: a worker gets one file at the start, and its next
    file whenever two or fewer of its assigned tests are left (xdist's LoadScopeScheduling)."""
    queue = sorted(files, key=lambda f: files[f][0]["order"])
    pending: list[list[float]] = [[] for _ in range(workers)]
    clock = [0.0] * workers
    events: list[tuple[float, int]] = []  # (time a worker's running test ends, worker)

    def assign(w: int) -> None:
        if queue and len(pending[w]) <= 2:
            pending[w].extend(row["wall"] for row in files[queue.pop(0)])

    def start(w: int) -> None:
        if pending[w]:
            heapq.heappush(events, (clock[w] + pending[w][0], w))

    for w in range(workers):
        assign(w)
    for w in range(workers):
        assign(w)
        start(w)
    while events:
        clock_w, w = heapq.heappop(events)
        clock[w] = clock_w
        pending[w].pop(0)
        assign(w)
        start(w)
    return clock


def report(files: dict[str, list[dict[str, float]]], workers: int) -> None:
    total_cpu = sum(r["cpu"] for rows in files.values() for r in rows)
    total_wall = sum(r["wall"] for rows in files.values() for r in rows)
    print(f"{'file':<48} {'tests':>5} {'CPU-s':>7} {'wall-s':>7}")
    for f, rows in sorted(files.items(), key=lambda kv: -sum(r["cpu"] for r in kv[1])):
        print(f"{f:<48} {len(rows):>5} {sum(r['cpu'] for r in rows):>7.1f} "
              f"{sum(r['wall'] for r in rows):>7.1f}")
    tests = sum(len(rows) for rows in files.values())
    print(f"{'total':<48} {tests:>5} {total_cpu:>7.1f} {total_wall:>7.1f}")
    clocks = critical_path(files, workers)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"loadfile over {workers} workers: slowest worker {max(clocks):.1f} s of wall "
          f"(workers {', '.join(f'{c:.0f}' for c in sorted(clocks, reverse=True))}); "
          f"total CPU / {cores} cores: {total_cpu / (cores or 1):.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--from", dest="folders", type=Path, action="append", default=[])
    args, pytest_args = parser.parse_known_args()
    if not args.folders:
        folder = Path(tempfile.mkdtemp(prefix="suite-clock-"))
        env = {**os.environ, "SUITE_CLOCK_DIR": str(folder)}
        print(f"load average at start: {os.getloadavg()}; rows in {folder}", flush=True)
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", "-p", "bench.suite",
                        *(pytest_args or ["-n", "0", "tests"])], cwd=ROOT, env=env)
        print(f"pytest took {time.perf_counter() - start:.1f} s of wall; load average at "
              f"end: {os.getloadavg()}")
        args.folders = [folder]
    report(read_rows(args.folders), args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
