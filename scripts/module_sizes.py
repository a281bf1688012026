#!/usr/bin/env python3
"""Lines per module of slopjudge/ against a base commit (issue 24's size table).

For each module the base had (followed where it moved), its lines then and now, and the
lines of it that commits adding other issues' capabilities wrote (``git blame -w -M``):
those come on top of the module's old job. A capability commit counts only when the lines
it still has there are no more than it grew the old modules by (all or nothing). Last, the
old job counted with the new modules that carry it. Needs the repository's history.

    python scripts/module_sizes.py [--base a8c8eed] [--per-module]
"""

from __future__ import annotations

import argparse
import collections
import subprocess

# Where a module of the base lives now (git does not see these moves as renames).
MOVES = {
    "slopjudge/checks/procs.py": "slopjudge/procs.py",
    "slopjudge/judging/templates.py": "slopjudge/loading/templates.py",
    "slopjudge/loading/graph.py": "slopjudge/checks/graph.py",
    "slopjudge/records/cache.py": "slopjudge/judging/cache.py",
    "slopjudge/records/sessions.py": "slopjudge/sessions.py",
    "slopjudge/records/cachesign.py": "slopjudge/cachesign.py",
    "slopjudge/judging/usage.py": "slopjudge/usage.py",
    "slopjudge/judging/runner/harness_codex.py": "slopjudge/harnesses/codex.py",
    "slopjudge/judging/runner/harness_claude.py": "slopjudge/harnesses/claude.py",
    "slopjudge/judging/runner/harness.py": "slopjudge/harnesses/base.py",
}

# Commits that added a capability another issue asked for (its number), as the stops'
# notes list them. Restructuring, speed and size commits are not here: their lines are
# the old modules' own.
CAPABILITIES = {
    "d89df933": (25, "one deadline per hook call, answered before the agent's timeout"),
    "0f61294b": (25, "Stop reads files on disk with git's hooks, fsmonitor and filters off"),
    "32b8d2fa": (25, "install claude --sealed"),
    "d1b674bd": (25, "run --rules-from REV"),
    "65d5b5f9": (25, "only committed .gitignore files decide what Stop ignores"),
    "dbb94763": (22, "what is judged: installed, vendored and generated files left out"),
    "95998eb1": (22, "budgets reserve before a call and settle after"),
    "f5f4dae3": (22, "the rule pack is not sent to judges"),
    "592d14ee": (23, "stable and preview rules"),
    "ba6f4c25": (26, "doctor: which agent hooks run, Codex trust"),
    "c9789494": (27, "match expressions, require and subjects"),
    "e242752d": (27, "import sloprail converts match, require, subjects, gate events"),
    "171fa3fe": (27, "scripts take each: file"),
    "0d3976a7": (28, "errors that point the right way"),
    "11d028b4": (28, "the load check in sloprail's form"),
    "03d70b23": (28, "report html"),
}


# New since the base, doing what the old modules did (not another issue's capability).
OLD_JOB_IN_NEW_MODULES = ("slopjudge/checks/inproc.py", "slopjudge/checks/batch.py",
                          "slopjudge/checks/batchchild.py", "slopjudge/harnesses/__init__.py",
                          "slopjudge/harnesses/registry.py")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def modules(rev: str) -> dict[str, int]:
    names = git("ls-tree", "-r", "--name-only", rev, "slopjudge").split()
    return {n: git("show", f"{rev}:{n}").count("\n") for n in names if n.endswith(".py")}


def blame(path: str) -> collections.Counter[str]:
    """Lines of ``path`` at HEAD by the commit that wrote them."""
    out = git("blame", "-w", "-M", "--porcelain", "HEAD", "--", path)
    by: collections.Counter[str] = collections.Counter()
    for line in out.splitlines():
        head = line.split(" ")
        if len(head) >= 3 and len(head[0]) == 40 and head[1].isdigit():
            by[head[0]] += 1
    return by


def net_growth(commit: str, paths: set[str]) -> int:
    """Lines ``commit`` added less those it removed, in ``paths`` as named then."""
    net = 0
    for row in git("show", "--numstat", "--format=", commit).splitlines():
        added, removed, path = row.split("\t", 2)
        if path in paths and added.isdigit():
            net += int(added) - int(removed)
    return net


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--base", default="a8c8eed")
    ap.add_argument("--per-module", action="store_true")
    args = ap.parse_args()

    before, now = modules(args.base), modules("HEAD")
    caps = {git("rev-parse", c).strip(): c for c in CAPABILITIES}
    blamed = {old: blame(MOVES.get(old, old)) for old in before
              if MOVES.get(old, old) in now}
    # Capped by what each commit grew the old modules by (their names then and now).
    names = set(before) | set(MOVES.values())
    counted: dict[str, int] = {}
    for full, short in caps.items():
        wrote = sum(b[full] for b in blamed.values())
        grew = net_growth(full, names)
        counted[full] = wrote if wrote <= grew else 0
        issue, what = CAPABILITIES[short]
        note = "" if counted[full] else f"  (not counted: grew the old modules by {grew})"
        print(f"{short} #{issue} {wrote:4} lines  {what}{note}")

    rows: list[tuple[str, int, int, int]] = []
    for old, lines in sorted(before.items()):
        cur = MOVES.get(old, old)
        cap = sum(n for c, n in blamed.get(old, {}).items() if counted.get(c))
        rows.append((old, lines, now.get(cur, 0), cap))
    if args.per_module:
        print(f"\n{'module (at the base)':48} {'before':>6} {'now':>6} {'capab.':>6} {'own':>6}")
        for name, was, size, cap in rows:
            print(f"{name.removeprefix('slopjudge/'):48} {was:6} {size:6} {cap:6} {size - cap:6}")
    b, n, c = (sum(r[1] for r in rows), sum(r[2] for r in rows), sum(r[3] for r in rows))
    print(f"\nold modules: {b} -> {n} lines ({(n - b) / b:+.1%})")
    print(f"of them written by other issues' capabilities: {c}")
    print(f"old modules' own lines: {b} -> {n - c} ({(n - c - b) / b:+.1%}; goal {b * 3 // 4})")
    print(f"all of slopjudge/: {sum(now.values())} lines in {len(now)} modules")
    # New modules that carry the old modules' job (this issue's own machinery: the pack's
    # in-process runner, the script batch, the harness registry) count with them.
    carried = sum(now.get(m, 0) for m in OLD_JOB_IN_NEW_MODULES)
    own = n - c + carried
    print(f"with the new modules that carry the old job ({', '.join(OLD_JOB_IN_NEW_MODULES)}: "
          f"{carried} lines): {b} -> {own} ({(own - b) / b:+.1%}; goal {b * 3 // 4})")


if __name__ == "__main__":
    main()
