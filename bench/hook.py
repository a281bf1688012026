#!/usr/bin/env python3
"""What slopjudge's hooks and CI runs cost, with the real default pack, against
``python -c pass`` measured in the same run (runs alternate, median of the pairs).

slopjudge is installed as a user installs it: a wheel built from this checkout
into a fresh venv (not editable), then ``slopjudge init`` in a new git repo.

Rows (goal in brackets):
1. pre-tool, Read: no rule applies                         [<= 2.5x python -c pass]
   (rows 1-3: the hook command `slopjudge install claude` writes, as Claude Code runs it,
   served by the hook server a first call starts; each also in its own process,
   SLOPJUDGE_SERVER=0)
2. pre-tool, Write of a small clean .py: the pack's checks [<= 3x]
3. pre-tool, Bash ``ls``                                   [<= 3x]
4. ``run --dry-run --diff`` over 10,000 changed files     [<= 3 s, <= 200 MB peak]
5. CI run (``run --base HEAD~1``) of a commit touching no code [<= 0.1 s]

Stop (1/5/20 files) is ``bench/stop.py``.

    python bench/hook.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from _common import bench_env, git, init_repo, paired, regular_install

CLEAN_PY = '''"""Small helpers for prices."""


def total(prices: list[float], tax: float) -> float:
    """The sum of ``prices`` with ``tax`` added (0.2 for 20 %)."""
    return round(sum(prices) * (1 + tax), 2)
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
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--files", type=int, default=10_000)
    args = parser.parse_args()
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
            ("pre-tool, Read (no rule applies)", 2.5,
             hook_event(ws, "Read", {"file_path": os.path.join(ws, "src", "app.py")})),
            ("pre-tool, Write of a small clean .py", 3.0,
             hook_event(ws, "Write", {"file_path": os.path.join(ws, "src", "prices.py"),
                                      "content": CLEAN_PY})),
            ("pre-tool, Bash `ls`", 3.0, hook_event(ws, "Bash", {"command": "ls"})),
        ]
        # The hook server a first call starts (README: "The PreToolUse hook server"), in
        # a folder of this run's; each row is also measured without it, for comparison.
        servers = os.path.join(root, "srv")
        os.mkdir(servers, 0o700)
        env = dict(env, SLOPJUDGE_SERVER_DIR=servers)
        env.pop("SLOPJUDGE_SERVER", None)
        alone = dict(env, SLOPJUDGE_SERVER="0")
        for _name, _goal, event in rows:  # warm-up: rules cache, bytecode, the server
            paired(1, base_py, hook, stdin=event, cwd=ws, env=env, expect_out="")
        server = wait_for_server(servers)
        for name, goal, event in rows:
            base, took, ratio = paired(args.runs, base_py, hook, stdin=event, cwd=ws, env=env,
                                       expect_out="")
            _, own, own_ratio = paired(args.runs, base_py, hook, stdin=event, cwd=ws,
                                       env=alone, expect_out="")
            print(f"{name}: {took:.1f} ms, python -c pass {base:.1f} ms, ratio {ratio:.2f}x "
                  f"(goal <= {goal:g}x) {verdict(ratio <= goal)}; in its own process "
                  f"(SLOPJUDGE_SERVER=0) {own:.1f} ms, {own_ratio:.2f}x", flush=True)
        if server_pid(servers) != server:
            sys.exit("the hook server did not serve every call of the rows above")

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
        os.kill(server, signal.SIGTERM)
    return 0


def server_pid(folder: str) -> int | None:
    """The pid of the hook server running in ``folder`` (it holds its lock), if any."""
    import fcntl

    for name in os.listdir(folder):
        if not name.endswith(".lock"):
            continue
        fd = os.open(os.path.join(folder, name), os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            first = (os.pread(fd, 64, 0).split() or [b""])[0]  # the server, then its spare
            return int(first) if first.isdigit() else None
        finally:
            os.close(fd)
    return None


def wait_for_server(folder: str) -> int:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        pid = server_pid(folder)
        if pid is not None and any(n.endswith(".sock") for n in os.listdir(folder)):
            return pid  # a call queues on the socket until its first spare takes it
        time.sleep(0.05)
    sys.exit("no hook server started")


if __name__ == "__main__":
    sys.exit(main())
