"""The engine: which rules apply, rule selection, shards, shadow mode, not_applicable, records."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from slopjudge.checks import engine, selection
from slopjudge.checks.options import RunOptions, options_from_settings
from slopjudge.model import Changeset, Check, Event, FileChange, Rule
from slopjudge.records.record import load_prompt, recording
from tests.helpers import executable, read_jsonl, sh


def rule(rid: str, tmp: Path | None = None, *, body: str = "exit 0", n: int = 1,
         needs: dict[int, list[str]] | None = None, **fields: object) -> Rule:
    folder = (tmp or Path("/nonexistent")) / rid
    checks = []
    for k in range(n):
        script = None
        if tmp is not None:
            script = str(executable(folder / f"c{k}.sh", sh("cat >/dev/null\n" + body)))
        checks.append(Check(id=f"c{k}", rule=rid, kind="script", script=script,
                            needs=(needs or {}).get(k, [])))
    return Rule(id=rid, path=str(folder / "rule.yaml"), dir=str(folder),
                description=f"{rid} rule", checks=checks, **fields)  # type: ignore[arg-type]


def change(*paths: str) -> Changeset:
    return Changeset(files=[FileChange(path=p, status="M", old_content="a\n", new_content="b\n",
                                       diff=f"--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-a\n+b\n")
                            for p in paths])


# ---- applicable_rules --------------------------------------------------------------

def test_applicable_rules_by_event_and_tools(tmp_path: Path) -> None:
    rules = [
        rule("ci-only", on=["ci"]),
        rule("stop-ci"),  # default on: [stop, ci]
        rule("pre-any", on=["pre-tool"]),
        rule("pre-bash-push", on=["pre-tool"], tools=["Bash(git push *)"]),
        rule("pre-src-write", on=["pre-tool"], tools=["Write(src/**)"]),
    ]
    ids = lambda ev, ws=None: [r.id for r in selection.applicable_rules(rules, ev, ws)]  # noqa: E731
    assert ids(Event(kind="ci")) == ["ci-only", "stop-ci"]
    assert ids(Event(kind="stop")) == ["stop-ci"]
    assert ids(Event(kind="pre-tool", tool_name="Bash",
                     tool_input={"command": "cd x && git push origin main"})) == [
        "pre-any", "pre-bash-push"]
    assert ids(Event(kind="pre-tool", tool_name="Bash", tool_input={"command": "ls"})) == [
        "pre-any"
    ]
    ws = str(tmp_path)
    write = Event(kind="pre-tool", tool_name="Write",
                  tool_input={"file_path": f"{ws}/src/a.py", "content": "x"})
    # The workspace anchors the path pattern, wherever the process runs.
    assert ids(write, ws) == ["pre-any", "pre-src-write"]
    write.cwd = ws
    assert ids(write) == ["pre-any", "pre-src-write"]
    write.tool_input = {"file_path": f"{ws}/docs/a.md", "content": "x"}
    assert ids(write, ws) == ["pre-any"]


# ---- select_rules ------------------------------------------------------------------

def test_select_rules_pulls_in_needs_transitively_and_keeps_order() -> None:
    rules = [
        rule("a"),
        rule("b", needs={0: ["a/c0"]}),
        rule("c", needs={0: ["b/c0"]}),
        rule("d"),
    ]
    chosen, unknown = selection.select_rules(rules, ["c", "nope"])
    assert [r.id for r in chosen] == ["a", "b", "c"]
    assert unknown == ["nope"]


# ---- shard_checks ------------------------------------------------------------------

@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
def test_shards_cover_every_check_once_and_keep_links(count: int) -> None:
    rules = [rule(f"r{n}", n=n % 4 + 1) for n in range(9)]
    rules[3].checks[0].needs = ["r7/c1"]
    rules[7].checks[3].needs = ["r7/c0"]
    everything = {c.full_id for r in rules for c in r.checks}
    shards = [selection.shard_checks(rules, i, count) for i in range(1, count + 1)]
    assert set().union(*shards) == everything
    assert sum(len(s) for s in shards) == len(everything)
    for linked in (("r3/c0", "r7/c1"), ("r7/c3", "r7/c0")):
        assert sum(set(linked) <= s for s in shards) == 1
    # Stable: the same split on every call (and every machine).
    assert shards == [selection.shard_checks(rules, i, count) for i in range(1, count + 1)]


# ---- run ---------------------------------------------------------------------------

def test_not_applicable_when_paths_leave_no_file(tmp_path: Path) -> None:
    rules = [rule("py", tmp_path, paths=["**/*.py"]), rule("all", tmp_path)]
    results = engine.run(rules, Event(kind="ci"), change("README.md"), workspace=str(tmp_path),
                         options=RunOptions(jobs=2))
    assert [(r.id, r.outcome) for r in results] == [("py/c0", "not_applicable"), ("all/c0", "pass")]


def test_pre_tool_bash_fires_without_files(tmp_path: Path) -> None:
    rules = [rule("guard", tmp_path, body="exit 1", on=["pre-tool"], paths=["src/**"])]
    ev = Event(kind="pre-tool", tool_name="Bash", tool_input={"command": "rm -rf /"})
    [res] = engine.run(rules, ev, Changeset(), workspace=str(tmp_path), options=RunOptions())
    assert res.outcome == "refuse"


def test_shadow_turns_refusals_and_errors_into_would_refuse(tmp_path: Path) -> None:
    rules = [rule("trial", tmp_path, body="echo no; exit 1", mode="shadow"),
             rule("real", tmp_path, body="echo no; exit 1")]
    results = engine.run(rules, Event(kind="ci"), change("a"), workspace=str(tmp_path),
                         options=RunOptions(jobs=2))
    assert [(r.id, r.outcome) for r in results] == [("trial/c0", "would_refuse"),
                                                    ("real/c0", "refuse")]


def test_shard_option_runs_only_its_part(tmp_path: Path) -> None:
    rules = [rule(f"r{n}", tmp_path) for n in range(4)]
    got = []
    for i in (1, 2):
        got += [r.id for r in engine.run(rules, Event(kind="ci"), change("a"),
                                         workspace=str(tmp_path),
                                         options=RunOptions(shard=(i, 2)))]
    assert sorted(got) == [f"r{n}/c0" for n in range(4)]


def test_events_recorded_one_line_per_outcome(tmp_path: Path) -> None:
    events = tmp_path / "state" / "events.jsonl"
    rules = [rule("ok", tmp_path), rule("no", tmp_path, body="echo bad; exit 1"),
             rule("py", tmp_path, paths=["**/*.py"])]
    seen = []
    ev = Event(kind="stop", session_id="s-1")
    engine.run(rules, ev, change("a.txt"), workspace=str(tmp_path), options=RunOptions(),
               on_result=recording(str(events), ev, lambda r: seen.append(r.id)))
    lines = read_jsonl(events)
    # not_applicable is not an outcome worth a line; the callback still hears of it.
    assert sorted((e["id"], e["outcome"], e["event"], e["session_id"]) for e in lines) == [
        ("no/c0", "refuse", "stop", "s-1"), ("ok/c0", "pass", "stop", "s-1")]
    assert sorted(seen) == ["no/c0", "ok/c0", "py/c0"]


def test_unwritable_event_log_does_not_change_the_outcome(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    rules = [rule("no", tmp_path, body="echo bad; exit 1")]
    [res] = engine.run(rules, Event(kind="ci"), change("a"), workspace=str(tmp_path),
                       options=RunOptions(),
                       on_result=recording(str(blocker / "events.jsonl"), Event(kind="ci")))
    assert res.outcome == "refuse"
    assert "could not record events" in capsys.readouterr().err


def test_judge_prompt_kept_by_digest_for_replay(tmp_path: Path) -> None:
    folder = tmp_path / "judged"
    folder.mkdir()
    (folder / "ask.md.j2").write_text("Is {{ changeset.files[0].path }} fine?\n")
    mock = executable(
        tmp_path / "mock.sh", sh("""cat >/dev/null; echo '{"pass": true, "reasoning": "fine"}'""")
    )
    judge = Check(id="ask", rule="judged", kind="judge", judge=str(folder / "ask.md.j2"),
                  timeout=30)
    r = Rule(id="judged", path=str(folder / "rule.yaml"), dir=str(folder),
             description="asks", checks=[judge])
    events = tmp_path / "state" / "events.jsonl"
    [res] = engine.run([r], Event(kind="ci"), change("x.py"), workspace=str(tmp_path),
                       options=RunOptions(judge_mocks={"judged/ask": str(mock)}),
                       on_result=recording(str(events), Event(kind="ci")))
    assert res.outcome == "pass", res.reason
    [line] = read_jsonl(events)
    digest = line["prompt_sha256"]
    assert digest == hashlib.sha256(res.prompt.encode()).hexdigest()
    kept = load_prompt(str(events), digest)
    assert kept == res.prompt and "Is x.py fine?" in kept
    assert load_prompt(str(events), "0" * 64) is None


def test_options_from_settings_reads_mocks_fail_closed(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    from slopjudge.loading.config import Settings

    settings = Settings(
        workspace=str(tmp_path), rules_dir=str(tmp_path / "rules"), template_dirs=[]
    )
    from slopjudge.errors import SlopjudgeError

    monkeypatch.setenv("SLOPJUDGE_JUDGE_MOCKS", "{not json")
    with pytest.raises(SlopjudgeError, match="SLOPJUDGE_JUDGE_MOCKS"):
        options_from_settings(settings)  # never a run that could reach a real model
    monkeypatch.setenv("SLOPJUDGE_JUDGE_MOCKS", "")
    assert options_from_settings(settings).judge_mocks == {}
    monkeypatch.setenv("SLOPJUDGE_JUDGE_MOCKS", json.dumps({"a/b": "/x"}))
    opts = options_from_settings(settings, jobs=3)
    assert opts.judge_mocks == {"a/b": "/x"} and opts.jobs == 3
    monkeypatch.delenv("SLOPJUDGE_JUDGE_MOCKS")
    assert options_from_settings(settings).judge_mocks is None


def test_a_shadow_rule_decided_before_its_checks_run_never_blocks(tmp_path: Path) -> None:
    """An unmet `require` is the rule's refusal: a shadow rule records it, never blocks."""
    from tests.helpers import commit_all, make_repo, sj, write_rule

    repo = make_repo(tmp_path / "ws", {"app.py": "x = 1\n"})
    for mode in ("shadow", "enforce"):
        write_rule(repo / "rules", f"skilled-{mode}", f"description: d\non: [ci]\nmode: {mode}\n"
                   "require:\n  - skill: testing\nchecks:\n  - id: c\n    script: ls\n")
    commit_all(repo)
    res = sj("run", "--base", "HEAD~1", "--format", "json", cwd=repo)
    outcomes = {c["id"]: c["outcome"] for c in json.loads(res.stdout)["checks"]}
    assert outcomes == {"skilled-shadow/c": "would_refuse", "skilled-enforce/c": "refuse"}
    assert res.returncode == 1  # the enforced one; the shadow one alone would pass
