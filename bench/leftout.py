"""Benchmark: what a dry run pays for files the project does not author.

A repository with the default pack (``slopjudge init``, committed) and a real
change (one new source file). ``slopjudge run --dry-run`` from a regular wheel
install (bench/_common.py) is timed on it, then again after adding what a
project accumulates untracked and un-ignored: a virtualenv (``python -m venv``,
pip inside), a ``node_modules`` of 2,000 files, a ``dist/`` bundle with its
source map, a lockfile, and a file ``.gitattributes`` marks
``linguist-generated``. None of those is judged; the target is at most 2 s over
the real change's own time. Wall seconds, best of 3, beside ``python -c pass``.

Prints figures; asserts nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import bench_env, git, init_repo, regular_install, timed  # noqa: E402

SWALLOWED = "def load(path):\n    try:\n        return open(path).read()\n" \
            "    except Exception:\n        pass\n"
BUNDLE = "!function(){" + ";".join(f"var a{i}=function(x){{return x}}" for i in range(500)) \
    + "}();\n//# sourceMappingURL=app.js.map\n"


def _write(ws: str, rel: str, text: str) -> None:
    path = os.path.join(ws, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def clutter(ws: str) -> None:
    subprocess.run([sys.executable, "-m", "venv", os.path.join(ws, ".venv")], check=True,
                   capture_output=True)
    for i in range(2_000):
        _write(ws, f"node_modules/pkg{i // 50}/lib/f{i}.js",
               f"module.exports = function f{i}(a) {{ try {{ return a }} catch (e) {{}} }};\n")
    _write(ws, "dist/app.js", BUNDLE)
    _write(ws, "dist/app.js.map", json.dumps({"version": 3, "sources": ["../src/x.ts"],
                                              "mappings": "AAAA;" * 2000}))
    _write(ws, "package-lock.json", json.dumps({"lockfileVersion": 3,
                                                "packages": {f"p{i}": {} for i in range(500)}}))
    _write(ws, "src/gen/models_pb2.py", SWALLOWED)


def best(argv: list[str], ws: str, env: dict[str, str]) -> tuple[float, dict[str, object]]:
    times = []
    report: dict[str, object] = {}
    for _ in range(3):
        wall, _cpu, proc = timed(argv, cwd=ws, env=env)
        times.append(wall)
        report = json.loads(proc.stdout)
    return min(times), report


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="slopjudge-bench-") as tmp:
        bin_dir = regular_install(os.path.join(tmp, "install"))
        ws = init_repo(bin_dir, os.path.join(tmp, "ws"),
                       {".gitattributes": "src/gen/** linguist-generated\n"})
        env = bench_env()
        argv = [os.path.join(bin_dir, "slopjudge"), "run", "--dry-run", "--format", "json"]
        base, _cpu, _p = timed([os.path.join(bin_dir, "python"), "-c", "pass"], env=env)
        _write(ws, "src/loader.py", SWALLOWED)
        real, report = best(argv, ws, env)
        clutter(ws)
        untracked = subprocess.run(["git", "ls-files", "-o", "--exclude-standard"], cwd=ws,
                                   capture_output=True, text=True, check=True).stdout.count("\n")
        cluttered, report2 = best(argv, ws, env)
        left = report2["left_out"]  # type: ignore[index]
        print(f"baseline python -c pass          : {base:.3f} s")
        print(f"run --dry-run, the real change    : {real:.3f} s  (best of 3, "
              f"outcome {report['outcome']})")
        print(f"run --dry-run, + {untracked} untracked files: {cluttered:.3f} s  (best of 3, "
              f"outcome {report2['outcome']}; {left['files']} files left out)")  # type: ignore[index]
        for entry in left["entries"]:  # type: ignore[index]
            print(f"    left out: {entry['path']} ({entry['files']} files): {entry['why']}")
        extra = cluttered - real
        print(f"cost of what is left out          : {extra:+.3f} s  (target <= 2.000 s -> "
              f"{'within' if extra <= 2 else 'OVER'})")
        git(ws, "status", "--short")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
