#!/usr/bin/env python3
"""What write-time feedback costs a Write: the pre-tool hook on a Write of a small clean
.py file, with the default pack as ``slopjudge init`` copies it, against the same pack
with the write-time rules put back to ``on: [stop, ci]`` (only the rules that were
always pre-tool), each paired with ``python -c pass`` in the same run (runs alternate,
median of the pairs). Goal (SPEC performance): a Write <= 3.5x ``python -c pass``.
``bench/hook.py`` measures the same Write from a wheel install, at low load and beside
two busy CPU loops; this bench says what the write-time rules add to it.

    python bench/write_time.py [--runs N] [--python PY]

``--python``: the interpreter slopjudge is installed in (default: this one); the hook
runs on it as the wrapper ``slopjudge install claude`` writes runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from _common import bench_env, git, paired

CLEAN_PY = '''"""Small helpers for prices."""


def total(prices: list[float], tax: float) -> float:
    """The sum of ``prices`` with ``tax`` added (0.2 for 20 %)."""
    return round(sum(prices) * (1 + tax), 2)
'''


def repo(py: str, ws: str, write_time: bool) -> None:
    os.makedirs(ws)
    git(ws, "init", "-q", "-b", "main")
    subprocess.run([py, "-m", "slopjudge", "init"], cwd=ws, check=True, capture_output=True)
    if not write_time:
        rules = os.path.join(ws, "rules")
        for rule in os.listdir(rules):
            path = os.path.join(rules, rule, "rule.yaml")
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                text = re.sub(r"^on: \[pre-tool, stop, ci\]\ntools: .*\n", "", text, flags=re.M)
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(text)
    git(ws, "add", "-A")
    git(ws, "-c", "user.email=b@example.com", "-c", "user.name=b", "commit", "-qm", "init")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    env = bench_env()
    base_py = [args.python, "-c", "pass"]
    hook = [args.python, "-P", "-c", "import sys; from slopjudge.cli import main; "
            "sys.exit(main())", "hook", "pre-tool"]
    with tempfile.TemporaryDirectory(prefix="slopjudge-bench-") as root:
        figures = {}
        for label, write_time in (("without write-time rules", False),
                                  ("with write-time rules", True)):
            ws = os.path.join(root, label.split()[0])
            repo(args.python, ws, write_time)
            event = json.dumps({"session_id": "bench", "cwd": ws, "hook_event_name": "PreToolUse",
                                "tool_name": "Write", "tool_input": {
                                    "file_path": os.path.join(ws, "src", "prices.py"),
                                    "content": CLEAN_PY}})
            paired(2, base_py, hook, stdin=event, cwd=ws, env=env, expect_out="")  # warm-up
            figures[label] = paired(args.runs, base_py, hook, stdin=event, cwd=ws, env=env,
                                    expect_out="")
        for label, (base, took, ratio) in figures.items():
            print(f"pre-tool Write of a small clean .py, {label}: {took:.1f} ms, python -c pass "
                  f"{base:.1f} ms, ratio {ratio:.2f}x (goal <= 3.5x) "
                  f"{'OK' if ratio <= 3.5 else 'OVER'}")
        (_, before, r0), (_, after, r1) = figures.values()
        print(f"write-time rules add {after - before:.1f} ms ({r1 - r0:+.2f}x python -c pass) "
              "per Write")
        print(f"machine load average while measuring: {os.getloadavg()[0]:.2f} on "
              f"{os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
