#!/usr/bin/env python3
"""Measure the default rule pack's false refusals on real, human-written releases.

For each pair of released versions of a real package (PyPI sdists, else wheels;
npm tarballs) this unpacks both versions, commits the old one and then the new
one in a scratch git repository, and runs

    python -m slopjudge run --base HEAD~1 --dry-run --format json --rules rules

there, so the pack judges a real change it has never seen. It prints, per pair,
the files changed, the lines added and the refusals by rule; then, per rule, the
share of pairs and of changed files refused, and (from bench/realworld_labels.json,
where every reported finding is classified by hand as a true finding or a false
refusal under RUBRIC.md) the share of changed files falsely refused. Findings
with no label are listed so they can be read and labeled.

The baseline measured in the same run is a naive keyword grep over the added
lines of the same changes (bench/slop.py's NAIVE pattern): what a reviewer's
grep for the usual suspects would flag.

Downloads are cached under ~/.cache/slopjudge-bench/ (PyPI and npm only, a few
hundred KB each). Target: false refusals <= 5% of changed files per rule and
overall. Exit 1 when a target is missed, a download fails or a finding is
unlabeled.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from slop import NAIVE  # noqa: E402  (a sibling script, importable once bench/ is on the path)

RULES = ROOT / "rules"
LABELS = ROOT / "bench" / "realworld_labels.json"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "slopjudge-bench"
TARGET = 0.05

# (registry, package, old version, new version): minor releases of widely used
# packages, a few hundred to a few thousand added lines each.
PAIRS: list[tuple[str, str, str, str]] = [
    ("pypi", "requests", "2.31.0", "2.32.3"),
    ("pypi", "click", "8.1.7", "8.1.8"),
    ("pypi", "attrs", "23.2.0", "24.1.0"),
    ("pypi", "rich", "13.7.1", "13.8.0"),
    ("pypi", "httpx", "0.27.0", "0.27.2"),
    ("pypi", "flask", "3.0.3", "3.1.0"),
    ("pypi", "werkzeug", "3.0.6", "3.1.0"),
    ("pypi", "packaging", "24.0", "24.1"),
    ("pypi", "pluggy", "1.4.0", "1.5.0"),
    ("pypi", "jinja2", "3.1.4", "3.1.5"),
    ("pypi", "tomli", "2.0.1", "2.1.0"),
    ("npm", "commander", "11.1.0", "12.0.0"),
    ("npm", "chalk", "5.3.0", "5.4.1"),
    ("npm", "yargs", "17.6.2", "17.7.0"),
    ("npm", "zod", "3.22.4", "3.23.0"),
    ("npm", "semver", "7.5.4", "7.6.0"),
    ("npm", "fastify", "4.25.0", "4.26.0"),
    ("npm", "ws", "8.16.0", "8.17.0"),
]


@dataclass
class PairResult:
    pair: str
    files: list[str] = field(default_factory=list)
    code_files: int = 0
    added: int = 0
    naive_files: set[str] = field(default_factory=set)
    findings: list[dict[str, Any]] = field(default_factory=list)  # rule, path, line, message
    refused_rules: list[str] = field(default_factory=list)
    judges_asked: list[str] = field(default_factory=list)  # prepare did not skip
    error: str = ""


def pair_name(p: tuple[str, str, str, str]) -> str:
    return f"{p[1]} {p[2]}..{p[3]}"


# ----------------------------------------------------------------------------- downloads


def fetch(registry: str, name: str, version: str) -> Path:
    """The cached release archive, downloaded through pip or npm when missing."""
    folder = CACHE / registry / f"{name}-{version}"
    have = [p for p in folder.glob("*") if p.is_file()] if folder.is_dir() else []
    if have:
        return have[0]
    folder.mkdir(parents=True, exist_ok=True)
    if registry == "pypi":
        base = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder)]
        proc = subprocess.run([*base, "--no-binary", ":all:", f"{name}=={version}"],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:  # no sdist: take the pure-Python wheel
            proc = subprocess.run([*base, "--only-binary", ":all:", f"{name}=={version}"],
                                  capture_output=True, text=True, timeout=300)
    else:
        proc = subprocess.run(["npm", "pack", f"{name}@{version}", "--silent"], cwd=folder,
                              capture_output=True, text=True, timeout=300)
    have = [p for p in folder.glob("*") if p.is_file()]
    if proc.returncode != 0 or not have:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"could not download {name} {version}: {proc.stderr.strip()[-300:]}")
    return have[0]


def unpack(archive: Path, dest: Path) -> None:
    """Extract a release into dest, dropping the archive's single top folder."""
    tmp = Path(tempfile.mkdtemp(dir=dest.parent))
    try:
        if archive.suffix in (".whl", ".zip"):
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(tmp)
        else:
            with tarfile.open(archive) as tf:
                tf.extractall(tmp, filter="data")
        entries = list(tmp.iterdir())
        top = entries[0] if len(entries) == 1 and entries[0].is_dir() else tmp
        shutil.copytree(top, dest, symlinks=True, dirs_exist_ok=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ----------------------------------------------------------------------------- the change


GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, **GIT_ENV}
    proc = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()[:300]}")
    return proc.stdout


def build_repo(p: tuple[str, str, str, str], work: Path) -> Path:
    """A repository whose last commit turns the old release into the new one."""
    registry, name, old, new = p
    repo = work / f"{name}-{old}-{new}"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    for version in (old, new):
        for entry in repo.iterdir():
            if entry.name != ".git":
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        unpack(fetch(registry, name, version), repo)
        # Empty the index first: archives carry fixed mtimes and freed inodes get reused,
        # so git's stat check could take a changed file of the same size for unchanged.
        git(repo, "read-tree", "--empty")
        # -f: a release may ship its own .gitignore; judge every file it ships
        git(repo, "add", "-A", "-f", ".")
        git(repo, "commit", "-q", "--allow-empty", "--no-verify", "-m", f"{name} {version}")
    return repo


def measure(p: tuple[str, str, str, str], work: Path, rules: Path) -> PairResult:
    res = PairResult(pair_name(p))
    try:
        repo = build_repo(p, work)
    except (RuntimeError, OSError, tarfile.TarError, zipfile.BadZipFile) as exc:
        res.error = str(exc)
        return res
    for row in git(repo, "diff", "--numstat", "HEAD~1", "HEAD").splitlines():
        added, _removed, path = row.split("\t", 2)
        res.files.append(path)
        res.added += int(added) if added.isdigit() else 0
        if os.path.splitext(path)[1] in (".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts",
                                         ".tsx", ".jsx"):
            res.code_files += 1
    path = ""
    for ln in git(repo, "diff", "-U0", "HEAD~1", "HEAD").splitlines():
        if ln.startswith("+++ "):
            path = ln[6:] if ln.startswith("+++ b/") else ""
        elif ln.startswith("+") and path and NAIVE.search(ln[1:]):
            res.naive_files.add(path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLOPJUDGE_", "SLOPRAIL_"))}
    env["SLOPJUDGE_EVENTS_FILE"] = str(work / f"{repo.name}.events.jsonl")
    proc = subprocess.run(
        [sys.executable, "-m", "slopjudge", "run", "--base", "HEAD~1", "--dry-run",
         "--format", "json", "--rules", str(rules), "--no-cache"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=900,
    )
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        res.error = f"no JSON report (exit {proc.returncode}): {proc.stderr.strip()[:300]}"
        return res
    errors = [f"{c['id']}: {c['reason']}" for c in report["checks"] if c["outcome"] == "error"]
    errors += report.get("load_errors", [])
    if errors:
        res.error = "; ".join(errors)[:500]
    for c in report["checks"]:
        if c["outcome"] == "refuse":
            res.refused_rules.append(c["rule"])
            for f in c["findings"] or [{"path": None, "line": None, "message": c["reason"]}]:
                res.findings.append({"rule": c["rule"], **f})
        elif c["kind"] == "judge" and c["outcome"] == "not_judged":
            res.judges_asked.append(c["rule"])
    return res


# ----------------------------------------------------------------------------- report


def load_labels(path: Path) -> dict[tuple[str, str, str, int | None], dict[str, Any]]:
    if not path.is_file():
        return {}
    rows = json.loads(path.read_text(encoding="utf-8"))
    return {(r["pair"], r["rule"], r["path"], r["line"]): r for r in rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rules", type=Path, default=RULES)
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--only", action="append", default=[], metavar="PACKAGE",
                    help="measure only this package (repeatable)")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 4))
    ap.add_argument("--keep", action="store_true", help="keep the scratch repositories")
    ap.add_argument("--json", action="store_true", help="print every finding as JSON")
    args = ap.parse_args(argv)

    pairs = [p for p in PAIRS if not args.only or p[1] in args.only]
    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="repos-", dir=CACHE))
    try:
        for p in pairs:  # download one at a time: pip and npm caches are not concurrency safe
            for version in p[2:]:
                try:
                    fetch(p[0], p[1], version)
                except RuntimeError as exc:
                    print(f"  download failed: {exc}", file=sys.stderr)
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(lambda p: measure(p, work, args.rules.resolve()), pairs))
    finally:
        if args.keep:
            print(f"scratch repositories kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)

    labels = load_labels(args.labels)
    if args.json:
        print(json.dumps([{"pair": r.pair, **f} for r in results for f in r.findings], indent=2))
        return 0

    ok = [r for r in results if not r.error]
    n_files = sum(len(r.files) for r in ok)
    n_code = sum(r.code_files for r in ok)
    print(f"real releases: {len(ok)} pairs, {n_files} changed files ({n_code} code), "
          f"{sum(r.added for r in ok)} lines added (slopjudge run --base HEAD~1 --dry-run)")
    print(f"{'pair':30}{'files':>7}{'added':>8}  refusals (rule: files)")
    for r in results:
        if r.error and not r.files:
            print(f"{r.pair:30}  ERROR {r.error}")
            continue
        by_rule: dict[str, set[str]] = defaultdict(set)
        for f in r.findings:
            by_rule[f["rule"]].add(f["path"] or "?")
        refusals = ", ".join(f"{k}: {len(v)}" for k, v in sorted(by_rule.items())) or "-"
        print(f"{r.pair:30}{len(r.files):>7}{r.added:>8}  {refusals}")
        if r.error:
            print(f"{'':30}  ERROR {r.error}")

    # per rule: pairs refused, files refused, files falsely refused (labels)
    rules = sorted({f["rule"] for r in ok for f in r.findings})
    unlabeled: list[tuple[str, dict[str, Any]]] = []
    false_files: dict[str, set[tuple[str, str]]] = defaultdict(set)
    true_files: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for r in ok:
        for f in r.findings:
            lab = labels.get((r.pair, f["rule"], f["path"], f["line"]))
            key = (r.pair, f["path"] or "?")
            if lab is None:
                unlabeled.append((r.pair, f))
            elif lab["verdict"] == "true":
                true_files[f["rule"]].add(key)
            else:
                false_files[f["rule"]].add(key)
    def share(files: set[tuple[str, str]], of: int) -> float:
        return len(files) / of if of else 0.0

    print()
    print("files: share of all changed files; code: share of changed code files (.py/.js/.ts...);"
          " false: labeled false refusals")
    print(f"{'rule':26}{'pairs':>7}{'files':>8}{'false pairs':>12}{'false files':>12}"
          f"{'false code':>11}{'true files':>11}")
    worst = 0.0
    for rule in rules:
        pairs_hit = sum(any(f["rule"] == rule for f in r.findings) for r in ok)
        files_hit = {(r.pair, f["path"]) for r in ok for f in r.findings if f["rule"] == rule}
        false_pairs = {pair for pair, _ in false_files[rule]}
        worst = max(worst, share(false_files[rule], n_code))
        print(f"{rule:26}{pairs_hit / len(ok):>7.0%}{share(files_hit, n_files):>8.1%}"
              f"{len(false_pairs) / len(ok):>12.0%}{share(false_files[rule], n_files):>12.1%}"
              f"{share(false_files[rule], n_code):>11.1%}{share(true_files[rule], n_files):>11.1%}")
    any_files = {(r.pair, f["path"]) for r in ok for f in r.findings}
    any_false: set[tuple[str, str]] = set().union(*false_files.values()) if false_files else set()
    naive = {(r.pair, p) for r in ok for p in r.naive_files}
    overall = share(any_false, n_code)
    print(f"{'any rule':26}{sum(bool(r.findings) for r in ok) / len(ok):>7.0%}"
          f"{share(any_files, n_files):>8.1%}{len({p for p, _ in any_false}) / len(ok):>12.0%}"
          f"{share(any_false, n_files):>12.1%}{overall:>11.1%}")
    print(f"{'baseline: naive grep':26}{sum(bool(r.naive_files) for r in ok) / len(ok):>7.0%}"
          f"{share(naive, n_files):>8.1%}")
    asked = Counter(rule for r in ok for rule in r.judges_asked)
    if asked:
        print("judges a prepare step would ask (pairs): "
              + ", ".join(f"{k} {v}/{len(ok)}" for k, v in sorted(asked.items())))
    print(f"target: false refusals <= {TARGET:.0%} of changed code files per rule and overall")
    for pair, f in unlabeled:
        print(f"  UNLABELED  {pair}  {f['rule']}  {f['path']}:{f['line']}  {f['message']}")
    failed = bool(unlabeled) or len(ok) < len(results) or worst > TARGET or overall > TARGET
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
