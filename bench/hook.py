#!/usr/bin/env python3
"""What slopjudge's hooks and CI runs cost, with the real default pack, against
``python -c pass`` measured in the same run (runs alternate, median of the pairs).

slopjudge is installed as a user installs it: a wheel built from this checkout
into a fresh venv (not editable), then ``slopjudge init`` in a new git repo.

Rows (goal in brackets):
1. pre-tool rows, each through the hook command `slopjudge install claude` writes, as
   Claude Code runs it, one process per call; the ratio to ``python -c pass`` of the
   same interpreter per pair, median and p95 over ``--runs`` pairs (at least 9),
   at the machine's load and again beside two busy CPU loops the bench starts (with
   the same ratios of CPU time, user + system, which load changes far less):
   Read (no rule applies)                         [median <= 2x]
   Write of a small clean .py                     [median <= 3.5x, p95 <= 6x]
   Write of a .py with slop, denied at write time [median <= 3.5x, p95 <= 6x]
   Edit of src/app.py                             [median <= 3.5x, p95 <= 6x]
   Bash ``ls``                                    [median <= 3.5x, p95 <= 6x]
2. ``run --dry-run --diff`` over 10,000 changed files     [<= 3 s, <= 200 MB peak]
3. CI run (``run --base HEAD~1``) of a commit touching no code [<= 0.1 s]

Stop (1/5/20 files) is ``bench/stop.py``.

    python bench/hook.py [--runs N] [--hooks-only]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from _common import BusyLoops, bench_env, git, init_repo, p95, paired, pairs, regular_install

CLEAN_PY = '''"""Small helpers for prices."""


def total(prices: list[float], tax: float) -> float:
    """The sum of ``prices`` with ``tax`` added (0.2 for 20 %)."""
    return round(sum(prices) * (1 + tax), 2)
'''

SLOP_PY = '''"""A loader."""


def load(path: str) -> str:
    try:
        return open(path).read()
    except:
        pass
'''

PEAK = r"""
import resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode
wall = time.perf_counter() - t
print(wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc)
"""


def hook_event(ws: str, tool: str, tool_input: dict[str, object]) -> str:
    return json.dumps({"session_id": "bench", "cwd": ws, "hook_event_name": "PreToolUse",
                       "tool_name": tool, "tool_input": tool_input})


def verdict(ok: bool) -> str:
    return "OK" if ok else "OVER"


def big_diff(path: str, files: int) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(files):
            name = f"pkg{i // 100:03d}/mod{i:05d}.py"
            fh.write(f"diff --git a/{name} b/{name}\nnew file mode 100644\n--- /dev/null\n"
                     f"+++ b/{name}\n@@ -0,0 +1,3 @@\n+def f{i}(x: int) -> int:\n"
                     f"+    return x + {i}\n+\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="pairs per row (at least 9)")
    parser.add_argument("--hooks-only", action="store_true", help="only the pre-tool rows")
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
    if args.runs < 9:
        parser.error("--runs: at least 9 pairs")
    env = bench_env()
    with tempfile.TemporaryDirectory(prefix="slopjudge-bench-") as root:
        bin_dir = regular_install(root)
        # The baseline is the interpreter the hook runs on, in the same venv: a
        # bare start of it. The bench's own interpreter may carry an editable
        # install's import finder, which makes its start two to three times slower.
        base_py = [os.path.join(bin_dir, "python"), "-c", "pass"]
        sj = os.path.join(bin_dir, "slopjudge")
        ws = init_repo(bin_dir, os.path.join(root, "repo"))
        # The hook as Claude Code runs it: the wrapper `slopjudge install claude` writes,
        # finding the project's virtualenv (here a link to the bench venv).
        os.symlink(os.path.dirname(bin_dir), os.path.join(ws, ".venv"))
        with open(os.path.join(ws, ".git", "info", "exclude"), "a", encoding="utf-8") as fh:
            fh.write(".venv\n.claude/\n")
        subprocess.run([sj, "install", "claude"], cwd=ws, check=True, capture_output=True)
        hook = [os.path.join(ws, ".claude", "hooks", "slopjudge"), "hook", "pre-tool"]
        rows = [
            ("Read (no rule applies)", (2.0, None),
             hook_event(ws, "Read", {"file_path": os.path.join(ws, "src", "app.py")})),
            ("Write of a small clean .py", (3.5, 6.0),
             hook_event(ws, "Write", {"file_path": os.path.join(ws, "src", "prices.py"),
                                      "content": CLEAN_PY})),
            ("Write of a .py with slop, denied at write time", (3.5, 6.0),
             hook_event(ws, "Write", {"file_path": os.path.join(ws, "src", "store.py"),
                                      "content": SLOP_PY})),
            ("Edit of src/app.py", (3.5, 6.0),
             hook_event(ws, "Edit", {"file_path": os.path.join(ws, "src", "app.py"),
                                     "old_string": "return 1", "new_string": "return 2"})),
            ("Bash `ls`", (3.5, 6.0), hook_event(ws, "Bash", {"command": "ls"})),
        ]

        def expect(name: str) -> dict[str, str]:
            """The answer each row must get: a deny for the slop, else none (an allow)."""
            return {"expect_in": "swallowed-errors"} if "slop" in name else {"expect_out": ""}

        for name, _goal, event in rows:  # warm-up: rules cache, bytecode
            pairs(1, base_py, hook, stdin=event, cwd=ws, env=env, **expect(name))
        failed = 0
        for load_name, loops in (("at the machine's load", 0), ("beside two busy CPU loops", 2)):
            print(f"machine load average before the rows {load_name}: "
                  f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs", flush=True)
            with BusyLoops(loops):
                for name, (median_goal, p95_goal), event in rows:
                    got, cpu = pairs(args.runs, base_py, hook, stdin=event, cwd=ws, env=env,
                                     **expect(name))
                    median, high = statistics.median(got), p95(got)
                    ok = median <= median_goal and (p95_goal is None or high <= p95_goal)
                    failed += not ok
                    goal = f"median <= {median_goal:g}x" + (
                        f", p95 <= {p95_goal:g}x" if p95_goal else "")
                    print(f"pre-tool, {name}, {load_name}: median {median:.2f}x, "
                          f"p95 {high:.2f}x python -c pass over {len(got)} pairs "
                          f"(goal {goal}) {verdict(ok)}; CPU median "
                          f"{statistics.median(cpu):.2f}x, p95 {p95(cpu):.2f}x", flush=True)
        if args.hooks_only:
            print(f"machine load average while measuring: {os.getloadavg()[0]:.2f} "
                  f"on {os.cpu_count()} CPUs")
            return 1 if failed else 0

        diff = os.path.join(root, "big.diff")
        big_diff(diff, args.files)
        argv = [sys.executable, "-c", PEAK, sj, "run", "--dry-run", "--diff", diff]
        walls, peaks = [], []
        for _ in range(max(3, args.runs // 2)):
            out = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True,
                                 check=True).stdout.split()
            if out[2] not in ("0", "1"):
                sys.exit(f"run --dry-run failed: {out}")
            walls.append(float(out[0]))
            peaks.append(int(out[1]) / 1024)
        wall, peak = statistics.median(walls), max(peaks)
        print(f"run --dry-run --diff, {args.files:,} changed files: {wall:.2f} s, "
              f"peak {peak:.0f} MB (goal <= 3 s, <= 200 MB) "
              f"{verdict(wall <= 3 and peak <= 200)}", flush=True)

        with open(os.path.join(ws, "README.md"), "a", encoding="utf-8") as fh:
            fh.write("\nMore words.\n")
        git(ws, "commit", "-qam", "docs only")
        run = [sj, "run", "--base", "HEAD~1"]
        paired(1, base_py, run, cwd=ws, env=env)
        base, took, ratio = paired(args.runs, base_py, run, cwd=ws, env=env)
        print(f"CI run of a commit touching no code: {took / 1000:.3f} s "
              f"({ratio:.2f}x python -c pass at {base:.1f} ms) (goal <= 0.1 s) "
              f"{verdict(took <= 100)}")
        load = os.getloadavg()[0]
        print(f"machine load average while measuring: {load:.2f} on {os.cpu_count()} CPUs")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
