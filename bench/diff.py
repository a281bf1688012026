"""Benchmark: a 100,000-line diff over 500 files through `slopjudge payload`.

Generates the diff into a temp dir (a mix of modified files with several
hunks, added files, CRLF and non-UTF-8 lines), then times, each in a fresh
child process measured by a small wrapper (wall seconds, peak RSS of the
child from getrusage(RUSAGE_CHILDREN)):

- baseline: ``python -c pass``;
- ``python -m slopjudge payload --diff FILE`` when slopjudge/cli.py exists,
  else ``from_diff`` + payload dicts + ``json.dumps`` in a child;
- in one child, the lenient ``from_diff`` against ``read_diff`` (the
  well-formedness check `--diff` input gets, then one parse).

Targets: at most 2 s and 300 MB peak.

Then a 10,000-file change where half the files open a judge gate (a judge rule
whose ``paths`` admit the ``.py`` half, its prompt over ``max_prompt_tokens`` so
it is split into parts): ``slopjudge run --diff FILE --dry-run`` from a regular
wheel install (bench/_common.py), wall seconds, CPU seconds and peak RSS, best of 3,
beside ``python -c pass`` of that install. Target: at most 3 s and 300 MB (on a loaded
machine the CPU seconds say more than the wall).

Prints figures; asserts nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

FILES = 500
LINES = 100_000
ROOT = Path(__file__).resolve().parent.parent

WRAPPER = r"""
import resource, subprocess, sys, time
t = time.perf_counter()
rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
wall = time.perf_counter() - t
use = resource.getrusage(resource.RUSAGE_CHILDREN)
peak = use.ru_maxrss
if sys.platform == "darwin":
    peak //= 1024
print(f"{wall} {peak} {rc} {use.ru_utime + use.ru_stime}")
"""

INPROC = r"""
import json, sys
from slopjudge.changes import changeset as cs
from slopjudge.payload import file_payload
c = cs.from_diff(open(sys.argv[1], "rb").read())
files = [file_payload(f) for f in c.files]
out = json.dumps({"changeset": {"base": c.base, "head": c.head, "commits": [], "files": files,
                  "others": []}, "change": cs.unified_diff(c.files)}, ensure_ascii=False)
sys.stdout.write(out)
"""

CHECKED = r"""
import sys, time
from slopjudge.changes import changeset as cs
from slopjudge.payload import file_payload
data = open(sys.argv[1], "rb").read()
def best(fn):
    times = []
    for _ in range(3):
        t = time.perf_counter(); fn(data); times.append(time.perf_counter() - t)
    return min(times)
print(best(cs.from_diff), best(lambda d: cs.read_diff(d, "big.diff")))
"""


def make_diff(path: Path) -> int:
    """Write the diff; return its line count."""
    per_file = LINES // FILES
    out: list[str] = []
    for i in range(FILES):
        name = f"src/pkg{i % 20}/module_{i}.py"
        start = len(out)
        if i % 5 == 0:  # an added file: one hunk holding the whole file
            body = per_file - 6
            out += [f"diff --git a/{name} b/{name}", "new file mode 100644",
                    "index 0000000..1234567", "--- /dev/null", f"+++ b/{name}",
                    f"@@ -0,0 +1,{body} @@"]
            out += [f"+value_{i}_{j} = {j}  # added line" for j in range(body)]
        else:  # a modified file: hunks of 3 context, 2 removed, 3 added, 3 context
            out += [f"diff --git a/{name} b/{name}", "index 89abcde..1234567 100644",
                    f"--- a/{name}", f"+++ b/{name}"]
            j = 0
            while len(out) - start + 12 <= per_file:
                at = 1 + j * 40
                out.append(f"@@ -{at},8 +{at},9 @@ def f_{j}():")
                out += [f"     ctx = {j}", "     ctx2 = 1\r", "     ctx3 = 2"]
                out += [f"-    old = {j}", "-    old2 = 'caf\udce9'"]
                out += [f"+    new = {j}", "+    new2 = 2", "+    new3 = 3"]
                out += ["     tail = 1", "     tail2 = 2", "     tail3 = 3"]
                j += 1
        while len(out) - start < per_file:  # pad with a short extra hunk
            need = per_file - (len(out) - start)
            if need < 2:  # a one-line hunk needs two lines; sizes above never leave one
                break
            out.append(f"@@ -9000,{need - 1} +9000,{need - 1} @@")
            out += [f"     pad = {k}" for k in range(need - 1)]
    data = ("\n".join(out) + "\n").encode("utf-8", "surrogateescape")
    path.write_bytes(data)
    return len(out)


def measure(argv: list[str], cwd: str) -> tuple[float, float, int, float]:
    """(wall s, peak MB, exit status, CPU s) of one run in a fresh child."""
    res = subprocess.run([sys.executable, "-c", WRAPPER, *argv], cwd=cwd,
                         capture_output=True, text=True, check=True)
    wall, peak_kb, rc, cpu = res.stdout.split()
    return float(wall), int(peak_kb) / 1024, int(rc), float(cpu)


GATE_FILES = 10_000
GATE_RULE = """description: a judge over the Python half of the change
paths: ["*.py"]
checks:
  - id: judge
    judge: gate.md.j2
"""
GATE_TEMPLATE = '{% include "_changes.md.j2" %}\nIs any of this slop?\n'


def make_gate_diff(path: Path) -> None:
    """10,000 files, every other one Python: added files of 12 lines and modified files
    of three hunks each."""
    out: list[str] = []
    for i in range(GATE_FILES):
        name = f"src/pkg{i % 50}/mod_{i}.{'py' if i % 2 == 0 else 'md'}"
        if i % 3 == 0:
            out += [f"diff --git a/{name} b/{name}", "new file mode 100644", "--- /dev/null",
                    f"+++ b/{name}", "@@ -0,0 +1,12 @@"]
            out += [f"+line_{j} = {i} * {j}  # value {j} of file {i}" for j in range(12)]
            continue
        out += [f"diff --git a/{name} b/{name}", "index 89abcde..1234567 100644",
                f"--- a/{name}", f"+++ b/{name}"]
        for h in range(3):
            at = 1 + h * 30
            out += [f"@@ -{at},4 +{at},4 @@", f" ctx_{h} = {i}", f"-old_{h} = {i}",
                    f"+new_{h} = {i} + 1", " tail = 1", " tail2 = 2"]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")


def gate_case(tmp: str) -> None:
    sys.path.insert(0, str(ROOT))
    from bench._common import bench_env, git, regular_install

    bin_dir = regular_install(os.path.join(tmp, "install"))
    ws = os.path.join(tmp, "gate")
    os.makedirs(os.path.join(ws, "rules", "gate"))
    git(ws, "init", "-q")
    Path(ws, "rules", "gate", "rule.yaml").write_text(GATE_RULE, encoding="utf-8")
    Path(ws, "rules", "gate", "gate.md.j2").write_text(GATE_TEMPLATE, encoding="utf-8")
    diff = Path(tmp) / "gate.diff"
    make_gate_diff(diff)
    env = bench_env()
    py = os.path.join(bin_dir, "python")
    argv = [os.path.join(bin_dir, "slopjudge"), "run", "--diff", str(diff), "--dry-run",
            "--format", "json"]
    base = measure([py, "-c", "pass"], ws)
    runs = [measure(argv, ws) for _ in range(3)]
    best = min(runs, key=lambda r: r[0])
    peak = max(r[1] for r in runs)
    report = json.loads(subprocess.run(argv, cwd=ws, env=env, capture_output=True,
                                       text=True).stdout)
    (check,) = report["checks"]
    print(f"\ngate: {GATE_FILES} files, {GATE_FILES // 2} open a judge gate "
          f"({diff.stat().st_size / 1e6:.1f} MB diff); {check['usage']['units']} prompts, "
          f"outcome {check['outcome']}")
    print(f"baseline python -c pass : {base[0]:.3f} s  {base[1]:.0f} MB peak  "
          f"(CPU {base[3]:.3f} s)")
    print(f"run --diff --dry-run    : {best[0]:.3f} s  {peak:.0f} MB peak  (best of 3, exit "
          f"{best[2]}; CPU {min(r[3] for r in runs):.3f} s; load {os.getloadavg()[0]:.1f})")
    print(f"target                  : <= 3.000 s  <= 300 MB peak  -> "
          f"{'within' if best[0] <= 3 and peak <= 300 else 'OVER'}")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="slopjudge-bench-") as tmp:
        diff = Path(tmp) / "big.diff"
        lines = make_diff(diff)
        size_mb = diff.stat().st_size / 1e6
        print(f"diff: {lines} lines, {FILES} files, {size_mb:.1f} MB")
        base = measure([sys.executable, "-c", "pass"], tmp)
        if (ROOT / "slopjudge" / "cli.py").exists():
            label = "slopjudge payload --diff"
            argv = [sys.executable, "-m", "slopjudge", "payload", "--diff", str(diff)]
        else:
            label = "from_diff + payload + json.dumps"
            argv = [sys.executable, "-c", INPROC, str(diff)]
        runs = [measure(argv, tmp) for _ in range(3)]
        best = min(runs, key=lambda r: r[0])
        peak = max(r[1] for r in runs)
        print(f"baseline python -c pass : {base[0]:.3f} s  {base[1]:.0f} MB peak")
        print(f"{label:<24}: {best[0]:.3f} s  {peak:.0f} MB peak  (best of 3, exit {best[2]})")
        print(f"target                  : <= 2.000 s  <= 300 MB peak  -> "
              f"{'within' if best[0] <= 2 and peak <= 300 else 'OVER'}")
        # Cross-check the generated diff parsed as intended.
        probe = subprocess.run([sys.executable, "-c", INPROC, str(diff)], cwd=tmp,
                               capture_output=True, check=True).stdout
        obj = json.loads(probe)
        nfiles = len(obj["changeset"]["files"])
        added = sum(1 for f in obj["changeset"]["files"] if f["newContent"] is not None)
        print(f"parsed: {nfiles} files, {added} with newContent rebuilt")
        # What checking user input costs: read_diff (check + parse once) against the
        # lenient from_diff, in one child, best of 3 each.
        probe = subprocess.run([sys.executable, "-c", CHECKED, str(diff)], cwd=tmp,
                               capture_output=True, text=True, check=True).stdout.split()
        print(f"from_diff (lenient)     : {float(probe[0]):.3f} s")
        print(f"read_diff (checked)     : {float(probe[1]):.3f} s")
        gate_case(tmp)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
