#!/usr/bin/env python3
"""Benchmark: 16 judge checks against a fake runner that sleeps 1 s, 8 at a time.

Prints the wall time (ideal 2.0 s: two waves of 8) and slopjudge's own time
per judge call: time spent in ``run_judge`` minus the runner's wall as the
runner measured it itself. Baselines measured in the same run: spawning
``python -c pass`` and the fake runner with no sleep. Then the same 16 judges through
``slopjudge run`` of a wheel install (start-up, rule loading and the changeset included;
goal 2.5 s): best wall of 3, the least CPU seconds, and that install's ``python -c pass``.

``--prompts`` prints instead what each judge call of the default pack carries:
prompt bytes and estimated tokens (UTF-8 bytes / 3.5) per call, as a dry run
renders them, on the labeled corpora (tests/fixtures/slop, slop-blind) and on
a 1,000-file change; the baseline, measured in the same run, is the same
change with no prompt budget (one prompt per check, however large).

    python bench/judge.py [--checks 16] [--jobs 8] [--sleep 1.0]
    python bench/judge.py --prompts [--files 1000]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from slopjudge import procs  # noqa: E402
from slopjudge.checks.judge import run_judge  # noqa: E402
from slopjudge.checks.options import RunOptions  # noqa: E402
from slopjudge.hookspec import CheckContext  # noqa: E402
from slopjudge.model import Changeset, Check, Event, FileChange, Rule, asdict  # noqa: E402
from slopjudge.payload import file_payload  # noqa: E402

TEMPLATE = """\
Judge this change for slop.
{% for f in changeset.files %}
<file path="{{ f.path }}">
{{ f.newContent }}
</file>
{% endfor %}
<diff>
{{ change }}
</diff>
{{ rubric }}
"""

# Measures its own wall with bash's clock (no extra processes), then answers.
RUNNER = r"""#!/bin/bash
start=$EPOCHREALTIME
cat > /dev/null
sleep "$BENCH_SLEEP"
echo '{"pass": true, "reasoning": "fine"}'
echo "$start $EPOCHREALTIME" > "$BENCH_LOG/${SLOPJUDGE_LAUNCHED_BY//\//__}.wall"
"""


def _diff(n: int) -> tuple[FileChange, str]:
    old = "".join(f"line {i}\n" for i in range(200))
    new = old.replace("line 7\n", f"line seven {n}\n")
    diff = (
        f"diff --git a/src/mod{n}.py b/src/mod{n}.py\n--- a/src/mod{n}.py\n+++ b/src/mod{n}.py\n"
        f"@@ -6,3 +6,3 @@\n line 6\n-line 7\n+line seven {n}\n line 8\n"
    )
    return FileChange(
        path=f"src/mod{n}.py", status="M", old_content=old, new_content=new, diff=diff
    ), diff


def _contexts(root: Path, count: int, runner: str, workspace: str) -> list[CheckContext]:
    rule_dir = root / "rules" / "bench"
    rule_dir.mkdir(parents=True)
    tpl = rule_dir / "judge.md.j2"
    tpl.write_text(TEMPLATE)
    rule = Rule(
        id="bench", path=str(rule_dir / "rule.yaml"), dir=str(rule_dir), description="bench"
    )
    options = RunOptions(runner=runner, retry_backoff_s=0.0, rubric="Be strict.\n")
    out = []
    for n in range(count):
        check = Check(id=f"c{n}", rule="bench", kind="judge", judge=str(tpl), timeout=60.0)
        rule.checks.append(check)
        change, diff = _diff(n)
        event = Event(kind="ci")
        payload = {
            "event": asdict(event),
            "rule": {"id": "bench", "dir": rule.dir, "description": "bench"},
            "check": {"id": check.id},
            "workspace": workspace,
            "changeset": {
                "base": "HEAD",
                "head": None,
                "commits": [],
                "files": [file_payload(change)],
                "others": [],
            },
            "change": diff,
            "additionalContext": {},
            "rubric": "",
        }
        out.append(
            CheckContext(
                rule=rule,
                check=check,
                event=event,
                workspace=workspace,
                changeset=Changeset(files=[change]),
                payload=payload,
                options=options,
            )
        )
    return out


def _spawn_ms(argv: list[str], times: int = 10) -> float:
    samples = []
    for _ in range(times):
        t0 = time.perf_counter()
        procs.run(argv, timeout=30)
        samples.append((time.perf_counter() - t0) * 1000)
    return statistics.median(samples)


def _cli_walls(root: Path, count: int, runner: Path,
               runs: int = 3) -> tuple[list[float], float, float]:
    """Walls of `slopjudge run` (default settings: judge_slots 8, script jobs the CPU
    count) on a real repository with ``count`` judge rules, from a regular wheel install
    (bytecode compiled, as a user has it: a checkout run with PYTHONDONTWRITEBYTECODE
    compiles every module on every start); the least CPU seconds of a run (slopjudge and
    the runners it started: on a loaded machine the steadier figure); and the wall of
    ``python -c pass`` of that install."""
    import subprocess

    from bench._common import regular_install, timed

    bin_dir = regular_install(str(root / "install"))
    repo = root / "cli"
    for n in range(count):
        rule = repo / "rules" / f"judge{n}"
        rule.mkdir(parents=True)
        (rule / "rule.yaml").write_text(
            f"description: bench judge {n}\nchecks:\n  - id: j\n    judge: judge.md.j2\n")
        (rule / "judge.md.j2").write_text(TEMPLATE)
    (repo / "src").mkdir()
    (repo / "src" / "mod.py").write_text("value = 1\n")
    git = ["git", "-C", str(repo), "-c", "user.name=b", "-c", "user.email=b@example.com"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    (repo / "src" / "mod.py").write_text("value = 2\n")
    argv = [os.path.join(bin_dir, "slopjudge"), "run", "--no-cache",
            "--runner", str(runner), "--format", "json"]
    env = dict(os.environ, SLOPJUDGE_EVENTS_FILE=str(root / "cli-events.jsonl"))
    subprocess.run([*argv[:2], "--dry-run"], cwd=repo, env=env, capture_output=True)  # warm cache
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu, proc = timed(argv, cwd=str(repo), env=env)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        walls.append(wall)
        cpus.append(cpu)
    base, _, _ = timed([os.path.join(bin_dir, "python"), "-c", "pass"])
    return walls, min(cpus), base


# -- prompt sizes -------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]


def _dry_prompts(diff: Path, work: Path, settings: str) -> dict[str, list[int]]:
    """Bytes of each prompt a dry run of the default pack renders, by check."""
    import subprocess

    from slopjudge.loading.config import find_workspace

    repo = work / "repo"
    if not repo.is_dir():
        repo.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    assert find_workspace(str(repo)) == str(repo)
    (repo / "slopjudge.yaml").write_text(settings)
    out = work / "prompts"
    if out.is_dir():
        for old in out.iterdir():
            old.unlink()
    # The event log keeps its own copies of the prompts: keep them out of `out`.
    env = dict(os.environ, SLOPJUDGE_EVENTS_FILE=str(work / "log" / "events.jsonl"))
    env.pop("SLOPJUDGE_JUDGE_MOCKS", None)
    only = [a for r in _judge_rules() for a in ("--rule", r)]
    subprocess.run(
        [sys.executable, "-m", "slopjudge", "run", "--diff", str(diff), "--dry-run",
         "--rules", str(ROOT / "rules"), "--prompts-dir", str(out), "--format", "json", *only],
        cwd=repo, env=env, capture_output=True, text=True, timeout=900,
    )
    sizes: dict[str, list[int]] = {}
    for f in sorted(out.glob("*.md")) if out.is_dir() else []:
        check = "/".join(f.stem.split("__")[:2])
        sizes.setdefault(check, []).append(len(f.read_bytes()))
    return sizes


@functools.lru_cache(maxsize=1)
def _judge_rules() -> tuple[str, ...]:
    """The default pack's rules with a judge check (script-only rules render no prompt)."""
    from slopjudge.loading.config import load_settings
    from slopjudge.loading.loader import load_rules

    settings = load_settings(str(ROOT))
    loaded = load_rules(settings.rules_dir, workspace=str(ROOT),
                        template_dirs=settings.template_dirs)
    return tuple(r.id for r in loaded.rules if any(c.kind == "judge" for c in r.checks))


def _tokens(n: int) -> int:
    from slopjudge.checks.split import BYTES_PER_TOKEN

    return -(-int(n * 10) // int(BYTES_PER_TOKEN * 10))  # ceil(bytes / 3.5), no floats


def _wide_change(path: Path, files: int) -> None:
    """A change an agent might make across a repository: every file gets narration
    comments and a hard-coded answer its test also names, and loses an assertion."""
    parts = []
    for n in range(files):
        src = f"pkg{n // 50}/mod{n}.py"
        body = [
            f"def answer_{n}(x):",
            "    # Added a check for the input",
            "    if x is None:",
            "        # Return zero here",
            "        return 0",
            "    # Step 2: compute the result",
            f"    if x == {1000 + n}:",
            f"        return {7000 + n}",
            "    return x * 2",
        ]
        parts.append(f"diff --git a/{src} b/{src}\nnew file mode 100644\n--- /dev/null\n"
                     f"+++ b/{src}\n@@ -0,0 +1,{len(body)} @@\n"
                     + "".join(f"+{ln}\n" for ln in body))
        if n % 10 == 0:
            test = f"tests/test_mod{n}.py"
            parts.append(
                f"diff --git a/{test} b/{test}\n--- a/{test}\n+++ b/{test}\n"
                f"@@ -1,4 +1,3 @@\n def test_answer_{n}():\n"
                f"-    assert answer_{n}({1000 + n}) == {7000 + n}\n"
                f"-    assert answer_{n}(3) == 6\n+    assert answer_{n}({1000 + n})\n"
                f"     assert answer_{n}(None) == 0\n")
    path.write_text("".join(parts))


def _size_line(label: str, sizes: list[int]) -> str:
    if not sizes:
        return f"  {label}: no judge call (prepare skipped, or nothing applies)"
    med = int(statistics.median(sizes))
    return (f"  {label}: {len(sizes)} calls; bytes per call median {med:,}, max {max(sizes):,}; "
            f"est. tokens median {_tokens(med):,}, max {_tokens(max(sizes)):,}")


def prompts_main(files: int) -> int:
    from slopjudge.checks.split import DEFAULT_MAX_PROMPT_TOKENS

    with tempfile.TemporaryDirectory(prefix="slopjudge-bench-prompts-") as tmp:
        root = Path(tmp)
        print(f"default pack, dry run; tokens estimated as UTF-8 bytes / 3.5; "
              f"default max_prompt_tokens {DEFAULT_MAX_PROMPT_TOKENS:,}")
        for corpus in ("slop", "slop-blind"):
            diffs = sorted((ROOT / "tests" / "fixtures" / corpus).glob("*.diff"))
            per_check: dict[str, list[int]] = {}

            def one(d: Path, corpus: str = corpus) -> dict[str, list[int]]:
                return _dry_prompts(d, root / corpus / d.stem, "")

            with ThreadPoolExecutor(max_workers=2) as pool:
                for sizes in pool.map(one, diffs):
                    for check, got in sizes.items():
                        per_check.setdefault(check, []).extend(got)
            print(f"corpus tests/fixtures/{corpus} ({len(diffs)} diffs):")
            for check in sorted(per_check):
                print(_size_line(check, per_check[check]))
            if not per_check:
                print("  no judge call: every prepare skipped")
        change = root / "wide.diff"
        _wide_change(change, files)
        print(f"a {files:,}-file change ({len(change.read_bytes()):,} bytes of diff):")
        bounded = _dry_prompts(change, root / "wide", "")
        baseline = _dry_prompts(change, root / "wide-unbounded", "max_prompt_tokens: 1000000000\n")
        for check in sorted(set(bounded) | set(baseline)):
            print(_size_line(f"{check}, default budget", bounded.get(check, [])))
            print(_size_line(f"{check}, baseline without a budget", baseline.get(check, [])))
        over = [b for sizes in bounded.values() for b in sizes
                if _tokens(b) > DEFAULT_MAX_PROMPT_TOKENS]
        print(f"prompts over the default budget: {len(over)} (target 0)")
        return 1 if over else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checks", type=int, default=16)
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--sleep", type=float, default=1.0)
    ap.add_argument("--prompts", action="store_true",
                    help="prompt bytes and estimated tokens per call of the default pack")
    ap.add_argument("--files", type=int, default=1000, help="with --prompts: the wide change")
    args = ap.parse_args()
    if args.prompts:
        return prompts_main(args.files)

    with tempfile.TemporaryDirectory(prefix="slopjudge-bench-") as tmp:
        root = Path(tmp)
        log = root / "walls"
        log.mkdir()
        runner = root / "fake-runner"
        runner.write_text(RUNNER)
        runner.chmod(0o755)
        workspace = root / "ws"
        workspace.mkdir()
        os.environ["BENCH_LOG"] = str(log)
        # Judge slots of their own: calls of other slopjudge processes on this machine
        # (they share the user's slots) would otherwise make these wait.
        (root / "run").mkdir(mode=0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(root / "run")

        # Baselines, measured now on this machine.
        os.environ["BENCH_SLEEP"] = "0"
        py_ms = _spawn_ms([sys.executable, "-c", "pass"])
        fake_ms = _spawn_ms([str(runner)])

        # Cold: the first judge call of a process pays for imports and compiling.
        warm = _contexts(root / "warm", 1, str(runner), str(workspace))[0]
        t0 = time.perf_counter()
        first = run_judge(warm)
        cold_ms = (time.perf_counter() - t0) * 1000
        assert first.outcome == "pass", first.reason

        os.environ["BENCH_SLEEP"] = str(args.sleep)
        ctxs = _contexts(root / "main", args.checks, str(runner), str(workspace))
        spent: dict[str, float] = {}

        def timed(ctx: CheckContext) -> str:
            t = time.perf_counter()
            res = run_judge(ctx)
            spent[ctx.check.full_id] = time.perf_counter() - t
            return res.outcome

        t0 = time.perf_counter()
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            outcomes = list(pool.map(timed, ctxs))
        wall = time.perf_counter() - t0
        assert outcomes == ["pass"] * len(ctxs), outcomes

        cli_walls, cli_cpu, cli_pass = _cli_walls(root, args.checks, runner)
        cli_wall = min(cli_walls)

        overheads = []
        for ctx in ctxs:
            start, end = (log / f"{ctx.rule.id}__{ctx.check.id}.wall").read_text().split()
            overheads.append((spent[ctx.check.full_id] - (float(end) - float(start))) * 1000)

    waves = -(-args.checks // args.jobs)
    print(f"judge checks: {args.checks}, jobs {args.jobs}, fake runner sleeps {args.sleep:g} s")
    print(
        f"wall: {wall:.3f} s "
        f"(ideal {waves * args.sleep:.1f} s, budget {waves * args.sleep * 1.2:.1f} s)"
    )
    cli_goal = 2.5 if args.checks == 16 and args.sleep == 1.0 else None
    print(
        f"through the CLI, `slopjudge run` with default settings (judge_slots 8) on "
        f"{os.cpu_count()} CPUs, from a wheel install: {cli_wall:.3f} s best of "
        f"{len(cli_walls)} ({', '.join(f'{w:.3f}' for w in cli_walls)}; start-up, loading and "
        f"the changeset included; CPU {cli_cpu:.3f} s; its python -c pass {cli_pass:.3f} s; load "
        f"average "
        f"{os.getloadavg()[0]:.1f})" + ("" if cli_goal is None else f" (goal <= {cli_goal:g} s: "
                                        f"{'met' if cli_wall <= cli_goal else 'NOT met'})")
    )
    print(
        f"slopjudge time per judge call (run_judge minus the runner's own wall): "
        f"median {statistics.median(overheads):.1f} ms, max {max(overheads):.1f} ms (budget 30 ms)"
    )
    print(
        f"baseline spawn, same run: python -c pass {py_ms:.1f} ms; "
        f"fake runner without sleep {fake_ms:.1f} ms"
    )
    print(f"first judge call of the process (imports, compile): {cold_ms:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
