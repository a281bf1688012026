#!/usr/bin/env python3
"""Measure the default rule pack on real, human-written changes: what a Stop hook would refuse.

For each project below, consecutive released versions are fetched through the package
registries (PyPI sdists, else wheels; npm tarballs; Debian's golang-*-dev packages, which ship
a Go module's source) and committed one after another in a scratch git repository. Each step
from one release to the next is then judged as

    python -m slopjudge run --base <old> --head <new> --dry-run --format json --rules rules

A release step is many commits' worth of work, while a Stop hook sees one turn of an agent:
a few files in one place. So each step is cut into CHANGES, one per folder it touches (the
files of one folder, as a commit to one module would), and every finding belongs to the
change of its file. For each change the judge rules' prepare gates are run on exactly that
change's payload, as a Stop hook would run them.

Every finding is labeled by hand in bench/realworld_labels.json, TRUE (a reviewer applying
RUBRIC.md would uphold it) or FALSE, with a one-line reason. Printed:

- changes refused falsely: changes that touch code, refused only by FALSE findings;
- finding precision: TRUE findings / all findings;
- judge-gate rate: share of changes that touch code on which a judge rule's prepare would ask
  its judge (per rule, and any);
- the same figures for a naive keyword grep over the added lines (bench/slop.py's NAIVE),
  measured in the same run as the baseline.

Targets: false refusals <= 1% of changes that touch code, precision >= 0.8, each judge gate
open on <= 10% of them. Exit 1 when a target is missed, a download fails or a finding is
unlabeled. Downloads are cached under ~/.cache/slopjudge-bench/.
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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from slop import NAIVE  # noqa: E402  (a sibling script, importable once bench/ is on the path)

RULES = ROOT / "rules"
LABELS = ROOT / "bench" / "realworld_labels.json"
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "slopjudge-bench"
TARGET_FALSE = 0.01
TARGET_PRECISION = 0.8
TARGET_GATE = 0.10
CODE_EXT = (".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx", ".go")

# (registry, package, consecutive versions). Debian packages: versions as the archive has
# them (bookworm, trixie, sid), each a release of the upstream module.
PROJECTS: list[tuple[str, str, list[str]]] = [
    ("pypi", "requests", ["2.31.0", "2.32.0", "2.32.2", "2.32.3"]),
    ("pypi", "click", ["8.1.5", "8.1.6", "8.1.7", "8.1.8"]),
    ("pypi", "attrs", ["23.1.0", "23.2.0", "24.1.0", "24.2.0"]),
    ("pypi", "httpx", ["0.27.0", "0.27.1", "0.27.2", "0.28.0"]),
    ("pypi", "flask", ["3.0.1", "3.0.2", "3.0.3", "3.1.0"]),
    ("pypi", "packaging", ["23.2", "24.0", "24.1", "24.2"]),
    ("pypi", "black", ["24.4.2", "24.8.0", "24.10.0"]),
    ("pypi", "pluggy", ["1.3.0", "1.4.0", "1.5.0"]),
    ("npm", "commander", ["11.1.0", "12.0.0", "12.1.0"]),
    ("npm", "zod", ["3.23.0", "3.23.4", "3.23.8"]),
    ("npm", "semver", ["7.6.0", "7.6.2", "7.6.3"]),
    ("npm", "fastify", ["4.26.0", "4.26.1", "4.26.2"]),
    ("npm", "ws", ["8.16.0", "8.17.0", "8.18.0"]),
    ("npm", "yargs", ["17.6.2", "17.7.0", "17.7.1"]),
    ("deb", "golang-github-spf13-cobra-dev", ["1.6.1-1", "1.8.1-1", "1.10.2-1"]),
    ("deb", "golang-github-stretchr-testify-dev", ["1.8.1-1", "1.10.0-1", "1.11.1-2"]),
    ("deb", "golang-github-google-go-cmp-dev", ["0.5.9-1", "0.6.0-1", "0.7.0-1"]),
    ("deb", "golang-github-sirupsen-logrus-dev", ["1.9.0-1", "1.9.3-2"]),
    ("deb", "golang-github-gorilla-mux-dev", ["1.8.0-1", "1.8.1-1"]),
    ("deb", "golang-github-fatih-color-dev", ["1.7.0-1", "1.17.0-1", "1.19.0-1"]),
]
SUITES = ("bookworm", "trixie", "sid")


@dataclass
class Change:
    folder: str
    files: list[str] = field(default_factory=list)
    code: bool = False
    naive: bool = False
    findings: list[dict[str, Any]] = field(default_factory=list)  # rule, path, line, message
    gates: list[str] = field(default_factory=list)  # judge rules whose prepare would ask


@dataclass
class StepResult:
    step: str
    added: int = 0
    changes: list[Change] = field(default_factory=list)
    error: str = ""


def step_name(name: str, old: str, new: str) -> str:
    return f"{name} {old}..{new}"


# ----------------------------------------------------------------------------- downloads


def apt_options() -> list[str]:
    """A private apt configuration over the machine's own Debian mirror, with the suites that
    hold the versions above; its lists live in the cache, the system's are not touched."""
    base = CACHE / "apt"
    lists = base / "lists"
    sources = base / "sources.list"
    opts = [f"-o=Dir::Etc::SourceList={sources}", "-o=Dir::Etc::SourceParts=/dev/null",
            f"-o=Dir::State::Lists={lists}", f"-o=Dir::Cache::archives={base / 'archives'}",
            "-o=APT::Sandbox::User=root"]
    if not any(lists.glob("*Packages*")):
        uri = ""
        for conf in Path("/etc/apt/sources.list.d").glob("*.sources"):
            for line in conf.read_text(encoding="utf-8").splitlines():
                if line.startswith("URIs:") and not uri:
                    uri = line.split()[1]
        if not uri:
            raise RuntimeError("no Debian mirror configured in /etc/apt/sources.list.d")
        (lists / "partial").mkdir(parents=True, exist_ok=True)
        (base / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        sources.write_text("".join(f"deb {uri} {s} main\n" for s in SUITES), encoding="utf-8")
        proc = subprocess.run(["apt-get", *opts, "-q", "update"], capture_output=True,
                              text=True, timeout=600)
        if proc.returncode != 0:
            raise RuntimeError(f"apt-get update: {proc.stderr.strip()[-300:]}")
    return opts


def fetch(registry: str, name: str, version: str) -> Path:
    """The cached release archive, downloaded through pip, npm or apt-get when missing."""
    folder = CACHE / registry / f"{name}-{version}"
    have = [p for p in folder.glob("*") if p.is_file()] if folder.is_dir() else []
    if have:
        return have[0]
    folder.mkdir(parents=True, exist_ok=True)
    if registry == "pypi":
        base = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder)]
        proc = subprocess.run([*base, "--no-binary", name, f"{name}=={version}"],
                              capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:  # no sdist: take the pure-Python wheel
            proc = subprocess.run([*base, "--only-binary", ":all:", f"{name}=={version}"],
                                  capture_output=True, text=True, timeout=300)
    elif registry == "npm":
        proc = subprocess.run(["npm", "pack", f"{name}@{version}", "--silent"], cwd=folder,
                              capture_output=True, text=True, timeout=300)
    else:
        proc = subprocess.run(["apt-get", *apt_options(), "-q", "download", f"{name}={version}"],
                              cwd=folder, capture_output=True, text=True, timeout=300)
    have = [p for p in folder.glob("*") if p.is_file()]
    if proc.returncode != 0 or not have:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"could not download {name} {version}: {proc.stderr.strip()[-300:]}")
    return have[0]


def unpack(archive: Path, dest: Path) -> None:
    """Extract a release into dest, dropping the archive's single top folder (for a Debian
    Go package: the path down to the module under /usr/share/gocode/src)."""
    tmp = Path(tempfile.mkdtemp(dir=dest.parent))
    try:
        if archive.suffix in (".whl", ".zip"):
            with zipfile.ZipFile(archive) as zf:
                zf.extractall(tmp)
        elif archive.suffix == ".deb":
            subprocess.run(["dpkg-deb", "-x", str(archive), str(tmp)], check=True,
                           capture_output=True, timeout=300)
            src = tmp / "usr" / "share" / "gocode" / "src"
            tmp_top = src if src.is_dir() else tmp
            while True:
                entries = [e for e in tmp_top.iterdir() if not e.is_symlink()]
                if len(entries) == 1 and entries[0].is_dir():
                    tmp_top = entries[0]
                else:
                    break
            shutil.copytree(tmp_top, dest, symlinks=True, dirs_exist_ok=True)
            return
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


def build_repo(project: tuple[str, str, list[str]], work: Path) -> tuple[Path, list[str]]:
    """A repository with one commit per release, oldest first; and the commits' ids."""
    registry, name, versions = project
    repo = work / name
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    commits = []
    for version in versions:
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
        commits.append(git(repo, "rev-parse", "HEAD").strip())
    return repo, commits


def folder_of(path: str) -> str:
    return os.path.dirname(path) or "."


def run_json(argv: list[str], repo: Path, env: dict[str, str]) -> Any:
    proc = subprocess.run([sys.executable, "-m", "slopjudge", *argv], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=900)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"slopjudge {argv[0]}: no JSON (exit {proc.returncode}): "
                           f"{proc.stderr.strip()[:300]}") from None


def judge_gates(rules: Path) -> list[tuple[str, Path]]:
    """(rule, prepare script) of every judge check that has a prepare step."""
    from ruamel.yaml import YAML

    out = []
    for rule_yaml in sorted(rules.glob("*/rule.yaml")):
        data = YAML(typ="safe").load(rule_yaml.read_text(encoding="utf-8"))
        for c in data.get("checks") or []:
            if "judge" in c and "prepare" in c:
                out.append((rule_yaml.parent.name, rule_yaml.parent / c["prepare"]))
    return out


def gate_opens(script: Path, payload: dict[str, Any], files: list[str], env: dict[str, str]) \
        -> bool:
    """Whether the prepare step, given only this change's files, would ask its judge."""
    mine = [f for f in payload["changeset"]["files"] if f["path"] in files]
    if not mine:
        return False
    one = {**payload, "changeset": {**payload["changeset"], "files": mine},
           "change": "".join(f.get("diff") or "" for f in mine)}
    # As slopjudge runs a Python check: on its own interpreter (the pack imports slopjudge).
    proc = subprocess.run([sys.executable, str(script)], input=json.dumps(one),
                          cwd=script.parent, env=env,
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        return True  # a failed prepare refuses: the judge would be in the way
    try:
        return not json.loads(proc.stdout or "{}").get("skip", False)
    except json.JSONDecodeError:
        return True


def measure_project(project: tuple[str, str, list[str]], work: Path, rules: Path) \
        -> list[StepResult]:
    name, versions = project[1], project[2]
    try:
        repo, commits = build_repo(project, work)
    except (RuntimeError, OSError, subprocess.SubprocessError, tarfile.TarError,
            zipfile.BadZipFile) as exc:
        return [StepResult(step_name(name, versions[0], versions[-1]), error=str(exc))]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLOPJUDGE_", "SLOPRAIL_"))}
    env["SLOPJUDGE_EVENTS_FILE"] = str(work / f"{name}.events.jsonl")
    gates = judge_gates(rules)
    results = []
    for k in range(1, len(commits)):
        res = StepResult(step_name(name, versions[k - 1], versions[k]))
        results.append(res)
        base, head = commits[k - 1], commits[k]
        changes: dict[str, Change] = {}
        for row in git(repo, "diff", "--numstat", "--no-renames", base, head).splitlines():
            added, _removed, path = row.split("\t", 2)
            res.added += int(added) if added.isdigit() else 0
            ch = changes.setdefault(folder_of(path), Change(folder_of(path)))
            ch.files.append(path)
            ch.code = ch.code or path.endswith(CODE_EXT)
        path = ""
        for ln in git(repo, "diff", "-U0", "--no-renames", base, head).splitlines():
            if ln.startswith("+++ "):
                path = ln[6:] if ln.startswith("+++ b/") else ""
            elif ln.startswith("+") and path and NAIVE.search(ln[1:]) and path.endswith(CODE_EXT):
                changes[folder_of(path)].naive = True
        res.changes = sorted(changes.values(), key=lambda c: c.folder)
        try:
            report = run_json(["run", "--base", base, "--head", head, "--dry-run", "--format",
                               "json", "--rules", str(rules), "--no-cache"], repo, env)
            errors = [f"{c['id']}: {c['reason']}" for c in report["checks"]
                      if c["outcome"] == "error"]
            errors += report.get("load_errors", [])
            if errors:
                res.error = "; ".join(errors)[:500]
            for c in report["checks"]:
                if c["outcome"] != "refuse":
                    continue
                for f in c["findings"] or [{"path": None, "line": None, "message": c["reason"]}]:
                    folder = folder_of(f["path"] or "")
                    changes.setdefault(folder, Change(folder)).findings.append(
                        {"rule": c["rule"], **f})
            for rule, script in gates:
                payload = run_json(["payload", "--base", base, "--head", head, "--rule", rule,
                                    "--rules", str(rules)], repo, env)
                for ch in res.changes:
                    if ch.code and gate_opens(script, payload, ch.files, env):
                        ch.gates.append(rule)
        except RuntimeError as exc:
            res.error = str(exc)
    return results


# ----------------------------------------------------------------------------- report


def load_labels(path: Path) -> dict[tuple[str, str, str, int | None], dict[str, Any]]:
    if not path.is_file():
        return {}
    rows = json.loads(path.read_text(encoding="utf-8"))
    return {(r["step"], r["rule"], r["path"], r["line"]): r for r in rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rules", type=Path, default=RULES)
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--only", action="append", default=[], metavar="PACKAGE",
                    help="measure only this package (repeatable)")
    ap.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 2))
    ap.add_argument("--keep", action="store_true", help="keep the scratch repositories")
    ap.add_argument("--json", action="store_true", help="print every finding as JSON")
    ap.add_argument("--save", type=Path, help="also write the measured steps to this file")
    ap.add_argument("--load", type=Path, help="report on steps saved by --save; measure nothing")
    args = ap.parse_args(argv)

    projects = [p for p in PROJECTS if not args.only or p[1] in args.only]
    if args.load:
        return report(load_steps(args.load), projects, args)
    CACHE.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="repos-", dir=CACHE))
    try:
        for p in projects:  # download one at a time: pip, npm and apt are not concurrency safe
            for version in p[2]:
                try:
                    fetch(p[0], p[1], version)
                except RuntimeError as exc:
                    print(f"  download failed: {exc}", file=sys.stderr)
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            per_project = list(pool.map(
                lambda p: measure_project(p, work, args.rules.resolve()), projects))
    finally:
        if args.keep:
            print(f"scratch repositories kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    steps = [s for group in per_project for s in group]
    if args.save:
        args.save.write_text(json.dumps([asdict(s) for s in steps]), encoding="utf-8")
    return report(steps, projects, args)


def load_steps(path: Path) -> list[StepResult]:
    rows = json.loads(path.read_text(encoding="utf-8"))
    return [StepResult(r["step"], r["added"], [Change(**c) for c in r["changes"]], r["error"])
            for r in rows]


def report(steps: list[StepResult], projects: list[tuple[str, str, list[str]]],
           args: argparse.Namespace) -> int:

    if args.json:
        print(json.dumps([{"step": s.step, **f} for s in steps for ch in s.changes
                          for f in ch.findings], indent=2))
        return 0

    labels = load_labels(args.labels)
    ok = [s for s in steps if not s.error]
    code_changes = [(s, ch) for s in ok for ch in s.changes if ch.code]
    n_code = len(code_changes)
    print(f"real releases: {len(projects)} projects, {len(ok)} release steps, "
          f"{sum(len(s.changes) for s in ok)} changes ({n_code} touch code), "
          f"{sum(s.added for s in ok)} lines added")
    print(f"{'release step':44}{'changes':>8}{'code':>6}{'added':>8}  refused changes (rule)")
    for s in steps:
        if s.error and not s.changes:
            print(f"{s.step:44}  ERROR {s.error}")
            continue
        refused = Counter(f["rule"] for ch in s.changes for f in
                          {(f["rule"], ch.folder): f for f in ch.findings}.values())
        text = ", ".join(f"{k}: {v}" for k, v in sorted(refused.items())) or "-"
        print(f"{s.step:44}{len(s.changes):>8}{sum(c.code for c in s.changes):>6}"
              f"{s.added:>8}  {text}")
        if s.error:
            print(f"{'':44}  ERROR {s.error}")

    unlabeled: list[tuple[str, dict[str, Any]]] = []
    true_n = false_n = 0
    false_changes = refused_changes = 0
    per_rule: dict[str, Counter[str]] = defaultdict(Counter)
    for s, ch in [(st, c) for st in ok for c in st.changes]:
        verdicts = []
        for f in ch.findings:
            lab = labels.get((s.step, f["rule"], f["path"], f["line"]))
            if lab is None:
                unlabeled.append((s.step, f))
                continue
            verdicts.append(lab["verdict"])
            per_rule[f["rule"]][lab["verdict"]] += 1
            true_n += lab["verdict"] == "true"
            false_n += lab["verdict"] != "true"
        if ch.findings:
            refused_changes += 1
            if verdicts and "true" not in verdicts and len(verdicts) == len(ch.findings):
                false_changes += 1
    precision = true_n / (true_n + false_n) if true_n + false_n else 1.0
    false_rate = false_changes / n_code if n_code else 0.0
    naive_rate = sum(ch.naive for _, ch in code_changes) / n_code if n_code else 0.0
    print()
    print(f"{'rule':26}{'TRUE':>6}{'FALSE':>7}")
    for rule in sorted(per_rule):
        print(f"{rule:26}{per_rule[rule]['true']:>6}{per_rule[rule]['false']:>7}")
    print()
    print(f"changes refused: {refused_changes} of {n_code} that touch code; "
          f"falsely: {false_changes} ({false_rate:.1%}); "
          f"baseline naive grep would flag {naive_rate:.1%}")
    print(f"finding precision: {precision:.3f} ({true_n} TRUE, {false_n} FALSE)")
    gate_rate: dict[str, float] = {}
    for rule, _script in judge_gates(args.rules.resolve()):
        opened = sum(rule in ch.gates for _, ch in code_changes)
        gate_rate[rule] = opened / n_code if n_code else 0.0
        print(f"judge gate {rule:22} opens on {opened} of {n_code} changes "
              f"({gate_rate[rule]:.1%})")
    any_gate = sum(bool(ch.gates) for _, ch in code_changes)
    print(f"judge gate {'(any)':22} opens on {any_gate} of {n_code} changes "
          f"({any_gate / n_code if n_code else 0:.1%})")
    print(f"targets: false refusals <= {TARGET_FALSE:.0%} of changes that touch code, "
          f"precision >= {TARGET_PRECISION}, each judge gate <= {TARGET_GATE:.0%}")
    for step, f in unlabeled:
        print(f"  UNLABELED  {step}  {f['rule']}  {f['path']}:{f['line']}  {f['message']}")
    failed = (bool(unlabeled) or len(ok) < len(steps) or false_rate > TARGET_FALSE
              or precision < TARGET_PRECISION or any(r > TARGET_GATE for r in gate_rate.values()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
