#!/usr/bin/env python3
"""What the Stop hook costs at the end of a turn, with the real default pack,
against ``python -c pass`` measured in the same run (runs alternate).

slopjudge is installed from a wheel built from this checkout into a fresh venv
(not editable), ``slopjudge init`` runs in a new git repo, a session starts
(``hook start`` records its baseline), then 1, 5 and 20 new clean Python files
appear and ``hook stop`` judges them. The pack's judges are answered by a mock
(a shell script printing a pass verdict): the figure is slopjudge's own cost,
not a model's. Goal: at most 0.4 s at 20 files.

    python bench/stop.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

from _common import bench_env, init_repo, paired, regular_install, timed
from ruamel.yaml import YAML

CLEAN_PY = '''"""Helpers for order {i}."""


def total_{i}(prices: list[float], tax: float) -> float:
    """The sum of ``prices`` with ``tax`` added (0.2 for 20 %)."""
    return round(sum(prices) * (1 + tax), 2)
'''


def judge_mocks(ws: str, mock: str) -> str:
    """SLOPJUDGE_JUDGE_MOCKS naming ``mock`` for every judge check of the pack."""
    yaml = YAML(typ="safe")
    mocks = {}
    rules = os.path.join(ws, "rules")
    for rid in sorted(os.listdir(rules)):
        path = os.path.join(rules, rid, "rule.yaml")
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as fh:
            data = yaml.load(fh)
        for check in data.get("checks") or []:
            if "judge" in check:
                mocks[f"{rid}/{check.get('id', 'judge')}"] = mock
    return json.dumps(mocks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    env = bench_env()
    with tempfile.TemporaryDirectory(prefix="slopjudge-bench-stop-") as root:
        bin_dir = regular_install(root)
        # As bench/hook.py: a bare start of the interpreter the hook runs on.
        base_py = [os.path.join(bin_dir, "python"), "-c", "pass"]
        sj = os.path.join(bin_dir, "slopjudge")
        template = init_repo(bin_dir, os.path.join(root, "template"))
        mock = os.path.join(root, "mock-judge.sh")
        with open(mock, "w", encoding="utf-8") as fh:
            fh.write("#!/bin/sh\ncat >/dev/null\n"
                     "echo '{\"pass\": true, \"reasoning\": \"fine\", \"confidence\": 0.95}'\n")
        os.chmod(mock, 0o755)
        env["SLOPJUDGE_JUDGE_MOCKS"] = judge_mocks(template, mock)
        for count in (1, 5, 20):
            ws = os.path.join(root, f"repo{count}")
            shutil.copytree(template, ws, symlinks=True)
            event = {"session_id": f"bench{count}", "cwd": ws, "transcript_path": "",
                     "hook_event_name": "SessionStart", "source": "startup"}
            _w, _c, proc = timed([sj, "hook", "start"], stdin=json.dumps(event), cwd=ws, env=env)
            if proc.returncode != 0:
                sys.exit(f"hook start failed: {proc.stderr}")
            for i in range(count):
                with open(os.path.join(ws, "src", f"order{i:02d}.py"), "w",
                          encoding="utf-8") as fh:
                    fh.write(CLEAN_PY.format(i=i))
            stop = json.dumps({"session_id": f"bench{count}", "cwd": ws, "transcript_path": "",
                               "hook_event_name": "Stop", "stop_hook_active": False})
            hook = [sj, "hook", "stop"]
            paired(1, base_py, hook, stdin=stop, cwd=ws, env=env, expect_out="")  # warm-up
            base, took, ratio = paired(args.runs, base_py, hook, stdin=stop, cwd=ws, env=env,
                                       expect_out="")
            goal = " (goal <= 0.4 s) " + ("OK" if took <= 400 else "OVER") if count == 20 else ""
            print(f"Stop, {count} file{'s' if count > 1 else ''} changed: {took / 1000:.3f} s, "
                  f"{ratio:.1f}x python -c pass at {base:.1f} ms{goal}", flush=True)
        print(f"machine load average while measuring: {os.getloadavg()[0]:.2f} "
              f"on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
