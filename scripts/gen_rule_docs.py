#!/usr/bin/env python3
"""Print the Markdown list of rules for the README, from the rule files themselves.

Reads every `rules/<id>.yaml` and `rules/<id>/rule.yaml` (folders starting
with `_` hold no rule) and prints, per rule, its id, when it fires, its
one-line `description`, and its `doc` block (What it does / Why it matters /
Example / Fix) with the headings demoted under the rule's own heading.

    python scripts/gen_rule_docs.py [--rules DIR] [--summary]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Any


def rule_files(rules_dir: str) -> list[tuple[str, str]]:
    found = []
    for name in sorted(os.listdir(rules_dir)):
        if name.startswith(("_", ".")):
            continue
        path = os.path.join(rules_dir, name)
        if os.path.isdir(path) and os.path.isfile(os.path.join(path, "rule.yaml")):
            found.append((name, os.path.join(path, "rule.yaml")))
        elif name.endswith(".yaml") and os.path.isfile(path):
            found.append((name[: -len(".yaml")], path))
    return found


def load(path: str) -> dict[str, Any]:
    from ruamel.yaml import YAML

    with open(path, encoding="utf-8") as fh:
        data = YAML(typ="safe").load(fh)
    if not isinstance(data, dict):
        raise ValueError(f"{path}:1:1: a rule file holds a mapping")
    return data


def kinds(data: dict[str, Any]) -> str:
    ks = sorted({"judge" if "judge" in c else "script" for c in data.get("checks") or []})
    return " + ".join(ks)


def render(rules_dir: str, summary_only: bool = False) -> str:
    rows = [(rid, load(path)) for rid, path in rule_files(rules_dir)]
    out = ["| rule | fires on | checks | what it refuses |", "|---|---|---|---|"]
    for rid, data in rows:
        on = ", ".join(data.get("on") or ["stop", "ci"])
        if data.get("tools"):
            on += f" ({', '.join(data['tools'])})"
        desc = data["description"].replace("|", "\\|")
        out.append(f"| [`{rid}`](#{rid}) | {on} | {kinds(data)} | {desc} |")
    if summary_only:
        return "\n".join(out) + "\n"
    for rid, data in rows:
        out += ["", f"### {rid}", "", f"*{data['description']}*", ""]
        doc = (data.get("doc") or "").strip()
        if doc:
            out.append(re.sub(r"(?m)^## ", "#### ", doc))
        else:
            out.append("(no documentation)")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Print the rule list for the README from the rule files.")
    ap.add_argument("--rules", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rules"))
    ap.add_argument("--summary", action="store_true", help="only the summary table")
    args = ap.parse_args(argv)
    try:
        sys.stdout.write(render(args.rules, args.summary))
    except (OSError, ValueError) as exc:
        print(f"gen_rule_docs: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
