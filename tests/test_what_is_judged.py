"""What is judged (SPEC §10): files the project does not author are left out by default,
and every report says how many and why.

A repository with an untracked, un-ignored virtualenv and ``node_modules``, a
``dist/`` bundle with its source map, a lockfile and a ``linguist-generated``
file: a rule that names every file it sees, and a judge whose prompt lists them,
see only the real change; the reports count what was left out.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from slopjudge.changes import authored
from tests.helpers import commit_all, git, make_repo, run_json, sj, write_files

SEE_ALL = """#!/usr/bin/env python3
import json, sys
payload = json.load(sys.stdin)
files = [f["path"] for f in payload["changeset"]["files"]]
print(json.dumps({"reason": "saw " + " ".join(files),
                  "findings": [{"path": p, "line": 1, "message": "seen"} for p in files]}))
sys.exit(1 if files else 0)
"""
RULES = {
    "rules/see-all/rule.yaml": "description: names every file it sees\n"
                               "checks:\n  - id: scan\n    script: see.py\n",
    "rules/see-all/see.py": SEE_ALL,
    "rules/ask/rule.yaml": "description: a judge over every file\n"
                           "checks:\n  - id: judge\n    judge: list.md.j2\n",
    "rules/ask/list.md.j2": "{% for f in changeset.files %}FILE {{ f.path }}\n{% endfor %}",
}
BUNDLE = "!function(){" + ";".join(f"var a{i}=function(x){{return x}}" for i in range(200)) \
    + "}();\n//# sourceMappingURL=app.js.map\n"


def _project(tmp_path: Path) -> Path:
    repo = make_repo(tmp_path / "repo", {
        **RULES, "src/app.py": "def main():\n    return 1\n",
        ".gitattributes": "src/gen/** linguist-generated\n*.snap -diff\n",
    })
    (repo / "rules" / "see-all" / "see.py").chmod(0o755)
    commit_all(repo)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")],
                   check=True, timeout=120)
    write_files(repo, {
        ".venv/lib/python3.11/site-packages/dep/__init__.py": "x = 1\n",
        "node_modules/left-pad/index.js": "module.exports = 1;\n",
        "node_modules/left-pad/package.json": "{}\n",
        "dist/app.js": BUNDLE,
        "dist/app.js.map": '{"version":3,"sources":["../src/x.ts"],"mappings":"AAAA"}\n',
        "package-lock.json": '{"lockfileVersion": 3}\n',
        "src/gen/models.py": "GENERATED = 1\n",
        "tests/__snapshots__/a.snap": "snapshot\n",
        "src/real.py": "def real():\n    return 2\n",
    })
    return repo


def _seen(report: dict[str, object]) -> list[str]:
    [scan] = [c for c in report["checks"] if c["id"] == "see-all/scan"]  # type: ignore[index]
    return sorted({f["path"] for f in scan["findings"]})


def test_a_dry_run_judges_only_what_the_project_authors(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    rc, report = run_json("--dry-run", "--prompts-dir", str(tmp_path / "prompts"), cwd=repo)
    assert rc == 1, report
    assert _seen(report) == ["src/real.py"]
    prompts = "".join(p.read_text() for p in (tmp_path / "prompts").rglob("*") if p.is_file())
    assert "FILE src/real.py" in prompts
    assert "FILE " + "node_modules" not in prompts and ".venv" not in prompts
    left = {e["path"]: e["why"] for e in report["left_out"]["entries"]}
    assert left == {
        ".venv/": authored.DEPENDENCIES, "node_modules/": authored.DEPENDENCIES,
        "dist/app.js": authored.MINIFIED, "dist/app.js.map": authored.SOURCE_MAP,
        "package-lock.json": authored.LOCKFILE,
        "src/gen/models.py": "linguist-generated in .gitattributes",
        "tests/__snapshots__/a.snap": "-diff in .gitattributes",
    }
    venv_files = sum(1 for p in (repo / ".venv").rglob("*") if p.is_file() or p.is_symlink())
    assert report["left_out"]["files"] == venv_files + 2 + 5


def test_include_generated_judges_them_all(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    _, report = run_json("--dry-run", "--include-generated", "--rule", "see-all", cwd=repo)
    seen = _seen(report)
    assert {"dist/app.js", "package-lock.json", "src/gen/models.py",
            "node_modules/left-pad/index.js"} <= set(seen)
    assert any(p.startswith(".venv/") for p in seen)
    assert report["left_out"] == {"files": 0, "entries": []}


def test_every_report_format_says_what_was_left_out(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    for fmt in ("text", "markdown", "github", "junit", "sarif"):
        res = sj("run", "--dry-run", "--rule", "see-all", "--format", fmt, cwd=repo)
        assert "files left out of judging" in res.stdout, (fmt, res.stdout)
        assert "lockfile (1)" in res.stdout, (fmt, res.stdout)


def test_the_setting_adds_and_removes_patterns(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    (repo / "slopjudge.yaml").write_text(
        'exclude_generated:\n  - "src/real.py"\n  - "!package-lock.json"\n')
    _, report = run_json("--dry-run", "--rule", "see-all", cwd=repo)
    assert _seen(report) == ["package-lock.json", "slopjudge.yaml"]
    (repo / "slopjudge.yaml").write_text("exclude_generated: false\n")
    _, report = run_json("--dry-run", "--rule", "see-all", cwd=repo)
    assert "dist/app.js.map" in _seen(report)


def test_attributes_the_change_adds_do_not_hide_its_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**RULES, "src/app.py": "x = 1\n"})
    (repo / "rules" / "see-all" / "see.py").chmod(0o755)
    commit_all(repo)
    write_files(repo, {".gitattributes": "src/** linguist-generated\n", "src/app.py": "x = 2\n"})
    _, report = run_json("--dry-run", "--rule", "see-all", cwd=repo)
    assert _seen(report) == [".gitattributes", "src/app.py"]
    commit_all(repo)  # committed, they count from then on
    (repo / "src" / "app.py").write_text("x = 3\n")
    _, report = run_json("--dry-run", "--rule", "see-all", cwd=repo)
    assert _seen(report) == []
    assert report["left_out"]["entries"] == [
        {"path": "src/app.py", "files": 1, "why": "linguist-generated in .gitattributes"}]


@pytest.mark.parametrize("marker", ["rules/pyvenv.cfg", "rules/node_modules/x.js",
                                    ".claude/pyvenv.cfg"])
def test_a_dependency_marker_never_hides_protected_files(tmp_path: Path, marker: str) -> None:
    repo = make_repo(tmp_path / "repo", {"README.md": "hi\n"})
    write_files(repo, {**RULES, marker: "home = /usr\n",
                       ".claude/settings.json": "{}\n"})
    (repo / "rules" / "see-all" / "see.py").chmod(0o755)
    _, report = run_json("--dry-run", "--rule", "see-all", cwd=repo)
    seen = _seen(report)
    assert "rules/see-all/rule.yaml" in seen and ".claude/settings.json" in seen, seen
    assert marker in seen


def test_a_folder_with_tracked_files_is_not_a_dependency_folder(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**RULES, "src/app.py": "x = 1\n"})
    (repo / "rules" / "see-all" / "see.py").chmod(0o755)
    commit_all(repo)
    write_files(repo, {"src/pyvenv.cfg": "home = /usr\n", "src/slop.py": "y = 2\n"})
    _, report = run_json("--dry-run", "--rule", "see-all", cwd=repo)
    assert _seen(report) == ["src/pyvenv.cfg", "src/slop.py"]


def test_gitattributes_lines_read_as_git_reads_them() -> None:
    files = {".gitattributes": "*.pb.go linguist-generated=true\nvendor/** linguist-vendored\n"
                               "docs/ linguist-generated\nkeep.pb.go -linguist-generated\n"
                               "*.bin binary\n",
             "sub/.gitattributes": "*.txt -diff\n"}
    paths = ["a/x.pb.go", "keep.pb.go", "vendor/lib/a.go", "docs/a.md", "img.bin",
             "sub/notes.txt", "notes.txt"]
    assert authored.marks(paths, files) == {
        "a/x.pb.go": "linguist-generated in .gitattributes",
        "vendor/lib/a.go": "linguist-vendored in .gitattributes",
        "img.bin": "-diff in .gitattributes",
        "sub/notes.txt": "-diff in .gitattributes",
    }


def test_a_stop_leaves_out_a_virtualenv_made_during_the_session(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {**RULES, "src/app.py": "x = 1\n"})
    (repo / "rules" / "see-all" / "see.py").chmod(0o755)
    commit_all(repo)
    env = {"CLAUDE_PROJECT_DIR": str(repo)}
    start = sj("hook", "start", cwd=repo, env=env,
               input=json.dumps({"session_id": "s", "hook_event_name": "SessionStart"}))
    assert start.returncode == 0, start.stderr
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / "venv")],
                   check=True, timeout=120)
    write_files(repo, {"venv/lib/python3.11/site-packages/dep.py": "x = 1\n"})
    stop = sj("hook", "stop", cwd=repo, env=env,
              input=json.dumps({"session_id": "s", "hook_event_name": "Stop"}))
    assert stop.returncode == 0, stop.stderr
    assert stop.stdout.strip() == "", stop.stdout
    (repo / "src" / "app.py").write_text("x = 2\n")
    stop = sj("hook", "stop", cwd=repo, env=env,
              input=json.dumps({"session_id": "s", "hook_event_name": "Stop"}))
    reason = json.loads(stop.stdout)["reason"]
    assert "saw src/app.py" in reason and "venv/" not in reason, reason
    assert git(repo, "status", "--porcelain", "--untracked-files=no") == "M src/app.py"


ASK_PACK = {
    "rules/ask-pack/rule.yaml": 'description: a judge that asks for the pack\npaths: ["rules/**"]\n'
                                "checks:\n  - id: judge\n    judge: list.md.j2\n",
    "rules/ask-pack/list.md.j2": RULES["rules/ask/list.md.j2"],
}


def test_the_rule_pack_is_not_sent_to_judges_unless_a_rule_asks(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"src/app.py": "x = 1\n"})
    init = sj("init", cwd=repo)
    assert "commit the pack" in init.stdout, init.stdout
    write_files(repo, {**RULES, **ASK_PACK, "src/app.py": "x = 2\n"})
    (repo / "rules" / "see-all" / "see.py").chmod(0o755)
    prompts = tmp_path / "prompts"
    _, report = run_json("--dry-run", "--prompts-dir", str(prompts), "--rule", "ask",
                         "--rule", "ask-pack", "--rule", "see-all", cwd=repo)
    assert "rules/see-all/see.py" in _seen(report)  # scripts see the whole change
    def listed(name: str) -> list[str]:
        return [ln for ln in (prompts / name).read_text().splitlines() if ln.startswith("FILE ")]

    assert listed("ask__judge.md") == ["FILE src/app.py"]
    pack = listed("ask-pack__judge.md")
    assert "FILE rules/ask-pack/rule.yaml" in pack and "FILE src/app.py" not in pack


def test_a_folder_name_with_a_line_break_reads_no_other_folders_attributes(
        tmp_path: Path) -> None:
    # Asked in one batch a line each, "a\nHEAD:evil/.gitattributes" was two asks, and
    # src/ got evil/'s answer: its files were left out as generated.
    odd = "a\nHEAD:evil"
    repo = make_repo(tmp_path / "repo", {
        **RULES, "src/app.py": "x = 1\n", "src/.gitattributes": "*.txt -diff\n",
        "evil/.gitattributes": "** linguist-generated\n",
        f"{odd}/.gitattributes": "*.txt -diff\n", f"{odd}/f.py": "y = 1\n",
    })
    (repo / "rules" / "see-all" / "see.py").chmod(0o755)
    commit_all(repo)
    write_files(repo, {"src/app.py": "x = 2\n", f"{odd}/f.py": "y = 2\n"})
    _, report = run_json("--dry-run", "--rule", "see-all", cwd=repo)
    assert _seen(report) == [f"{odd}/f.py", "src/app.py"], report
    assert report["left_out"]["entries"] == []


def test_a_pull_request_cannot_give_src_another_folders_attributes(tmp_path: Path) -> None:
    # The base is an ordinary project. The branch commits two generated-marking attribute
    # files, then removes them and adds folders whose names, asked of git a line each or
    # read as revision syntax ("..HEAD~1:x\n"), would answer src/'s ask with one of them.
    repo = make_repo(tmp_path / "repo", {
        **RULES, "src/app.py": "x = 1\n", "src/.gitattributes": "*.txt -diff\n"})
    (repo / "rules" / "see-all" / "see.py").chmod(0o755)
    base = commit_all(repo)
    git(repo, "checkout", "-q", "-b", "pr")
    write_files(repo, {"x\n/.gitattributes": "** linguist-generated\n",
                       "y\n/.gitattributes": "** linguist-generated\n"})
    commit_all(repo, "one")
    git(repo, "rm", "-q", "-r", "x\n", "y\n")
    odd = ["..HEAD~1:x\n", "..HEAD~1:y\n"]
    write_files(repo, {"src/app.py": "x = 2\n", **{f"{o}/.gitattributes": "\n" for o in odd},
                       **{f"{o}/f.py": "y = 2\n" for o in odd}})
    commit_all(repo, "two")
    _, report = run_json("--dry-run", "--rule", "see-all", "--base", base, cwd=repo)
    assert "src/app.py" in _seen(report), report["left_out"]
    assert report["left_out"]["entries"] == []
