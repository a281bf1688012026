#!/usr/bin/env python3
"""Stress: one answer every time. Runs the README's main job,
``slopjudge run --diff examples/agent-change.diff --dry-run``, N times (the second
half beside two busy CPU loops), and the dry run of a 3-file change in the work tree
M times, each in a repository after ``slopjudge init``, from an installed slopjudge
(a wheel built from this checkout into a fresh venv, unless ``--slopjudge`` names
one). For each job it prints the distinct outcomes (the exit status and the report
with its timings taken out: must be exactly one), the slowest wall time (must be under
5 s) and the runs that printed a traceback (must be 0). Exits 1 when any of the
three does not hold.

    python bench/stress.py [--runs 1000] [--files-runs 500] [--slopjudge PATH]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
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


def one(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[str, float, bool]:
    """(outcome, wall seconds, whether a traceback was printed) of one run."""
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)
    wall = time.monotonic() - started
    # Without the timings, and the padding that lined them up.
    lines = (" ".join(ln.split()) for ln in TIMINGS.sub("", proc.stdout).splitlines())
    outcome = f"exit {proc.returncode}\n" + "\n".join(ln for ln in lines if ln)
    return outcome, wall, "Traceback" in proc.stdout + proc.stderr


def stress(name: str, argv: list[str], cwd: str, env: dict[str, str], runs: int,
           busy_from: int) -> bool:
    outcomes: collections.Counter[str] = collections.Counter()
    slowest, tracebacks, loops = 0.0, 0, []
    try:
        for n in range(runs):
            if n == busy_from:
                loops = busy_loops()
            outcome, wall, traceback = one(argv, cwd, env)
            outcomes[outcome] += 1
            slowest = max(slowest, wall)
            tracebacks += traceback
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    ok = len(outcomes) == 1 and slowest < MAX_WALL_S and tracebacks == 0
    busy = f"{runs - busy_from} beside two busy CPU loops" if busy_from < runs else "none busy"
    print(f"{name}: {runs} runs ({busy}): distinct outcomes {len(outcomes)}, "
          f"max wall {slowest:.2f} s (must be < {MAX_WALL_S:g} s), tracebacks {tracebacks}"
          f" -> {'OK' if ok else 'FAILED'}", flush=True)
    if len(outcomes) > 1:
        common, *others = outcomes.most_common()
        print(f"  {common[1]} runs gave:\n    " + common[0].strip().replace("\n", "\n    "))
        for text, count in others:
            lines = text.splitlines()
            differ = [ln for ln in lines if ln not in common[0].splitlines()]
            print(f"  {count} runs differ in:\n    " + "\n    ".join(differ or lines))
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
        print(f"machine load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
