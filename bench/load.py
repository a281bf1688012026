"""Benchmark: loading 200 rule files (3 script checks each), cold and cached.

Prints the median wall time of
  - ``python -c pass`` (the baseline, measured in the same run),
  - a cold ``slopjudge validate`` (rules cache deleted before each run),
  - the unchanged repeat (a rules-cache hit),
and the ratios to the baseline. Goal: the repeat within 3x ``python -c pass``.

Usage: python bench/load.py [--rules N] [--repeat K]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from _common import timed

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def generate(root: str, count: int) -> str:
    rules = os.path.join(root, "rules")
    scripts = os.path.join(rules, "scripts")
    os.makedirs(scripts)
    for i in range(count):
        lines = [
            f"description: Generated rule {i} for the load benchmark",
            "paths: ['src/**']",
            "checks:",
        ]
        for k in range(1, 4):
            script = os.path.join(scripts, f"r{i:03d}-{k}.sh")
            with open(script, "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(script, 0o755)
            lines.append(f"  - id: c{k}")
            lines.append(f"    script: ./scripts/r{i:03d}-{k}.sh")
            lines.append("    timeout: 30s")
            if k > 1:
                lines.append(f"    needs: [c{k - 1}]")
        with open(os.path.join(rules, f"rule-{i:03d}.yaml"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return rules


# Installed packages run from bytecode; compiling the sources on every run
# (PYTHONDONTWRITEBYTECODE) would measure the compiler. Bytecode goes to a
# private prefix so the tree stays clean.
ENV = dict(os.environ)
ENV.pop("PYTHONDONTWRITEBYTECODE", None)


def timed_run(argv: list[str], cwd: str) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """Wall and CPU (user + sys of the child) seconds of one run, in the bench environment."""
    return timed(argv, cwd=cwd, env=ENV)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=11)
    args = parser.parse_args()

    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="slopjudge-bench-") as root:
        generate(root, args.rules)
        ENV["PYTHONPYCACHEPREFIX"] = os.path.join(root, "pycache")
        timed_run([py, "-m", "slopjudge", "--help"], root)  # write the bytecode once
        cache = os.path.join(root, ".slopjudge", "cache", "rules.json")
        uses_cli = os.path.isfile(os.path.join(REPO, "slopjudge", "cli.py"))
        if uses_cli:
            argv = [py, "-m", "slopjudge", "validate", "--rules", "rules"]
            what = "python -m slopjudge validate --rules DIR"
        else:
            argv = [py, "-c", (
                "import sys; from slopjudge.loading.config import load_settings; "
                "from slopjudge.loading.rulecache import load_rules_cached; "
                "r = load_rules_cached(load_settings('.', 'rules')); "
                "sys.exit(1 if r.errors else 0)"
            )]
            what = "load_rules_cached(load_settings(...)) (slopjudge/cli.py not found)"

        def drop_cache() -> None:
            if os.path.exists(cache):
                os.unlink(cache)

        # Interleaved, so load from other processes hits all three alike.
        figures: dict[str, list[tuple[float, float]]] = {"base": [], "cold": [], "warm": []}
        for _ in range(args.repeat):
            wall, cpu, _p = timed_run([py, "-c", "pass"], root)
            figures["base"].append((wall, cpu))
            drop_cache()
            wall, cpu, proc = timed_run(argv, root)
            figures["cold"].append((wall, cpu))
            if proc.returncode != 0:
                print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
                print("bench: validate reported problems on generated rules", file=sys.stderr)
                return 1
            timed_run(argv, root)  # write the cache again (the cold run's files may be racy-new)
            if not os.path.isfile(cache):
                print("bench: no rules cache was written", file=sys.stderr)
                return 1
            wall, cpu, proc = timed_run(argv, root)
            figures["warm"].append((wall, cpu))
        shutil.rmtree(os.path.join(root, ".slopjudge"), ignore_errors=True)

    checks = args.rules * 3
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for k, v in figures.items()}
    best = {k: min(w for w, _ in v) for k, v in figures.items()}
    base = med["base"][0]
    print(f"command: {what}")
    print(f"rules: {args.rules} files, {checks} script checks; {args.repeat} interleaved runs each")
    print(f"{'':24} {'median wall':>12} {'x base':>7} {'best wall':>10} {'median cpu':>11}")
    for key, label in (("base", "python -c pass"), ("cold", "cold validate"),
                       ("warm", "unchanged repeat (hit)")):
        wall, cpu = med[key]
        print(f"{label:24} {wall * 1000:9.1f} ms {wall / base:6.1f}x {best[key] * 1000:7.1f} ms "
              f"{cpu * 1000:8.1f} ms")
    print(f"goal: unchanged repeat <= 3x python -c pass; median ratio {med['warm'][0] / base:.2f}, "
          f"best-of ratio {best['warm'] / best['base']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
