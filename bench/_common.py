"""What the benchmarks share: timing one child process by wall clock and CPU."""

from __future__ import annotations

import resource
import subprocess
import time


def timed(
    argv: list[str],
    *,
    stdin: str | None = None,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """(wall seconds, CPU seconds of the child and its descendants, result) of one run.

    ``stdin`` None leaves the child this process's stdin, as ``subprocess.run`` does.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, text=True, capture_output=True, cwd=cwd, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc
