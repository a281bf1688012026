"""What the benchmarks share: timing one child process by wall clock and CPU."""

from __future__ import annotations

import os
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


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def regular_install(root: str) -> str:
    """A venv under ``root`` holding slopjudge as a user gets it: a wheel built from
    this checkout, installed (not editable, bytecode compiled). Its dependencies
    come from the interpreter running the bench (a ``.pth`` line; the bench
    installs nothing from the network). Returns the venv's ``bin`` folder."""
    import glob
    import sys
    import sysconfig

    wheels = os.path.join(root, "wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    wheels, ROOT], check=True,
                   capture_output=True)
    [wheel] = glob.glob(os.path.join(wheels, "slopjudge-*.whl"))
    venv = os.path.join(root, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    subprocess.run([sys.executable, "-m", "pip", "--python", py, "install", "-q", "--no-deps",
                    wheel], check=True, capture_output=True)
    site = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # Only the folder goes on sys.path, its .pth files are not run: an editable
    # slopjudge installed there stays invisible to this venv.
    with open(os.path.join(site, "zz_bench_deps.pth"), "w", encoding="utf-8") as fh:
        fh.write(sysconfig.get_path("purelib") + "\n")
    deps = subprocess.run([py, "-c", "import jinja2, jsonschema, ruamel.yaml, tenacity, unidiff"],
                          capture_output=True, text=True, cwd=root)
    if deps.returncode:
        sys.exit("slopjudge's dependencies are not importable from the interpreter running the "
                 f"bench ({sys.executable}); run it with a venv's python that has them")
    where = subprocess.run([py, "-c", "import slopjudge; print(slopjudge.__file__)"],
                           check=True, capture_output=True, text=True, cwd=root).stdout
    if not where.startswith(site):
        sys.exit(f"the bench venv does not use its own slopjudge: {where.strip()}")
    return os.path.join(venv, "bin")


def git(ws: str, *args: str) -> None:
    subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True)


def init_repo(bin_dir: str, ws: str, files: dict[str, str] | None = None) -> str:
    """A git repo with the default pack after ``slopjudge init``, committed."""
    os.makedirs(ws)
    git(ws, "init", "-q")
    git(ws, "config", "user.email", "bench@example.com")
    git(ws, "config", "user.name", "bench")
    for name, text in {"README.md": "# demo\n", "src/app.py": "def main():\n    return 1\n",
                       **(files or {})}.items():
        path = os.path.join(ws, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    subprocess.run([os.path.join(bin_dir, "slopjudge"), "init"], cwd=ws, check=True,
                   capture_output=True)
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "init")
    return ws


def bench_env() -> dict[str, str]:
    """The environment as a user's: no slopjudge or Python settings of this shell."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("SLOPJUDGE_", "SLOPRAIL_", "PYTHON"))}


def paired(runs: int, base: list[str], argv: list[str], *, stdin: str = "", cwd: str | None = None,
           env: dict[str, str] | None = None, expect_out: str | None = None,
           expect_rc: int = 0) -> tuple[float, float, float]:
    """Median base ms, median argv ms and median of the per-pair ratios, runs alternated."""
    import statistics
    import sys

    bases, alls, ratios = [], [], []
    for _ in range(runs):
        b, _cpu, _p = timed(base, stdin="", env=env)
        t, _cpu, proc = timed(argv, stdin=stdin, cwd=cwd, env=env)
        if proc.returncode != expect_rc or (expect_out is not None and proc.stdout != expect_out):
            sys.exit(f"unexpected result from {argv}: rc={proc.returncode} "
                     f"stdout={proc.stdout[:300]!r} stderr={proc.stderr[:300]!r}")
        bases.append(b * 1000)
        alls.append(t * 1000)
        ratios.append(t / b)
    return statistics.median(bases), statistics.median(alls), statistics.median(ratios)


def pairs(runs: int, base: list[str], argv: list[str], *, stdin: str = "", cwd: str | None = None,
          env: dict[str, str] | None = None, expect_out: str | None = None,
          expect_in: str | None = None) -> tuple[list[float], list[float]]:
    """Per pair (``base`` then ``argv``, so both see the same load): the ratio of the wall
    times and the ratio of the CPU times (user + system, children included), which the
    machine's load changes far less. ``expect_out``: its whole stdout; ``expect_in``: a
    text its stdout holds."""
    import sys

    walls, cpus = [], []
    for _ in range(runs):
        b, b_cpu, _p = timed(base, stdin="", env=env)
        t, t_cpu, proc = timed(argv, stdin=stdin, cwd=cwd, env=env)
        if proc.returncode != 0 or (expect_out is not None and proc.stdout != expect_out) or (
                expect_in is not None and expect_in not in proc.stdout):
            sys.exit(f"unexpected result from {argv}: rc={proc.returncode} "
                     f"stdout={proc.stdout[:300]!r} stderr={proc.stderr[:300]!r}")
        walls.append(t / b)
        cpus.append(t_cpu / b_cpu if b_cpu > 0 else float("inf"))
    return walls, cpus


def p95(values: list[float]) -> float:
    """The 95th percentile (nearest rank): with fewer than 20 values, the largest."""
    import math

    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


class BusyLoops:
    """Context manager: ``n`` processes spinning on a CPU each, killed on exit."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.procs: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> BusyLoops:
        import sys

        for _ in range(self.n):
            self.procs.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.wait()
