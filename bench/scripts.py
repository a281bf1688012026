"""Benchmark: 50 independent script checks of `true` with `--jobs 2`.

Target: slopjudge's overhead at most 5 ms per check beyond spawning the same
50 processes directly.

Builds a temp git repo with one changed file and a rules folder of 50 rules,
each with one script that execs ``/bin/true``. Then measures, as medians of
several runs:

- ``run``: ``python -m slopjudge run --working-tree --jobs 2`` (after one
  warm-up run, so the validated-rules cache and the bytecode cache are warm,
  as for an installed package in CI re-runs and hooks);
- ``startup``: ``python -m slopjudge --version`` (interpreter and import cost);
- ``direct``: the same 50 scripts spawned from one Python process on a
  2-thread pool, each fed the same payload bytes on stdin, from its rule folder.

Prints the figures and the per-check overhead
``(run - startup - direct) / 50``. ``--profile`` also prints the top of a
cProfile of one in-process engine run. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CHECKS = 50
JOBS = 2
TARGET_MS = 5.0


def build(root: Path) -> Path:
    repo = root / "repo"
    repo.mkdir()
    git = lambda *a: subprocess.run(["git", *a], cwd=repo, check=True, capture_output=True)  # noqa: E731
    git("init", "-q", "-b", "main")
    git("config", "user.email", "bench@example.com")
    git("config", "user.name", "bench")
    (repo / ".gitignore").write_text(".slopjudge/\n")
    (repo / "app.py").write_text("x = 1\n")
    true = "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"
    for n in range(CHECKS):
        folder = repo / "rules" / f"true-{n:02d}"
        folder.mkdir(parents=True)
        (folder / "rule.yaml").write_text(
            f"description: always passes ({n})\nchecks:\n  - id: check\n    script: ./check.sh\n")
        script = folder / "check.sh"
        script.write_text(f"#!/bin/sh\nexec {true}\n")
        script.chmod(0o755)
    git("add", "-A")
    git("commit", "-q", "-m", "bench")
    (repo / "app.py").write_text("x = 'changed'\n")
    return repo


def child_env(pycache: Path) -> dict[str, str]:
    """Our environment, minus slopjudge settings; bytecode cached in a temp folder, as an
    installed package has it (a PYTHONDONTWRITEBYTECODE shell would otherwise recompile
    every module on every run and time the compiler)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SLOPJUDGE_") and k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    res = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    took = time.perf_counter() - start
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({res.returncode}): {res.stderr.decode()}")
    return took


def direct(repo: Path, payload: bytes) -> float:
    """The floor: the same processes, the same stdin, 2 at a time, no slopjudge."""
    folders = sorted((repo / "rules").iterdir())

    def one(folder: Path) -> int:
        return subprocess.run([str(folder / "check.sh")], input=payload, cwd=folder,
                              capture_output=True, start_new_session=True).returncode

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=JOBS) as pool:
        codes = list(pool.map(one, folders))
    took = time.perf_counter() - start
    assert codes == [0] * CHECKS, codes
    return took


def profile(repo: Path) -> None:
    import cProfile
    import pstats

    os.chdir(repo)
    from slopjudge.cli import main

    prof = cProfile.Profile()
    prof.enable()
    main(["run", "--working-tree", "--jobs", str(JOBS), "--output", os.devnull])
    prof.disable()
    stats = pstats.Stats(prof)
    stats.sort_stats("cumulative").print_stats(25)
    stats.sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each (median kept)")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one run")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="slopjudge-bench-") as tmp:
        repo = build(Path(tmp))
        env = child_env(Path(tmp) / "pycache")
        sj = [sys.executable, "-m", "slopjudge"]
        run_argv = sj + ["run", "--working-tree", "--jobs", str(JOBS)]
        timed(run_argv, repo, env)  # warm-up: fills the rules cache (and the bytecode cache)
        payload = subprocess.run(sj + ["payload", "--rule", "true-00"], cwd=repo,
                                 capture_output=True, check=True).stdout

        runs, startups, directs = [], [], []
        for _ in range(args.runs):  # interleaved, so drift hits all three alike
            runs.append(timed(run_argv, repo, env))
            startups.append(timed(sj + ["--version"], repo, env))
            directs.append(direct(repo, payload))
        run_s, startup_s, direct_s = (statistics.median(x) for x in (runs, startups, directs))
        overhead_ms = (run_s - startup_s - direct_s) / CHECKS * 1000

        print(f"{CHECKS} script checks of `true`, --jobs {JOBS}, median of {args.runs} runs")
        print(f"  slopjudge run           {run_s * 1000:8.1f} ms")
        print(f"  slopjudge --version     {startup_s * 1000:8.1f} ms   (start-up baseline)")
        print(f"  direct spawn, 2 threads {direct_s * 1000:8.1f} ms   (process baseline)")
        print(f"  overhead per check      {overhead_ms:8.2f} ms   (target <= {TARGET_MS:g} ms: "
              f"{'met' if overhead_ms <= TARGET_MS else 'NOT met'})")
        print(
            json.dumps(
                {
                    "run_ms": round(run_s * 1000, 1),
                    "startup_ms": round(startup_s * 1000, 1),
                    "direct_ms": round(direct_s * 1000, 1),
                    "overhead_ms_per_check": round(overhead_ms, 2),
                }
            )
        )
        if args.profile:
            profile(repo)


if __name__ == "__main__":
    main()
