#!/usr/bin/env python3
"""How much a PreToolUse hook costs the agent, measured against baselines taken
in the same run.

1. Fast path: 100 rules, none of which applies to the call (all ``on: [stop]``),
   and a Bash call. Median of ``slopjudge hook pre-tool < payload`` against the
   median of ``python -c pass`` with the same interpreter. Goal: at most 3x.
2. One applicable script rule whose script sleeps 50 ms, and a Write. Median
   hook time against the median of running that script by itself.
   Goal: at most the script's own time + 100 ms.

Both start after a warm-up run that fills the rules cache (and compiles the
bytecode, into a private PYTHONPYCACHEPREFIX).

    python bench/hook.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from _common import timed

SLOPJUDGE = os.path.join(os.path.dirname(sys.executable), "slopjudge")


def median_ms(runs: int, argv: list[str], stdin: str = "", cwd: str | None = None,
              env: dict[str, str] | None = None, expect_out: str | None = None
              ) -> tuple[float, float]:
    """Median wall and CPU milliseconds over ``runs`` runs."""
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu, proc = timed(argv, stdin=stdin, cwd=cwd, env=env)
        if proc.returncode != 0 or (expect_out is not None and proc.stdout != expect_out):
            sys.exit(f"unexpected result from {argv}: rc={proc.returncode} "
                     f"stdout={proc.stdout[:200]!r} stderr={proc.stderr[:300]!r}")
        walls.append(wall * 1000)
        cpus.append(cpu * 1000)
    return statistics.median(walls), statistics.median(cpus)


def make_repo(root: str) -> str:
    ws = os.path.join(root, "repo")
    os.makedirs(os.path.join(ws, "rules"))
    subprocess.run(["git", "init", "-q", ws], check=True)
    for i in range(100):
        with open(os.path.join(ws, "rules", f"stop-only-{i:03d}.yaml"), "w") as fh:
            fh.write(f"description: stop-only rule {i}\non: [stop]\n"
                     "checks:\n  - script: \"true\"\n")
    return ws


def add_sleeping_rule(ws: str) -> str:
    folder = os.path.join(ws, "rules", "sleepy")
    os.makedirs(folder)
    script = os.path.join(folder, "sleep.sh")
    with open(script, "w") as fh:
        fh.write("#!/bin/sh\ncat >/dev/null\nsleep 0.05\n")
    os.chmod(script, 0o755)
    with open(os.path.join(folder, "rule.yaml"), "w") as fh:
        fh.write("description: sleeps 50 ms\non: [pre-tool]\ntools: [Write]\n"
                 "checks:\n  - script: sleep.sh\n")
    return script


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLOPJUDGE_", "SLOPRAIL_"))}
    with tempfile.TemporaryDirectory(prefix="slopjudge-bench-") as root:
        # An installed package has its bytecode compiled; with
        # PYTHONDONTWRITEBYTECODE every run would recompile slopjudge. Keep the
        # bytecode in a private prefix instead, so the source tree stays clean.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = os.path.join(root, "pycache")
        ws = make_repo(root)
        bash = json.dumps({"session_id": "bench", "cwd": ws, "hook_event_name": "PreToolUse",
                           "tool_name": "Bash", "tool_input": {"command": "ls -la"}})
        hook = [SLOPJUDGE, "hook", "pre-tool"]
        median_ms(1, hook, bash, ws, env, expect_out="")  # warm-up: fills the rules cache
        base, base_cpu = median_ms(args.runs, [sys.executable, "-c", "pass"], env=env)
        fast, fast_cpu = median_ms(args.runs, hook, bash, ws, env, expect_out="")
        ratio = fast / base
        print(f"fast path, 100 rules, none applies: median {fast:.1f} ms "
              f"(CPU {fast_cpu:.1f} ms); python -c pass {base:.1f} ms (CPU {base_cpu:.1f} ms); "
              f"ratio {ratio:.2f}x, CPU ratio {fast_cpu / max(base_cpu, 0.001):.2f}x "
              f"(goal <= 3x) {'OK' if ratio <= 3 else 'OVER'}")

        script = add_sleeping_rule(ws)
        write = json.dumps({"session_id": "bench", "cwd": ws, "hook_event_name": "PreToolUse",
                            "tool_name": "Write",
                            "tool_input": {"file_path": os.path.join(ws, "x.py"),
                                           "content": "print('hi')\n"}})
        median_ms(1, hook, write, ws, env, expect_out="")
        own, own_cpu = median_ms(args.runs, [script], "{}", env=env)
        judged, judged_cpu = median_ms(args.runs, hook, write, ws, env, expect_out="")
        over = judged - own
        print(f"one applicable script rule (sleeps 50 ms): median {judged:.1f} ms "
              f"(CPU {judged_cpu:.1f} ms); the script alone {own:.1f} ms "
              f"(CPU {own_cpu:.1f} ms); overhead {over:.1f} ms, CPU overhead "
              f"{judged_cpu - own_cpu:.1f} ms (goal <= 100 ms) {'OK' if over <= 100 else 'OVER'}")
        print(f"machine load average while measuring: {os.getloadavg()[0]:.2f} "
              f"on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
