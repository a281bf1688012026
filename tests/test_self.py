"""slopjudge's own rule pack, held to its own standard on this repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def slopjudge(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLOPJUDGE_", "SLOPRAIL_"))}
    env["SLOPJUDGE_EVENTS_FILE"] = str(tmp_path / "events.jsonl")
    return subprocess.run([sys.executable, "-m", "slopjudge", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)


def test_the_rule_pack_loads(tmp_path: Path) -> None:
    proc = slopjudge("validate", tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_rule_has_a_refusing_and_a_passing_case_and_all_pass(tmp_path: Path) -> None:
    proc = slopjudge("test", "--strict", "--format", "json", tmp_path=tmp_path)
    report = json.loads(proc.stdout)
    failed = [c for c in report["cases"] if not c["ok"]]
    assert not failed, json.dumps(failed, indent=2)
    assert report["lacking_refusing_case"] == [] and report["lacking_passing_case"] == []
    assert proc.returncode == 0


def test_the_readme_rule_list_is_generated_from_the_rule_files() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "gen_rule_docs.py"), "--check"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
