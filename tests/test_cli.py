"""`slopjudge run` and `slopjudge payload` end to end, on real git repos in temp folders."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jsonschema
import pytest

from tests.helpers import (
    REPO_ROOT,
    by_id,
    commit_all,
    executable,
    fake_runner,
    git,
    make_repo,
    py,
    read_jsonl,
    run_json,
    script_rule,
    sh,
    sj,
    write_files,
    write_rule,
)

# A script that refuses and names, as its reason, the files it was given.
LIST_FILES = py("""
import json, sys
data = json.load(sys.stdin)
print(" ".join(sorted(f["path"] for f in data["changeset"]["files"])) or "(none)")
sys.exit(1)
""")

TEMPLATE = """Review this change for slop.
{% for f in changeset.files %}
<file path="{{ f.path }}">
{{ f.newContent or "" }}
</file>
{% endfor %}
"""


def lister_repo(
    tmp_path: Path, files: dict[str, str] | None = None, *, ignore_state: bool = True
) -> Path:
    """A repo whose one rule prints the files its check sees."""
    repo = make_repo(
        tmp_path / "repo",
        files or {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"},
        ignore_state=ignore_state,
    )
    write_rule(repo / "rules", "lister", """
description: names the files it sees
checks:
  - id: list
    script: ./list.py
""", {"list.py": LIST_FILES})
    commit_all(repo, "rules")
    return repo


def seen_files(report: dict) -> list[str]:
    reason = by_id(report)["lister/list"]["reason"]
    return [] if reason == "(none)" else reason.split()


# ---- exit codes ------------------------------------------------------------------

def test_exit_zero_on_pass_and_one_on_refuse(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    script_rule(repo / "rules", "ok", "cat >/dev/null; exit 0")
    commit_all(repo, "rules")
    write_files(repo, {"README.md": "changed\n"})
    res = sj("run", cwd=repo, process=True)  # the real process's exit codes
    assert res.returncode == 0, res.stdout + res.stderr
    script_rule(repo / "rules", "nope", "echo 'this change is slop'; exit 1")
    res = sj("run", cwd=repo, process=True)
    assert res.returncode == 1
    assert "this change is slop" in res.stdout


@pytest.mark.parametrize("args, words", [
    (["--shard", "0/2"], "--shard"),
    (["--shard", "3/2"], "--shard"),
    (["--shard", "x"], "--shard"),
    (["--rule", "no-such-rule"], "no-such-rule"),
    (["--base", "no-such-revision"], "no-such-revision"),
    (["--head", "HEAD"], "--head"),
    (["--jobs", "-1"], "--jobs"),
    (["--prompts-dir", "p"], "--dry-run"),
])
def test_usage_errors_exit_two_with_one_line(tmp_path: Path, args: list[str], words: str) -> None:
    repo = make_repo(tmp_path / "repo")
    script_rule(repo / "rules", "ok", "exit 0")
    commit_all(repo, "rules")
    res = sj("run", *args, cwd=repo)
    assert res.returncode == 2, res.stdout + res.stderr
    assert words in res.stderr
    assert "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_load_error_in_rules_folder_exits_two_and_others_still_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    script_rule(repo / "rules", "fine", "exit 0")
    (repo / "rules" / "broken.yaml").write_text("description: broken\nchecks: []\nbogus: 1\n")
    commit_all(repo, "rules")
    write_files(repo, {"README.md": "changed\n"})
    code, report = run_json(cwd=repo)
    assert code == 2
    assert report["outcome"] == "error"
    assert report["load_errors"] and all(
        e.startswith("rules/broken.yaml:") for e in report["load_errors"]
    )
    assert by_id(report)["fine/check"]["outcome"] == "pass"
    # Naming only the healthy rule leaves the broken file out of the verdict.
    code, report = run_json("--rule", "fine", cwd=repo)
    assert code == 0 and report["load_errors"] == []
    # Naming the broken rule is an error, not "no such rule".
    res = sj("run", "--rule", "broken", cwd=repo)
    assert res.returncode == 2


def test_no_rules_folder_is_a_usage_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    res = sj("run", cwd=repo)
    assert res.returncode == 2 and "rules" in res.stderr


# ---- report formats and --output ----------------------------------------------------

def test_json_report_validates_against_schema(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"src/a.py": "a\n", "README.md": "r\n"})
    script_rule(repo / "rules", "pass-rule", "exit 0")
    script_rule(
        repo / "rules",
        "refuse-rule",
        """
echo '{"reason": "bad", "findings": [{"path": "src/a.py", "line": 1, "message": "m"}, {"message": "no place"}]}'
exit 1""",  # noqa: E501 (one JSON line, as a script prints it)
    )
    script_rule(repo / "rules", "py-only", "exit 1", paths=["**/*.rs"])
    write_rule(repo / "rules", "chain", """
description: a skipped check
checks:
  - id: first
    script: ./no.sh
  - id: second
    script: ./no.sh
    needs: [first]
""", {"no.sh": sh("exit 1")})
    commit_all(repo, "rules")
    write_files(repo, {"src/a.py": "bb\n"})
    code, report = run_json(cwd=repo)
    assert code == 1
    schema = json.loads((REPO_ROOT / "schemas" / "report.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(report)
    outcomes = {c["id"]: c["outcome"] for c in report["checks"]}
    assert outcomes == {
        "chain/first": "refuse", "chain/second": "skipped", "pass-rule/check": "pass",
        "py-only/check": "not_applicable", "refuse-rule/check": "refuse",
    }


def test_output_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    script_rule(repo / "rules", "nope", "echo refused; exit 1")
    commit_all(repo, "rules")
    write_files(repo, {"README.md": "changed\n"})
    out = tmp_path / "report.json"
    res = sj("run", "--format", "json", "--output", str(out), cwd=repo)
    assert res.returncode == 1
    assert res.stdout == ""
    assert json.loads(out.read_text())["outcome"] == "refuse"


# ---- changeset sources ----------------------------------------------------------------

def test_working_tree_is_the_default_and_includes_untracked(tmp_path: Path) -> None:
    repo = lister_repo(tmp_path)
    write_files(repo, {"a.txt": "AA\n", "new.txt": "new\n"})
    git(repo, "add", "a.txt")
    write_files(repo, {"b.txt": "BB\n"})  # unstaged
    for args in ([], ["--working-tree"]):
        _, report = run_json(*args, cwd=repo)
        assert seen_files(report) == ["a.txt", "b.txt", "new.txt"]


def test_working_tree_sees_a_same_size_edit_made_right_after_commit(tmp_path: Path) -> None:
    """git trusts an index entry whose size and mtime match, unless the entry is "racily
    clean" (written in the same second as the index). A snapshot that loses the index's
    own mtime loses that guard, and an edit made right after a commit goes unjudged."""
    repo = lister_repo(tmp_path)
    write_files(repo, {"a.txt": "A\n"})  # same size as "a\n", within the commit's second
    time.sleep(1.1)  # the run happens in a later second
    for _ in range(2):
        _, report = run_json(cwd=repo)
        assert seen_files(report) == ["a.txt"]


def test_slopjudge_state_is_never_part_of_the_change(tmp_path: Path) -> None:
    """The event log, rules cache and verdict cache are slopjudge's, not the change's,
    even in a repository that does not list .slopjudge/ in its .gitignore."""
    repo = lister_repo(tmp_path, {"a.txt": "a\n"}, ignore_state=False)
    write_files(repo, {"a.txt": "changed\n"})
    for _ in range(2):  # the second run finds the first one's state on disk
        _, report = run_json(cwd=repo)
        assert seen_files(report) == ["a.txt"]


def test_staged_sees_only_the_index(tmp_path: Path) -> None:
    repo = lister_repo(tmp_path)
    write_files(repo, {"a.txt": "AA\n", "b.txt": "BB\n"})
    git(repo, "add", "a.txt")
    _, report = run_json("--staged", cwd=repo)
    assert seen_files(report) == ["a.txt"]


def test_base_head_range(tmp_path: Path) -> None:
    repo = lister_repo(tmp_path)
    first = git(repo, "rev-parse", "HEAD")
    write_files(repo, {"a.txt": "AA\n"})
    second = commit_all(repo, "second")
    write_files(repo, {"b.txt": "BB\n"})
    commit_all(repo, "third")
    write_files(repo, {"c.txt": "CC\n"})  # work tree: never part of a range
    _, report = run_json("--base", first, "--head", second, cwd=repo)
    assert seen_files(report) == ["a.txt"]
    _, report = run_json("--base", first, cwd=repo)
    assert seen_files(report) == ["a.txt", "b.txt"]


def test_diff_file(tmp_path: Path) -> None:
    repo = lister_repo(tmp_path)
    diff = tmp_path / "change.diff"
    diff.write_text(
        "diff --git a/z.py b/z.py\nnew file mode 100644\n--- /dev/null\n+++ b/z.py\n"
        "@@ -0,0 +1 @@\n+print('z')\n"
    )
    _, report = run_json("--diff", str(diff), cwd=repo)
    assert seen_files(report) == ["z.py"]
    res = sj("run", "--diff", str(tmp_path / "missing.diff"), cwd=repo)
    assert res.returncode == 2 and "Traceback" not in res.stderr


# ---- rule selection --------------------------------------------------------------------

def test_rule_flag_pulls_in_what_it_needs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    script_rule(repo / "rules", "base-rule", "exit 0")
    script_rule(repo / "rules", "unrelated", "exit 1")
    write_rule(repo / "rules", "top", """
description: needs another rule
checks:
  - id: after
    script: ./ok.sh
    needs: [base-rule/check]
""", {"ok.sh": sh("exit 0")})
    commit_all(repo, "rules")
    write_files(repo, {"README.md": "changed\n"})
    code, report = run_json("--rule", "top", cwd=repo)
    assert code == 0
    assert [c["id"] for c in report["checks"]] == ["base-rule/check", "top/after"]
    assert all(c["outcome"] == "pass" for c in report["checks"])


# ---- shadow mode ----------------------------------------------------------------------------

def test_shadow_refusal_does_not_block_but_is_recorded(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    script_rule(repo / "rules", "trial", "echo 'would not let this in'; exit 1", mode="shadow")
    commit_all(repo, "rules")
    write_files(repo, {"README.md": "changed\n"})
    res = sj("run", cwd=repo)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "trial/check" in res.stdout
    assert "would" in res.stdout.lower() and "would not let this in" in res.stdout
    events = read_jsonl(repo / ".slopjudge" / "events.jsonl")
    assert [(e["id"], e["outcome"]) for e in events] == [("trial/check", "would_refuse")]
    code, report = run_json(cwd=repo)
    assert code == 0 and report["outcome"] == "pass"
    assert report["checks"][0]["outcome"] == "would_refuse"


# ---- sharding ---------------------------------------------------------------------------------

def test_shards_partition_the_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    ran = tmp_path / "ran.txt"
    expected: list[str] = []
    for n in range(7):
        lines = [f"description: rule {n}", "checks:"]
        files = {}
        ids = [f"c{k}" for k in range(n % 3 + 1)]
        if n == 5:
            ids.append("linked")
        for cid in ids:
            files[f"{cid}.sh"] = sh(f'cat >/dev/null\necho "$SLOPJUDGE_RULE/{cid}" >> "{ran}"')
            lines += [f"  - id: {cid}", f"    script: ./{cid}.sh"]
            if cid == "linked":  # linked across files: must land in one shard
                lines.append("    needs: [rule-1/c1]")
            expected.append(f"rule-{n}/{cid}")
        write_rule(repo / "rules", f"rule-{n}", "\n".join(lines), files)
    commit_all(repo, "rules")
    write_files(repo, {"README.md": "changed\n"})

    code, full = run_json(cwd=repo)
    assert code == 0
    everything = sorted(c["id"] for c in full["checks"])
    assert everything == sorted(expected)
    for count in range(1, 5):
        ran.write_text("")
        reported: list[str] = []
        sizes = []
        for index in range(1, count + 1):
            code, part = run_json("--shard", f"{index}/{count}", cwd=repo)
            assert code == 0
            ids = [c["id"] for c in part["checks"]]
            assert all(c["outcome"] == "pass" for c in part["checks"]), part
            reported += ids
            sizes.append(len(ids))
            if "rule-5/linked" in ids or "rule-1/c1" in ids:
                assert {"rule-5/linked", "rule-1/c1"} <= set(ids), (
                    f"shard {index}/{count} split a needs link"
                )
        executed = ran.read_text().split()
        assert sorted(reported) == everything, f"{count} shards"
        assert sorted(executed) == everything, f"{count} shards: some check ran twice or never"
        assert min(sizes) > 0, f"{count} shards: an empty shard ({sizes})"


# ---- dry run ---------------------------------------------------------------------------------

def judge_rule(
    repo: Path, rule_id: str = "judged", each: str = "changeset", paths: str = ""
) -> None:
    write_rule(repo / "rules", rule_id, f"""
description: asks a judge
{paths}
checks:
  - id: ask
    judge: ./ask.md.j2
    each: {each}
""", {"ask.md.j2": TEMPLATE})


def test_dry_run_writes_prompts_and_calls_no_runner(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"src/app.py": "x = 1\n"})
    ran = tmp_path / "script-ran"
    script_rule(repo / "rules", "scripted", f'cat >/dev/null; touch "{ran}"')
    judge_rule(repo)
    commit_all(repo, "rules")
    write_files(repo, {"src/app.py": "x = 'MARKER-IN-CODE'\n"})
    marker = tmp_path / "runner-called"
    runner = executable(
        tmp_path / "runner.sh", sh(f'touch "{marker}"\necho \'{{"pass": true, "reasoning": "x"}}\'')
    )
    prompts = tmp_path / "prompts"
    code, report = run_json("--dry-run", "--prompts-dir", str(prompts), "--runner", str(runner),
                            cwd=repo)
    assert code == 0, report
    got = by_id(report)
    assert got["scripted/check"]["outcome"] == "pass"
    assert got["judged/ask"]["outcome"] == "not_judged"
    assert "dry run" in got["judged/ask"]["reason"]
    assert ran.exists(), "a dry run still runs scripts"
    assert not marker.exists(), "a dry run called the runner"
    written = list(prompts.iterdir())
    assert len(written) == 1
    text = written[0].read_text()
    assert "MARKER-IN-CODE" in text and "src/app.py" in text


# ---- verdict cache ---------------------------------------------------------------------------

def test_verdict_cache_across_runs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "a = 1\n"})
    judge_rule(repo)
    commit_all(repo, "rules")
    write_files(repo, {"a.py": "a = 22\n"})
    calls = tmp_path / "calls"
    runner = str(fake_runner(tmp_path / "runner.sh", calls=calls))

    def ncalls() -> int:
        return len(calls.read_text().splitlines()) if calls.exists() else 0

    code, report = run_json("--runner", runner, cwd=repo)
    assert code == 0, report
    assert ncalls() == 1
    code, _ = run_json("--runner", runner, cwd=repo)
    assert code == 0 and ncalls() == 1, "the same prompt was judged twice"
    events = read_jsonl(repo / ".slopjudge" / "events.jsonl")
    assert [e["cache_hit"] for e in events] == [False, True]
    code, _ = run_json("--runner", runner, "--no-cache", cwd=repo)
    assert code == 0 and ncalls() == 2
    write_files(repo, {"a.py": "a = 333\n"})
    code, _ = run_json("--runner", runner, cwd=repo)
    assert ncalls() == 3


def test_each_file_judge_caches_per_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {f"f{n}.py": f"v = {n}\n" for n in range(10)})
    judge_rule(repo, each="file")
    commit_all(repo, "rules")
    write_files(repo, {f"f{n}.py": f"v = {n} + 1\n" for n in range(10)})
    calls = tmp_path / "calls"
    runner = str(fake_runner(tmp_path / "runner.sh", calls=calls))
    code, report = run_json("--runner", runner, cwd=repo)
    assert code == 0, report
    assert len(calls.read_text().splitlines()) == 10
    write_files(repo, {"f4.py": "v = 'changed again'\n"})
    code, _ = run_json("--runner", runner, cwd=repo)
    assert code == 0
    assert len(calls.read_text().splitlines()) == 11


def test_runner_errors_are_not_cached(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "a = 1\n"})
    judge_rule(repo)
    commit_all(repo, "rules")
    write_files(repo, {"a.py": "a = 22\n"})
    calls = tmp_path / "calls"
    broken = tmp_path / "broken"
    broken.touch()
    runner = executable(tmp_path / "runner.sh", sh(f"""
cat >/dev/null
echo call >> "{calls}"
if [ -e "{broken}" ]; then echo 'runner broke' >&2; exit 2; fi
echo '{{"pass": true, "reasoning": "ok"}}'
"""))
    for expected_calls in (1, 2):
        code, report = run_json("--runner", str(runner), cwd=repo)
        assert code == 2, report  # no verdict: fail closed, as an error
        assert report["checks"][0]["outcome"] == "error"
        assert len(calls.read_text().splitlines()) == expected_calls
    broken.unlink()
    code, _ = run_json("--runner", str(runner), cwd=repo)
    assert code == 0 and len(calls.read_text().splitlines()) == 3


def test_refusing_verdict_is_cached_too(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "a = 1\n"})
    judge_rule(repo)
    commit_all(repo, "rules")
    write_files(repo, {"a.py": "a = 22\n"})
    calls = tmp_path / "calls"
    runner = str(fake_runner(tmp_path / "runner.sh", passed=False, calls=calls, reasoning="sloppy"))
    for _ in range(2):
        code, report = run_json("--runner", runner, cwd=repo)
        assert code == 1 and report["checks"][0]["reason"] == "sloppy"
    assert len(calls.read_text().splitlines()) == 1


# ---- payload --------------------------------------------------------------------------------

def test_payload_rule_filters_files(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"src/a.py": "a\n", "docs/b.md": "b\n"})
    script_rule(repo / "rules", "py-rule", "exit 0", paths=["src/**"])
    commit_all(repo, "rules")
    write_files(repo, {"src/a.py": "AA\n", "docs/b.md": "BB\n"})
    res = sj("payload", "--rule", "py-rule", cwd=repo)
    assert res.returncode == 0, res.stderr
    payload = json.loads(res.stdout)
    assert [f["path"] for f in payload["changeset"]["files"]] == ["src/a.py"]
    assert payload["changeset"]["others"] == [{"path": "docs/b.md", "status": "M"}]
    assert "docs/b.md" not in payload["change"] and "src/a.py" in payload["change"]
    assert payload["rule"]["id"] == "py-rule" and payload["check"] == {"id": "check"}
    res = sj("payload", cwd=repo)
    assert sorted(f["path"] for f in json.loads(res.stdout)["changeset"]["files"]) == [
        "docs/b.md", "src/a.py"]
    res = sj("payload", "--rule", "nope", cwd=repo)
    assert res.returncode == 2 and "nope" in res.stderr
