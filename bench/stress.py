#!/usr/bin/env python3
"""Stress: one answer every time. Runs the README's main job,
``slopjudge run --diff examples/agent-change.diff --dry-run``, N times (the second
half beside two busy CPU loops), and the dry run of a 3-file change in the work tree
M times, each in a repository after ``slopjudge init``, from an installed slopjudge
(a wheel built from this checkout into a fresh venv, unless ``--slopjudge`` names
one). Runs go one after the other (two at once would each measure the other). For
each job it prints the distinct outcomes with how often each was seen (the exit status
and the report with its timings taken out: must be exactly one), the median and the
slowest wall time of the quiet and of the busy runs (none may take 5 s), and the runs
that printed a traceback (must be 0); the outcome must be the refusal (exit 1) both changes
deserve. Exits 1 when any of these does not hold.
It drives only slopjudge's command line, never how slopjudge runs its checks.

    python bench/stress.py [--runs 1000] [--files-runs 500] [--slopjudge PATH]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from _common import ROOT, bench_env, init_repo, regular_install

MAX_WALL_S = 5.0
# Durations vary from run to run; nothing else in the report may.
TIMINGS = re.compile(r"\b\d+(\.\d+)? m?s\b|\(check time [^)]*\)")

THREE_FILES = {
    "src/app.py": 'def main():\n    print("debug", 1)\n    return 2\n',
    "src/util.py": "def helper(x):\n    try:\n        return int(x)\n    except Exception:\n"
                   "        pass\n",
    "tests/test_app.py": "import pytest\n\n\n@pytest.mark.skip\ndef test_main():\n"
                         "    assert True\n",
}


def busy_loops() -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]


RUN_TIMEOUT_S = 120  # a run this long is stopped and counted as an outcome of its own


def one(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[str, float, bool]:
    """(outcome, wall seconds, whether a traceback was printed) of one run."""
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        said = exc.stdout.decode("utf-8", "replace") if isinstance(exc.stdout, bytes) else ""
        return f"stopped after {RUN_TIMEOUT_S} s", time.monotonic() - started, (
            "Traceback" in said)
    wall = time.monotonic() - started
    # Without the timings, and the padding that lined them up.
    lines = (" ".join(ln.split()) for ln in TIMINGS.sub("", proc.stdout).splitlines())
    outcome = f"exit {proc.returncode}\n" + "\n".join(ln for ln in lines if ln)
    return outcome, wall, "Traceback" in proc.stdout + proc.stderr


def _walls(label: str, walls: list[float]) -> str:
    if not walls:
        return f"{label}: no run"
    return (f"{label} ({len(walls)} runs): median {statistics.median(walls):.2f} s, "
            f"max {max(walls):.2f} s")


def stress(name: str, argv: list[str], cwd: str, env: dict[str, str], runs: int,
           busy_from: int) -> bool:
    """``runs`` runs one after the other, those from ``busy_from`` on beside two busy
    CPU loops; prints the outcomes with their counts and the walls. True when all gave
    one outcome, none took ``MAX_WALL_S`` or longer and none printed a traceback."""
    outcomes: collections.Counter[str] = collections.Counter()
    quiet: list[float] = []
    busy: list[float] = []
    tracebacks, loops = 0, []
    try:
        for n in range(runs):
            if n == busy_from:
                loops = busy_loops()
            outcome, wall, traceback = one(argv, cwd, env)
            outcomes[outcome] += 1
            (busy if loops else quiet).append(wall)
            tracebacks += traceback
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    slowest = max(quiet + busy, default=0.0)
    over = sum(1 for w in quiet + busy if w >= MAX_WALL_S)
    # The one outcome must be the answer the change deserves: a refusal (exit 1), never
    # slopjudge failing to decide (exit 2) the same way every time.
    expected = all(text.startswith("exit 1\n") for text in outcomes)
    ok = len(outcomes) == 1 and expected and over == 0 and tracebacks == 0
    where = f"{len(busy)} beside two busy CPU loops" if busy else "none busy"
    print(f"{name}: {runs} runs ({where}): distinct outcomes {len(outcomes)}, "
          f"max wall {slowest:.2f} s (must be < {MAX_WALL_S:g} s; {over} not), "
          f"tracebacks {tracebacks}, refused as it must: {'yes' if expected else 'NO'} "
          f"-> {'OK' if ok else 'FAILED'}", flush=True)
    print(f"  wall: {_walls('quiet', quiet)}; {_walls('busy', busy)}")
    (common, seen), *others = outcomes.most_common()
    first = common.splitlines()
    print(f"  outcome seen {seen} times: " + " | ".join(first[:3]))
    for text, count in others:
        lines = text.splitlines()
        differ = [ln for ln in lines if ln not in first]
        print(f"  outcome seen {count} times, differing in:\n    "
              + "\n    ".join(differ or lines))
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="runs of the main job")
    parser.add_argument("--files-runs", type=int, default=500,
                        help="runs of the 3-file change's dry run")
    parser.add_argument("--slopjudge", help="the installed slopjudge to run (default: a "
                        "wheel of this checkout in a fresh venv)")
    args = parser.parse_args()
    env = bench_env()
    with tempfile.TemporaryDirectory(prefix="slopjudge-bench-stress-") as root:
        if args.slopjudge:
            sj = os.path.abspath(args.slopjudge)
            bin_dir = os.path.dirname(sj)
        else:
            bin_dir = regular_install(root)
            sj = os.path.join(bin_dir, "slopjudge")
        print(f"machine load average at the start: {os.getloadavg()[0]:.2f} on "
              f"{os.cpu_count()} CPUs", flush=True)
        ws = init_repo(bin_dir, os.path.join(root, "repo"),
                       {name: "" for name in THREE_FILES})
        diff = os.path.join(root, "agent-change.diff")
        shutil.copy(os.path.join(ROOT, "examples", "agent-change.diff"), diff)
        ok = stress("run --diff examples/agent-change.diff --dry-run",
                    [sj, "run", "--diff", diff, "--dry-run"], ws, env, args.runs,
                    args.runs // 2)
        for name, text in THREE_FILES.items():
            with open(os.path.join(ws, name), "w", encoding="utf-8") as fh:
                fh.write(text)
        ok = stress("run --dry-run, 3 files changed", [sj, "run", "--dry-run"], ws, env,
                    args.files_runs, args.files_runs) and ok
        print(f"machine load average at the end: {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
