"""A CI run of a commit that touches no code (the default pack, a README edit) loads
only what its two Python checks need: no judge code, no verdict cache, no thread-pool
executor (and the logging it brings), no judges' budget, no template engine, schema
validator or YAML parser (the rules come from their cache), and none of what the pack's
helpers use only for code (syntax trees, close matches) or dataclasses would load."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from slopjudge.payload import CHECK_ENV
from tests.helpers import PY, cli_env, commit_all, make_repo, sj

# Module roots a docs-only `run` must not import (or their dotted children).
OFF_THE_RUN_PATH = {
    "concurrent", "logging", "traceback", "hashlib", "hmac", "pathlib", "tempfile",
    "jinja2", "markupsafe", "jsonschema", "referencing", "ruamel", "tenacity",
    "slopjudge.checks.judge", "slopjudge.judging.cache", "slopjudge.judging.budget",
    "slopjudge.loading.templates", "slopjudge.judging.verdict", "slopjudge.loading.loader",
    "dataclasses", "inspect", "ast", "difflib",
}

PROBE = r"""
import json, sys
before = set(sys.modules)
from slopjudge.cli import main
code = main(["run", "--base", "HEAD~1", "--format", "json"])
json.dump({"code": code, "new": sorted(set(sys.modules) - before)}, sys.stderr)
"""


def _off_path(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m in OFF_THE_RUN_PATH
                  or any(m.startswith(h + ".") for h in OFF_THE_RUN_PATH))


def test_a_docs_only_run_imports_no_judge_executor_or_loader_code(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"src/app.py": "def main():\n    return 1\n"})
    res = sj("init", cwd=repo)
    assert res.returncode == 0, res.stderr
    commit_all(repo, "init")
    with (repo / "README.md").open("a", encoding="utf-8") as fh:
        fh.write("\nMore words.\n")
    commit_all(repo, "docs only")
    env = cli_env()
    env.pop(CHECK_ENV, None)  # the suite's payload validation loads the schema validator
    # The first run loads the rules and fills their cache; the second is every CI run's.
    first = subprocess.run([PY, "-m", "slopjudge", "run", "--base", "HEAD~1"], cwd=repo,
                           env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    res = subprocess.run([PY, "-c", PROBE], cwd=repo, env=env, capture_output=True, text=True,
                         timeout=120)
    got = json.loads(res.stderr[res.stderr.rindex('{"code"'):])
    assert got["code"] == 0, res.stdout + res.stderr
    report = json.loads(res.stdout)
    ran = {c["id"]: c["outcome"] for c in report["checks"] if c["outcome"] != "not_applicable"}
    # The probe really ran the pack's checks that apply to any file, each its own process
    # (the pack's helpers load there, not in slopjudge's process).
    assert ran == {"hardcoded-secrets/scan": "pass", "versioned-copies/scan": "pass"}
    new = set(got["new"])
    assert "slopjudge.checks.script" in new and "slopscan" not in new
    assert _off_path(new) == [], f"a docs-only run imported {_off_path(new)}"
