"""`slopjudge init`: copy the packaged rules, templates and RUBRIC.md into the workspace,
never overwriting: a file that already exists is left as it is and named."""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil

from slopjudge.commands._shared import fail, require_git
from slopjudge.fsutil import find_workspace, read_or
from slopjudge.resources import DATA_DIR

# The schemas go along so the rules' `yaml-language-server` lines resolve in editors.
ITEMS = ("rules", "templates", "RUBRIC.md", "schemas/rule.schema.json", "schemas/case.schema.json")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dir", metavar="DIR",
                        help="the repository to start (default: the one holding the current "
                             "folder, at its top, where the other commands look)")


def _files(root: str) -> list[str]:
    """Every file under ``root`` (or ``root`` itself), skipping caches."""
    if os.path.isfile(root):
        return [root]
    found = []
    for folder, dirs, names in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [os.path.join(folder, n) for n in sorted(names) if not n.endswith(".pyc")]
    return found


def run(args: argparse.Namespace) -> int:
    target = os.path.abspath(args.dir) if args.dir else find_workspace(os.getcwd())
    if not os.path.isdir(target):
        return fail(f"no folder at {target}")
    require_git(target, "nothing was copied")
    copied, kept = 0, []
    for item in ITEMS:
        source = os.path.join(DATA_DIR, item)
        if not os.path.exists(source):
            return fail(f"this slopjudge install lacks its default {item}")
        for path in _files(source):
            rel = os.path.relpath(path, DATA_DIR)
            dest = os.path.join(target, rel)
            if os.path.exists(dest):
                kept.append(rel)
                continue
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy2(path, dest)
            # A wheel install drops a script's run bits from package data: +x wherever it
            # is readable. Else the copy stands; `validate` names a script that cannot run.
            with contextlib.suppress(OSError):
                if read_or(dest, b"").startswith(b"#!"):
                    mode = os.stat(dest).st_mode
                    os.chmod(dest, mode | ((mode & 0o444) >> 2))
            copied += 1
    print(f"slopjudge: copied {copied} file(s) of the default rule pack into {target}")
    if (top := find_workspace(target)) != target:
        print(f"slopjudge: note: the other commands and the hooks look for the rules at the "
              f"repository's top, {top} (or where `rules_dir` in its settings says)")
    if kept:
        print(f"slopjudge: left {len(kept)} existing file(s) as they were: " + ", ".join(kept[:10])
              + (" …" if len(kept) > 10 else ""))
    print("next: `slopjudge validate`, then commit the pack (`git add rules templates RUBRIC.md "
          "schemas && git commit`) before an agent session or a CI run: until it is committed, "
          "its files are part of every change judged; then `slopjudge install claude` for the "
          "agent hooks")
    return 0
