#!/usr/bin/env python3
"""Measure the default rule pack's script checks on the labeled slop corpus.

For every diff in tests/fixtures/slop/ (labels in labels.json) this runs

    python -m slopjudge run --diff F --dry-run --format json --rules rules

and counts the fixture as refused when any script check refuses (judges are
not asked in a dry run). It prints precision, recall over the mechanically
detectable slop, the false-refusal rate on clean diffs, every miss and every
false refusal, and the same figures for a naive keyword grep over added lines
measured in the same run as the baseline.

Targets: precision >= 0.9, recall >= 0.8, false refusals <= 5%. Exit 1 when a
target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "fixtures", "slop")
RULES = os.path.join(ROOT, "rules")

# The baseline: what a reviewer's grep for the usual suspects would refuse.
NAIVE = re.compile(
    r"\bpass\s*$|NotImplemented|not implemented|TODO|\bexcept\b|catch\s*\(|\bprint\(|"
    r"console\.log|breakpoint|"
    r"debugger|\.skip|\.only|t\.Skip|noqa|type:\s*ignore|ts-ignore|eslint-disable|nolint|"
    r"^\s*(#|//)\s*\w+\(|"
    r"password|secret|api_?key|token|AKIA|PRIVATE KEY|sleep|setTimeout|Sleep\(|"
    r"[\U0001F300-\U0001FAFF]",
    re.I,
)


def run_cli(diff_path: str, rules: str) -> tuple[bool, list[str], str]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "slopjudge",
            "run",
            "--diff",
            diff_path,
            "--dry-run",
            "--format",
            "json",
            "--rules",
            rules,
            "--no-cache",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return False, [], f"no JSON report (exit {proc.returncode}): {proc.stderr.strip()[:200]}"
    fired = [
        c["id"]
        for c in report.get("checks", [])
        if c.get("kind") == "script" and c.get("outcome") == "refuse"
    ]
    errors = [
        f"{c['id']}: {c.get('reason')}"
        for c in report.get("checks", [])
        if c.get("outcome") == "error"
    ]
    errors += report.get("load_errors", [])
    return bool(fired), fired, "; ".join(errors)


def naive_refuses(diff_text: str) -> bool:
    return any(NAIVE.search(ln[1:]) for ln in diff_text.splitlines()
               if ln.startswith("+") and not ln.startswith("+++"))


def category(lab: dict[str, Any]) -> str:
    """A label's categories: the `categories` list joined, else `category`, else "-"."""
    cats = lab.get("categories")
    if isinstance(cats, list) and cats:
        return "/".join(str(c) for c in cats)
    return str(lab.get("category") or "-")


def score(results: dict[str, bool], labels: dict[str, dict[str, Any]]) -> dict[str, Any]:
    slop = [n for n, lab in labels.items() if lab["label"] == "slop"]
    mech = [n for n in slop if labels[n]["mechanical"]]
    clean = [n for n, lab in labels.items() if lab["label"] == "clean"]
    look = [n for n in clean if labels[n]["lookalike"]]
    tp = sum(results[n] for n in slop)
    fp = sum(results[n] for n in clean)
    return {
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": sum(results[n] for n in mech) / len(mech) if mech else 1.0,
        "false_refusal_rate": fp / len(clean) if clean else 0.0,
        "lookalike_false_refusal_rate": sum(results[n] for n in look) / len(look) if look else 0.0,
        "counts": {
            "slop": len(slop),
            "mechanical": len(mech),
            "clean": len(clean),
            "lookalike": len(look),
            "refused_slop": tp,
            "refused_clean": fp,
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rules", default=RULES)
    ap.add_argument("--corpus", default=CORPUS)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)

    labels: dict[str, dict[str, Any]] = json.load(
        open(os.path.join(args.corpus, "labels.json"), encoding="utf-8")
    )
    runner = run_cli
    names = sorted(labels)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = pool.map(lambda n: runner(os.path.join(args.corpus, n), args.rules), names)
        outs = dict(zip(names, results, strict=True))
    errors = {n: o[2] for n, o in outs.items() if o[2]}
    pack = {n: o[0] for n, o in outs.items()}
    naive = {
        n: naive_refuses(open(os.path.join(args.corpus, n), encoding="utf-8").read()) for n in names
    }
    figures = {"pack": score(pack, labels), "baseline_naive_grep": score(naive, labels)}

    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        how = "slopjudge run --dry-run"
        print(f"slop corpus: {len(names)} diffs ({how})")
        c = figures["pack"]["counts"]
        print(f"  {c['slop']} slop ({c['mechanical']} mechanically detectable), {c['clean']} clean "
              f"({c['lookalike']} tricky look-alikes)")
        print(f"{'':24}{'precision':>10}{'recall':>9}{'false refusals':>16}{'look-alike FR':>15}")
        for key, title in (("pack", "rule pack"), ("baseline_naive_grep", "baseline: naive grep")):
            f = figures[key]
            print(
                f"{title:24}{f['precision']:>10.3f}{f['recall']:>9.3f}"
                f"{f['false_refusal_rate']:>15.1%} "
                f"{f['lookalike_false_refusal_rate']:>14.1%}"
            )
        print("targets: precision >= 0.900, recall >= 0.800, false refusals <= 5.0%")
        for n in names:
            lab = labels[n]
            if lab["label"] == "slop" and lab["mechanical"] and not pack[n]:
                print(f"  MISS  {n} ({category(lab)})")
            if lab["label"] == "clean" and pack[n]:
                print(f"  FALSE REFUSAL  {n} ({category(lab)}): {', '.join(outs[n][1])}")
            if lab["label"] == "slop" and not lab["mechanical"] and pack[n]:
                print(
                    f"  note  {n} ({category(lab)}, judge-only) "
                    f"also refused by {', '.join(outs[n][1])}"
                )
        for n, e in errors.items():
            print(f"  ERROR {n}: {e}")
    p = figures["pack"]
    ok = (
        p["precision"] >= 0.9
        and p["recall"] >= 0.8
        and p["false_refusal_rate"] <= 0.05
        and not errors
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
