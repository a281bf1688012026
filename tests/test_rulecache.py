"""The validated-rules cache: hits only when nothing the result depends on changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from slopjudge.loading import loader, rulecache
from slopjudge.loading.config import load_settings
from slopjudge.loading.rulecache import cache_path, load_rules_cached
from slopjudge.model import LoadResult

HEAVY = ("ruamel", "jsonschema", "jinja2")


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SLOPJUDGE_EVENTS_FILE", raising=False)
    monkeypatch.delenv("SLOPJUDGE_RUNNER", raising=False)
    rules = tmp_path / "rules"
    rules.mkdir()
    script = rules / "ok.sh"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(0o755)
    (rules / "a.yaml").write_text("description: a\nchecks:\n  - script: ./ok.sh\n")
    (rules / "b.yaml").write_text("description: b\nchecks:\n  - script: ./ok.sh\n")
    age(tmp_path)
    return tmp_path


def age(root: Path, seconds: float = 30.0) -> None:
    """Back-date every file, as files untouched for a while are (outside the racy window)."""
    past = time.time_ns() - int(seconds * 1e9)
    for dirpath, _, names in os.walk(root):
        for name in names:
            os.utime(os.path.join(dirpath, name), ns=(past, past))


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count real loads: a cache hit never reaches loader.load_rules."""
    calls: list[str] = []
    real = loader.load_rules

    def counting(rules_dir: str, **kw: object) -> LoadResult:
        calls.append(rules_dir)
        return real(rules_dir, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(loader, "load_rules", counting)
    return calls


def load(ws: Path) -> LoadResult:
    return load_rules_cached(load_settings(str(ws)))


def test_hit_returns_the_same_result_without_loading(ws: Path, loads: list[str]) -> None:
    first = load(ws)
    assert len(loads) == 1 and os.path.isfile(cache_path(load_settings(str(ws))))
    second = load(ws)
    assert len(loads) == 1
    assert (
        second.rules == first.rules
        and second.errors == first.errors
        and second.files == first.files
    )
    assert [r.id for r in second.rules] == ["a", "b"]


def test_edit_misses(ws: Path, loads: list[str]) -> None:
    load(ws)
    (ws / "rules" / "a.yaml").write_text("description: a edited\nchecks:\n  - script: ./ok.sh\n")
    age(ws)
    assert load(ws).rules[0].description == "a edited"
    assert len(loads) == 2


def test_touch_misses(ws: Path, loads: list[str]) -> None:
    load(ws)
    os.utime(ws / "rules" / "a.yaml", ns=(time.time_ns() - 10**10, time.time_ns() - 10**10))
    load(ws)
    assert len(loads) == 2


def test_new_file_misses(ws: Path, loads: list[str]) -> None:
    load(ws)
    (ws / "rules" / "c").mkdir()
    (ws / "rules" / "c" / "rule.yaml").write_text("description: c\nchecks:\n  - script: ../ok.sh\n")
    age(ws)
    assert [r.id for r in load(ws).rules] == ["a", "b", "c"]
    assert len(loads) == 2


def test_deleted_file_misses(ws: Path, loads: list[str]) -> None:
    load(ws)
    (ws / "rules" / "b.yaml").unlink()
    assert [r.id for r in load(ws).rules] == ["a"]
    assert len(loads) == 2


def test_chmod_fixing_a_script_misses(ws: Path, loads: list[str]) -> None:
    (ws / "rules" / "ok.sh").chmod(0o644)
    age(ws)
    assert "not executable" in str(load(ws).errors[0])
    (ws / "rules" / "ok.sh").chmod(0o755)  # mtime unchanged; the mode is in the key
    assert load(ws).errors == []
    assert len(loads) == 2


def test_template_settings_and_rubric_changes_miss(ws: Path, loads: list[str]) -> None:
    (ws / "templates").mkdir()
    (ws / "templates" / "t.md.j2").write_text("{{ change }}")
    (ws / "RUBRIC.md").write_text("be good\n")
    age(ws)
    load(ws)
    for path, text in (
        (ws / "templates" / "t.md.j2", "{{ change }} edited"),
        (ws / "RUBRIC.md", "be better\n"),
        (ws / "slopjudge.yaml", "jobs: 2\n"),
    ):
        before = len(loads)
        path.write_text(text)
        age(ws)
        load(ws)
        assert len(loads) == before + 1, path
        load(ws)
        assert len(loads) == before + 1, f"{path}: the repeat should hit"


def test_a_script_outside_the_rules_folder_is_watched(ws: Path, loads: list[str]) -> None:
    (ws / "tools").mkdir()
    (ws / "rules" / "a.yaml").write_text("description: a\nchecks:\n  - script: ../tools/check.sh\n")
    age(ws)
    assert "not found" in str(load(ws).errors[0])
    script = ws / "tools" / "check.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    age(ws)
    assert load(ws).errors == []
    assert len(loads) == 2


def test_freshly_written_files_are_not_cached(ws: Path, loads: list[str]) -> None:
    # Written just now: a same-size rewrite could keep the same coarse mtime.
    (ws / "rules" / "a.yaml").write_text("description: A\nchecks:\n  - script: ./ok.sh\n")
    load(ws)
    assert not os.path.exists(cache_path(load_settings(str(ws))))
    load(ws)
    assert len(loads) == 2


def test_error_paths_follow_the_current_directory_on_a_hit(
    ws: Path, loads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / "rules" / "a.yaml").write_text("description: a\nchecks: []\n")
    age(ws)
    assert [str(e) for e in load(ws).errors] == ["rules/a.yaml:2:9: `checks` must not be empty"]
    monkeypatch.chdir(ws / "rules")
    assert [str(e) for e in load(ws).errors] == ["a.yaml:2:9: `checks` must not be empty"]
    assert len(loads) == 1


def test_corrupt_or_foreign_cache_is_a_miss_not_a_crash(ws: Path, loads: list[str]) -> None:
    load(ws)
    path = cache_path(load_settings(str(ws)))
    for junk in ("{not json", "[]", json.dumps({"key": None}), ""):
        Path(path).write_text(junk)
        assert [r.id for r in load(ws).rules] == ["a", "b"]
    assert len(loads) == 5
    body = Path(path).read_text().split("\n", 1)[1]  # after the signature line
    assert json.loads(body)["rules"][0][0] == "a"


def test_a_state_folder_that_cannot_be_written_still_loads(
    ws: Path, loads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (ws / ".slopjudge").write_text("a file where the folder should be")
    age(ws)
    assert [r.id for r in load(ws).rules] == ["a", "b"]
    assert [r.id for r in load(ws).rules] == ["a", "b"]
    assert len(loads) == 2
    assert not [p for p in os.listdir(ws) if p.endswith(".tmp")]


def test_a_different_slopjudge_version_misses(
    ws: Path, loads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    load(ws)
    monkeypatch.setattr(rulecache, "__version__", "999.0")
    load(ws)
    assert len(loads) == 2


def test_a_hit_imports_no_heavy_module(ws: Path) -> None:
    code = (
        "import sys\n"
        "from slopjudge.loading.config import load_settings\n"
        "from slopjudge.loading.rulecache import load_rules_cached\n"
        f"r = load_rules_cached(load_settings({str(ws)!r}))\n"
        "print(sorted(x.id for x in r.rules))\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    warm = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert warm.returncode == 0, warm.stderr
    assert "ruamel" in warm.stdout  # the miss did load the heavy modules: the probe can fail
    hit = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert hit.returncode == 0, hit.stderr
    assert hit.stdout.splitlines() == ["['a', 'b']", "[]"]


def test_the_code_that_decides_a_load_is_watched_where_it_lives() -> None:
    # A key naming a file that is not there would never change: an edit of the
    # loader in a checkout would then be served from a stale cache.
    from slopjudge.resources import PACKAGE_DIR

    for name in rulecache._CODE:
        assert os.path.isfile(os.path.join(PACKAGE_DIR, name)), name
    # Every module a load imports (the default pack's templates validated on sample
    # payloads too): an edit of any of them may change what a rule file loads as.
    root = Path(__file__).resolve().parent.parent
    code = ("import sys\n"
            "from slopjudge.loading.loader import load_rules\n"
            f"r = load_rules({str(root / 'rules')!r}, workspace={str(root)!r},\n"
            f"               template_dirs=[{str(root / 'templates')!r}])\n"
            "assert r.rules and not r.errors, r.errors\n"
            "print(' '.join(m for m in sys.modules if m.startswith('slopjudge')))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    imported = {m.removeprefix("slopjudge.").replace(".", "/") for m in proc.stdout.split()}
    files = {f"{m}.py" for m in imported if os.path.isfile(Path(PACKAGE_DIR, f"{m}.py"))}
    assert "loading/templates.py" in files  # the probe saw a load
    assert files - set(rulecache._CODE) == set()


def test_another_path_reloads_only_rules_that_name_a_command_on_it(
    ws: Path, loads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    load(ws)
    monkeypatch.setenv("PATH", f"{ws / 'elsewhere'}{os.pathsep}{os.environ.get('PATH', '')}")
    load(ws)
    assert len(loads) == 1  # no rule runs a command from PATH: the same rules
    (ws / "rules" / "b.yaml").write_text("description: b\nchecks:\n  - script: env\n")
    age(ws)
    load(ws)
    load(ws)
    assert len(loads) == 2
    bin_dir = ws / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    load(ws)
    assert len(loads) == 3  # `env` may be another program now


@pytest.mark.parametrize(
    "line", ["subjects: {cmd}", "require:\n  - skill: review\n    when: {cmd}"])
def test_another_path_reloads_a_rule_whose_subjects_or_when_is_on_it(
    ws: Path, loads: list[str], monkeypatch: pytest.MonkeyPatch, line: str
) -> None:
    bin_dir = ws / "bin"
    bin_dir.mkdir()
    (bin_dir / "group-it").write_text("#!/bin/sh\necho []\n")
    (bin_dir / "group-it").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (ws / "rules" / "b.yaml").write_text(
        "description: b\n" + line.format(cmd="group-it") + "\nchecks:\n  - script: ./ok.sh\n")
    age(ws)
    assert "b" in [r.id for r in load(ws).rules]
    monkeypatch.setenv("PATH", os.environ["PATH"].split(os.pathsep, 1)[1])
    result = load(ws)
    assert "b" not in [r.id for r in result.rules]
    assert any("group-it" in e.message for e in result.errors), result.errors


def test_a_link_to_an_ancestor_folder_is_walked_once(ws: Path, loads: list[str]) -> None:
    # Followed without end, two such links made every hook's load walk forever.
    (ws / "rules" / "a").symlink_to(".")
    (ws / "rules" / "b").symlink_to("../rules")
    age(ws)
    first = load(ws)
    assert sorted(r.id for r in first.rules) == ["a", "b"]
    load(ws)
    assert len(loads) == 1  # the walk ends, and the same walk is a hit
