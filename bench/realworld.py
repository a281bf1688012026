#!/usr/bin/env python3
"""Measure the default rule pack on real commits of projects it was not written on.

The corpus is bench/realworld_corpus.json: public projects in Python, TypeScript/JavaScript
and Go, each with the ids of about ten of its own commits (one commit is what a Stop hook or a
CI job sees), split by project into a TUNING half and a HELD-OUT half with a fixed seed; and,
for recall, commits whose trailers name an AI co-author (the AGENT set). No project's code is
kept here: each commit is rebuilt from a local mirror of the project's git history
($SLOPJUDGE_MIRRORS, default /work/.mirror/<owner>+<name>/repo, as the `fetch` tool leaves it).
A missing mirror is reported by name and fails the run.

Each commit is judged as

    python -m slopjudge run --base <commit>^ --head <commit> --dry-run --format json

with every preview rule enabled, so that preview rules are measured too; the default pack's
figures count the stable rules only. A judge check that renders its prompt (its prepare step
did not skip) is an open gate; its prompt's estimated tokens are recorded.

Every finding is labeled by hand in bench/realworld_labels.json, TRUE (a reviewer applying
RUBRIC.md would uphold it) or FALSE, with a one-line reason. Printed per half:

- commits refused falsely: commits that touch code, refused by the default pack on FALSE
  findings only; finding precision: TRUE / all findings of the default pack;
- per rule: TRUE and FALSE findings, precision, the share of code commits the rule alone would
  refuse falsely, and the status the measurement earns (stable: precision >= 0.9 and false
  refusals <= 0.3% on the held-out half), beside the status the pack gives it;
- judge gates (per rule and their union) and the judge prompts' estimated tokens (median, p95);
- a naive keyword grep over the added lines (bench/slop.py's NAIVE) as the baseline.

Targets, on the held-out half: false refusals <= 1% of code commits, precision >= 0.8, gates
union <= 10% of code commits, median prompt <= 5,000 tokens and p95 <= 20,000, every rule's
pack status the one its measurement earns. Exit 1 when one is missed, a mirror is missing or
a finding is unlabeled. `--select` (re)chooses the commits from the mirrors and rewrites the
manifest; the held-out half is meant to be run once per change of a rule, never to pick a fix.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from slop import NAIVE  # noqa: E402  (a sibling script, importable once bench/ is on the path)

RULES = ROOT / "rules"
MANIFEST = ROOT / "bench" / "realworld_corpus.json"
LABELS = ROOT / "bench" / "realworld_labels.json"
REVIEW = ROOT / "bench" / "realworld_agent_review.json"  # what a reviewer flags in agent work
MIRRORS = Path(os.environ.get("SLOPJUDGE_MIRRORS") or "/work/.mirror")
HALVES = ("tuning", "held-out", "agent")
TARGET_FALSE = 0.01
TARGET_PRECISION = 0.8
TARGET_GATES = 0.10
TARGET_MEDIAN_TOKENS = 5000
TARGET_P95_TOKENS = 20000
STABLE_PRECISION = 0.9
STABLE_FALSE = 0.003
CODE_EXT = (".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".tsx", ".jsx", ".go")
# Per project: this many human commits, this many agent ones; commits that add more than
# MAX_ADDED lines are left out (a Stop hook sees one turn of an agent, not a vendored tree).
PER_PROJECT, PER_PROJECT_AGENT, MAX_ADDED = 10, 3, 600
AGENT_TRAILER = re.compile(
    r"(?im)^(co-authored-by:.*\b(claude|copilot|cursor|codex)\b|.*generated with \[?claude)")


@dataclass
class Result:
    half: str
    repo: str
    commit: str
    code: bool = False
    naive: bool = False
    findings: list[dict[str, Any]] = field(default_factory=list)  # rule, path, line, message
    gates: dict[str, int] = field(default_factory=dict)  # judge rule -> prompt tokens
    error: str = ""

    @property
    def step(self) -> str:
        return f"{self.repo}@{self.commit[:12]}"


def mirror(repo: str) -> Path:
    return MIRRORS / repo.replace("/", "+") / "repo"


def git(gitdir: Path, *args: str) -> str:
    proc = subprocess.run(["git", f"--git-dir={gitdir}", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"})
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args[:3])}: {proc.stderr.strip()[:300]}")
    return proc.stdout


# ----------------------------------------------------------------------------- selection


def select(manifest: dict[str, Any]) -> None:
    """Choose each project's commits from its mirror and split the projects by language."""
    rng = random.Random(manifest["seed"])
    by_lang: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in manifest["projects"]:
        by_lang[p["lang"]].append(p)
        gitdir = mirror(p["repo"])
        if not gitdir.is_dir():
            print(f"mirror missing: {gitdir} (fetch github:{p['repo']})", file=sys.stderr)
            continue
        log = git(gitdir, "log", "--no-merges", "--first-parent", "-n", "600",
                  "--format=%x01%H%x00%B%x00", "--numstat", "HEAD")
        human: list[str] = []
        agent: list[str] = []
        for entry in log.split("\x01")[1:]:
            sha, body, stat = entry.split("\x00", 2)
            rows = [r.split("\t", 2) for r in stat.strip().splitlines() if r.count("\t") >= 2]
            added = sum(int(a) for a, _, _ in rows if a.isdigit())
            if not any(path.endswith(CODE_EXT) for _, _, path in rows) or added > MAX_ADDED:
                continue
            if len(git(gitdir, "rev-list", "--parents", "-n", "1", sha).split()) != 2:
                continue  # a root commit has no parent to diff against
            if AGENT_TRAILER.search(body):
                if len(agent) < PER_PROJECT_AGENT:
                    agent.append(sha)
            elif len(human) < PER_PROJECT:
                human.append(sha)
        p["commits"], p["agent_commits"] = human, agent
    for lang in sorted(by_lang):
        group = sorted(by_lang[lang], key=lambda p: p["repo"])
        rng.shuffle(group)
        for i, p in enumerate(group):
            p["split"] = HALVES[i % 2]


# ----------------------------------------------------------------------------- measuring


def run_json(argv: list[str], cwd: Path) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLOPJUDGE_", "SLOPRAIL_"))}
    proc = subprocess.run([sys.executable, "-m", "slopjudge", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"slopjudge {argv[0]}: no JSON (exit {proc.returncode}): "
                           f"{proc.stderr.strip()[:300]}") from None


def measure_commit(res: Result, work: Path, rules: Path, only: list[str]) -> None:
    gitdir = work / ".git"
    base = f"{res.commit}^"
    for row in git(gitdir, "diff", "--numstat", "--no-renames", base, res.commit).splitlines():
        res.code = res.code or row.split("\t", 2)[-1].endswith(CODE_EXT)
    path = ""
    for ln in git(gitdir, "diff", "-U0", "--no-renames", base, res.commit).splitlines():
        if ln.startswith("+++ "):
            path = ln[6:] if ln.startswith("+++ b/") else ""
        elif ln.startswith("+") and path.endswith(CODE_EXT) and NAIVE.search(ln[1:]):
            res.naive = True
    report = run_json(["run", "--base", base, "--head", res.commit, "--dry-run", "--format",
                       "json", "--rules", str(rules), "--no-cache", "--jobs", "1",
                       *(a for rid in only for a in ("--rule", rid))], work)
    errors = [f"{c['id']}: {c['reason']}" for c in report["checks"] if c["outcome"] == "error"]
    errors += [str(e) for e in report.get("load_errors", [])]
    res.error = "; ".join(errors)[:500]
    for c in report["checks"]:
        if c["kind"] == "judge" and c["outcome"] == "not_judged":
            res.gates[c["rule"]] = (c.get("usage") or {}).get("prompt_tokens") or 0
        if c["outcome"] == "refuse":
            for f in c["findings"] or [{"path": None, "line": None, "message": c["reason"]}]:
                res.findings.append({"rule": c["rule"], "path": f["path"], "line": f["line"],
                                     "message": f["message"]})


def measure_project(project: dict[str, Any], halves: list[str], scratch: Path, rules: Path,
                    only: list[str]) -> list[Result]:
    todo = [Result(project["split"], project["repo"], c) for c in project["commits"]
            if project["split"] in halves]
    if "agent" in halves:
        todo += [Result("agent", project["repo"], c) for c in project.get("agent_commits", [])]
    if not todo:
        return []
    gitdir = mirror(project["repo"])
    if not gitdir.is_dir():
        for r in todo:
            r.error = f"mirror missing: {gitdir} (fetch github:{project['repo']})"
        return todo
    work = scratch / project["repo"].replace("/", "+")
    # A clone sharing the mirror's objects, nothing checked out: `run --base --head` reads
    # the commits from git. Its settings enable every preview rule, to measure them too.
    subprocess.run(["git", "clone", "-q", "--shared", "--no-checkout", str(gitdir), str(work)],
                   check=True, capture_output=True, timeout=300)
    (work / "slopjudge.yaml").write_text("preview: true\n", encoding="utf-8")
    for r in todo:
        try:
            measure_commit(r, work, rules, only)
        except RuntimeError as exc:
            r.error = str(exc)
    print(f"  measured {project['repo']}: {len(todo)} commits", file=sys.stderr)
    return todo


# ----------------------------------------------------------------------------- report


def rule_status(rules: Path) -> dict[str, bool]:
    """rule id -> whether the pack ships it as preview."""
    from ruamel.yaml import YAML

    out = {}
    for rule_yaml in sorted(rules.glob("*/rule.yaml")):
        data = YAML(typ="safe").load(rule_yaml.read_text(encoding="utf-8")) or {}
        out[rule_yaml.parent.name] = bool(data.get("preview"))
    return out


def pct(values: list[int], q: float) -> int:
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@dataclass
class Figures:
    n_code: int = 0
    false_refusals: int = 0
    refused: int = 0
    true_n: int = 0
    false_n: int = 0
    gates_any: int = 0
    tokens: list[int] = field(default_factory=list)
    per_rule: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))

    @property
    def precision(self) -> float:
        return self.true_n / (self.true_n + self.false_n) if self.true_n + self.false_n else 1.0

    @property
    def false_rate(self) -> float:
        return self.false_refusals / self.n_code if self.n_code else 0.0


def figures(results: list[Result], labels: dict[tuple[str, str, str, Any], dict[str, Any]],
            preview: dict[str, bool], unlabeled: list[tuple[Result, dict[str, Any]]]) -> Figures:
    fig = Figures()
    for r in results:
        if not r.code:
            continue
        fig.n_code += 1
        verdicts_by_rule: dict[str, list[str]] = defaultdict(list)
        for f in r.findings:
            lab = labels.get((r.step, f["rule"], f["path"] or "", f["line"]))
            if lab is None:
                unlabeled.append((r, f))
                verdicts_by_rule[f["rule"]].append("?")
                continue
            verdicts_by_rule[f["rule"]].append(lab["verdict"])
            fig.per_rule[f["rule"]][lab["verdict"]] += 1
        for rule, verdicts in verdicts_by_rule.items():
            if "true" not in verdicts and "?" not in verdicts:
                fig.per_rule[rule]["false_refusal"] += 1
        stable = [v for rule, vs in verdicts_by_rule.items() if not preview.get(rule) for v in vs]
        fig.true_n += stable.count("true")
        fig.false_n += stable.count("false")
        if stable:
            fig.refused += 1
            fig.false_refusals += "true" not in stable and "?" not in stable
        fig.gates_any += bool(r.gates)
        fig.tokens += list(r.gates.values())
    return fig


def earned(counts: Counter[str], n_code: int) -> str:
    findings = counts["true"] + counts["false"]
    precision = counts["true"] / findings if findings else 1.0
    ok = precision >= STABLE_PRECISION and counts["false_refusal"] <= STABLE_FALSE * n_code
    return "stable" if ok else "preview"


def print_half(name: str, results: list[Result], fig: Figures, preview: dict[str, bool],
               gate_rules: list[str]) -> None:
    projects = len({r.repo for r in results})
    errors = [r for r in results if r.error]
    print(f"== {name}: {projects} projects, {len(results)} commits ({fig.n_code} touch code)"
          f"{f', {len(errors)} with errors' if errors else ''}")
    for r in errors:
        print(f"   ERROR {r.step}: {r.error}")
    print(f"   {'rule':26}{'pack':>9}{'TRUE':>6}{'FALSE':>7}{'prec':>7}{'false ref':>11}")
    for rule in sorted(set(fig.per_rule) | {r for r in preview if r in fig.per_rule}):
        c = fig.per_rule[rule]
        n = c["true"] + c["false"]
        prec = f"{c['true'] / n:.2f}" if n else "-"
        print(f"   {rule:26}{'preview' if preview.get(rule) else 'stable':>9}{c['true']:>6}"
              f"{c['false']:>7}{prec:>7}{c['false_refusal'] / max(1, fig.n_code):>10.1%}")
    naive = sum(r.naive for r in results if r.code) / max(1, fig.n_code)
    print(f"   default pack: refused {fig.refused} of {fig.n_code} code commits; falsely "
          f"{fig.false_refusals} ({fig.false_rate:.1%}); naive grep would flag {naive:.1%}")
    print(f"   finding precision (stable rules): {fig.precision:.3f} "
          f"({fig.true_n} TRUE, {fig.false_n} FALSE)")
    for rule in gate_rules:
        opened = sum(rule in r.gates for r in results if r.code)
        print(f"   judge gate {rule:22} opens on {opened} of {fig.n_code} "
              f"({opened / max(1, fig.n_code):.1%})")
    print(f"   judge gates union opens on {fig.gates_any} of {fig.n_code} "
          f"({fig.gates_any / max(1, fig.n_code):.1%}); prompts: {len(fig.tokens)}, median "
          f"{pct(fig.tokens, 0.5)} est. tokens, p95 {pct(fig.tokens, 0.95)}, max "
          f"{max(fig.tokens, default=0)}")


def report(results: list[Result], args: argparse.Namespace) -> int:
    rules = args.rules.resolve()
    preview = rule_status(rules)
    gate_rules = sorted({r for res in results for r in res.gates} | set(judge_rules(rules)))
    labels = load_labels(args.labels)
    unlabeled: list[tuple[Result, dict[str, Any]]] = []
    failed = any(r.error for r in results)
    figs = {}
    for half in HALVES:
        mine = [r for r in results if r.half == half]
        if not mine:
            continue
        figs[half] = figures(mine, labels, preview, unlabeled)
        print_half(half, mine, figs[half], preview, gate_rules)
        print()
    if "agent" in figs:
        print_recall([r for r in results if r.half == "agent"], labels, args.review)
    held = figs.get("held-out")
    if held is not None:
        mismatched = [f"{rule} ships {'preview' if preview[rule] else 'stable'}, measures "
                      f"{earned(held.per_rule[rule], held.n_code)}"
                      for rule in sorted(held.per_rule) if rule in preview
                      and (earned(held.per_rule[rule], held.n_code) == "preview") != preview[rule]]
        if args.write_status:
            mine = [r for r in results if r.half == "held-out" and r.code]
            gates = {rule: sum(rule in r.gates for r in mine) for rule in gate_rules}
            write_status(rules, held, len({r.repo for r in mine}), gates)
            mismatched = []
            preview = rule_status(rules)
        for m in mismatched:
            print(f"status mismatch: {m}")
        failed = (failed or bool(mismatched) or held.false_rate > TARGET_FALSE
                  or held.precision < TARGET_PRECISION
                  or held.gates_any > TARGET_GATES * held.n_code
                  or pct(held.tokens, 0.5) > TARGET_MEDIAN_TOKENS
                  or pct(held.tokens, 0.95) > TARGET_P95_TOKENS)
    print(f"targets on held-out: false refusals <= {TARGET_FALSE:.0%} of code commits, "
          f"precision >= {TARGET_PRECISION}, gates union <= {TARGET_GATES:.0%}, prompt median "
          f"<= {TARGET_MEDIAN_TOKENS} and p95 <= {TARGET_P95_TOKENS} est. tokens; stable rules "
          f"precision >= {STABLE_PRECISION} and false refusals <= {STABLE_FALSE:.1%}")
    for r, f in unlabeled:
        print(f"  UNLABELED  {r.step}  {f['rule']}  {f['path']}:{f['line']}  {f['message']}")
    return 1 if failed or unlabeled else 0


def print_recall(results: list[Result], labels: dict[tuple[str, str, str, Any], dict[str, Any]],
                 review_path: Path) -> None:
    """What a reviewer flagged in the agent commits, and how much of it the pack found."""
    review = {r["step"]: r for r in json.loads(review_path.read_text(encoding="utf-8"))["commits"]}
    flagged = found = 0
    for r in results:
        for flag in review.get(r.step, {}).get("flags", []):
            flagged += 1
            hit = any(f["path"] == flag["path"] and f["line"] == flag["line"]
                      for f in r.findings)
            found += hit
            if not hit:
                print(f"   MISSED {r.step} {flag['path']}:{flag['line']} RUBRIC {flag['rubric']}: "
                      f"{flag['why']}")
    reviewed = sum(r.step in review for r in results)
    print(f"== agent recall: {reviewed} of {len(results)} agent commits reviewed; the reviewer "
          f"flagged {flagged}, the pack (preview rules on) found {found}")
    print()


def tool_cases(rid: str) -> Counter[str]:
    """A tool-call guard's cases under tests/rules/<rid>/, by expected outcome."""
    from ruamel.yaml import YAML

    out: Counter[str] = Counter()
    for case in sorted((ROOT / "tests" / "rules" / rid).glob("*/case.yaml")):
        data = YAML(typ="safe").load(case.read_text(encoding="utf-8")) or {}
        out[str(data.get("expect"))] += 1
    return out


def write_status(rules: Path, held: Figures, projects: int, gates: dict[str, int]) -> None:
    """Write each content rule's held-out figures and earned status into its rule.yaml; a
    judge rule's gate, and what a tool-call guard is measured on instead of commits."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap

    yaml = YAML()  # round trip: the rule file keeps its comments, quotes and layout
    yaml.width, yaml.preserve_quotes = 4096, True
    yaml.indent(mapping=2, sequence=4, offset=2)
    corpus = (f"the held-out half of bench/realworld_corpus.json ({projects} projects, "
              f"{held.n_code} commits)")
    for rule_yaml in sorted(rules.glob("*/rule.yaml")):
        data = yaml.load(rule_yaml.read_text(encoding="utf-8"))
        rid = rule_yaml.parent.name
        missed = (data.get("measured") or {}).get("misses")  # written by hand, kept
        on = data.get("on") or ["stop", "ci"]
        judge = any("judge" in c for c in data.get("checks") or [])
        c = held.per_rule[rid]
        n = c["true"] + c["false"]
        m = CommentedMap(corpus=corpus)
        if "ci" not in on and "stop" not in on:
            cases = tool_cases(rid)
            m["corpus"] = f"its {sum(cases.values())} tool-call cases in tests/rules/{rid}"
            m["note"] = (f"a guard on agent tool calls, which commits do not show: measured on "
                         f"{cases['refuse']} calls it must refuse and {cases['pass']} look-alikes "
                         f"it must let through (`slopjudge test`), all decided as labeled; "
                         f"stable, as a refused call costs the agent one retry while a missed "
                         f"one can destroy work")
        elif judge:
            m["note"] = (f"its verdict comes from a model, which this bench does not call; its "
                         f"gate opens on {gates.get(rid, 0)} of {held.n_code} held-out code "
                         f"commits ({gates.get(rid, 0) / max(1, held.n_code):.1%}); stable, as a "
                         f"judge that cannot decide blocks and says so (see docs/precision.md)")
        else:
            m["precision"] = round(c["true"] / n, 3) if n else None
            m["findings"] = n
            m["false_refusals"] = round(c["false_refusal"] / max(1, held.n_code), 4)
            m["commits"] = held.n_code
            if not n:
                m["note"] = "precision is not measurable without findings"
        preview = not judge and "precision" in m and earned(c, held.n_code) == "preview"
        if preview:
            m["misses"] = missed or "not yet described"
        data.pop("preview", None)
        data.pop("measured", None)
        keys = list(data)
        at = keys.index("description") + 1 if "description" in keys else 0
        if preview:
            data.insert(at, "preview", True)
            at += 1
        data.insert(at, "measured", m)
        with rule_yaml.open("w", encoding="utf-8") as fh:
            yaml.dump(data, fh)


def judge_rules(rules: Path) -> list[str]:
    from ruamel.yaml import YAML

    out = []
    for rule_yaml in sorted(rules.glob("*/rule.yaml")):
        data = YAML(typ="safe").load(rule_yaml.read_text(encoding="utf-8")) or {}
        if any("judge" in c for c in data.get("checks") or []):
            out.append(rule_yaml.parent.name)
    return out


def load_labels(path: Path) -> dict[tuple[str, str, str, Any], dict[str, Any]]:
    if not path.is_file():
        return {}
    rows = json.loads(path.read_text(encoding="utf-8"))
    return {(r["step"], r["rule"], r["path"] or "", r["line"]): r for r in rows}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rules", type=Path, default=RULES)
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--manifest", type=Path, default=MANIFEST)
    ap.add_argument("--review", type=Path, default=REVIEW)
    ap.add_argument("--half", action="append", choices=HALVES, default=[],
                    help="measure only this half (repeatable; default all)")
    ap.add_argument("--only", action="append", default=[], metavar="OWNER/NAME",
                    help="measure only this project (repeatable)")
    ap.add_argument("--rule", action="append", default=[], metavar="ID",
                    help="run only this rule (repeatable), while tuning it; the pack's figures "
                         "then count only these rules")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--select", action="store_true",
                    help="choose the commits from the mirrors and rewrite the manifest")
    ap.add_argument("--write-status", action="store_true",
                    help="write each rule's held-out figures and earned status into its rule.yaml")
    ap.add_argument("--save", type=Path, help="also write the measured commits to this file")
    ap.add_argument("--load", type=Path, help="report on commits saved by --save")
    args = ap.parse_args(argv)

    manifest = json.loads(args.manifest.read_text(encoding="utf-8"))
    if args.select:
        select(manifest)
        args.manifest.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        return 0
    if args.load:
        rows = json.loads(args.load.read_text(encoding="utf-8"))
        return report([Result(**r) for r in rows if not args.half or r["half"] in args.half],
                      args)
    halves = args.half or list(HALVES)
    projects = [p for p in manifest["projects"] if not args.only or p["repo"] in args.only]
    scratch = Path(tempfile.mkdtemp(prefix="slopjudge-realworld-"))
    try:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            groups = list(pool.map(
                lambda p: measure_project(p, halves, scratch, args.rules.resolve(), args.rule),
                projects))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results = [r for g in groups for r in g]
    if args.save:
        args.save.write_text(json.dumps([asdict(r) for r in results]), encoding="utf-8")
    return report(results, args)


if __name__ == "__main__":
    sys.exit(main())
