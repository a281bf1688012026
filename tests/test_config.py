"""Settings from slopjudge.yaml or [tool.slopjudge], defaults, and environment overrides."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from slopjudge.loading import config
from slopjudge.loading.config import (
    ConfigError,
    Settings,
    display_path,
    find_workspace,
    load_settings,
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLOPJUDGE_EVENTS_FILE", raising=False)
    monkeypatch.delenv("SLOPJUDGE_RUNNER", raising=False)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_defaults_without_any_settings_file(tmp_path: Path) -> None:
    s = load_settings(str(tmp_path))
    assert s.workspace == str(tmp_path)
    assert s.rules_dir == str(tmp_path / "rules")
    assert s.state_dir == str(tmp_path / ".slopjudge")
    assert s.events_file == str(tmp_path / ".slopjudge" / "events.jsonl")
    assert s.cache_dir == str(tmp_path / ".slopjudge" / "cache")
    assert s.runner is None and s.stop_block_cap == 8 and s.jobs == 0
    assert s.config_files == []
    assert str(tmp_path / "templates") not in s.template_dirs  # absent folder: not listed
    assert s.rubric_path in (None, config.PACKAGED_RUBRIC)


def test_workspace_templates_and_rubric_are_found(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    write(tmp_path / "RUBRIC.md", "# rubric\n")
    s = load_settings(str(tmp_path))
    assert s.template_dirs[0] == str(tmp_path / "templates")
    assert s.rubric_path == str(tmp_path / "RUBRIC.md")


def test_slopjudge_yaml_sets_everything_relative_to_the_workspace(tmp_path: Path) -> None:
    write(tmp_path / "slopjudge.yaml", """\
        # slopjudge settings
        rules_dir: checks/rules   # our own folder
        template_dirs:
          - tpl
          - /abs/tpl
        runner: sr-agent --verbose
        stop_block_cap: 3
        jobs: 4
        state_dir: .state
        events_file: logs/events.jsonl
        cache_dir: "cache dir"
        rubric_path: docs/RUBRIC.md
        """)
    write(tmp_path / "pyproject.toml", "[tool.slopjudge]\nrules_dir = 'ignored'\n")
    s = load_settings(str(tmp_path))
    assert s.rules_dir == str(tmp_path / "checks" / "rules")
    assert s.template_dirs[:2] == [str(tmp_path / "tpl"), "/abs/tpl"]
    assert s.runner == "sr-agent --verbose"
    assert (s.stop_block_cap, s.jobs) == (3, 4)
    assert s.state_dir == str(tmp_path / ".state")
    assert s.events_file == str(tmp_path / "logs" / "events.jsonl")
    assert s.cache_dir == str(tmp_path / "cache dir")
    assert s.rubric_path == str(tmp_path / "docs" / "RUBRIC.md")
    assert s.config_files == [str(tmp_path / "slopjudge.yaml")]


def test_flow_lists_and_yaml_the_simple_reader_leaves_to_ruamel(tmp_path: Path) -> None:
    write(tmp_path / "slopjudge.yaml", 'template_dirs: [a, b]\nrunner: "x \\"quoted\\""\n')
    s = load_settings(str(tmp_path))
    assert s.template_dirs[:2] == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert s.runner == 'x "quoted"'


def test_keys_merged_in_by_an_anchor_are_read_and_an_unknown_one_named_at_its_mapping(
        tmp_path: Path) -> None:
    # A merged key has no place of its own in ruamel's record of the file (it stopped
    # every hook on an internal KeyError).
    write(tmp_path / "slopjudge.yaml", "<<: {jobs: 3}\nrunner: x\n")
    s = load_settings(str(tmp_path))
    assert (s.jobs, s.runner) == (3, "x")
    write(tmp_path / "slopjudge.yaml", "runner: x\n<<: {jobz: 3}\n")
    with pytest.raises(ConfigError) as info:
        load_settings(str(tmp_path))
    assert (info.value.line, info.value.col) == (1, 1)
    assert info.value.message.startswith("unknown setting `jobz`")


@pytest.mark.parametrize("value, ok", [("1", True), ("86400", True), ("0", False),
                                       ("86401", False), ("1000000000000", False),
                                       ("1.5", False), ("true", False)])
def test_hook_timeout_is_a_whole_number_of_seconds_up_to_a_day(
        tmp_path: Path, value: str, ok: bool) -> None:
    # One past what the interval timer takes stopped every hook on an internal OverflowError.
    write(tmp_path / "slopjudge.yaml", f"runner: x\nhook_timeout: {value}\n")
    if ok:
        assert load_settings(str(tmp_path)).hook_timeout == int(value)
        return
    with pytest.raises(ConfigError) as info:
        load_settings(str(tmp_path))
    assert (info.value.line, info.value.message) == (
        2, "`hook_timeout` must be a whole number of seconds from 1 to 86400")


# A hook reads the settings on every call: an unchanged file is read from the signed
# cache, without the YAML or TOML reader (nor `re`, which they import).
CACHED_READ = """
import sys
before = set(sys.modules)
from slopjudge.loading.config import load_settings
s = load_settings(sys.argv[1])
new = set(sys.modules) - before
assert s.jobs == 2 and s.template_dirs[0].endswith("/t"), s
print(sorted(m for m in new if m.split(".")[0] in ("ruamel", "re", "tomllib", "json")))
"""


@pytest.mark.parametrize("name,text", [
    ("slopjudge.yaml", "rules_dir: r\njobs: 2\ntemplate_dirs:\n  - t\n"),
    ("pyproject.toml", "[tool.slopjudge]\njobs = 2\ntemplate_dirs = ['t']\n"),
])
def test_an_unchanged_settings_file_is_read_from_the_cache(
    tmp_path: Path, name: str, text: str
) -> None:
    path = write(tmp_path / name, text)
    os.utime(path, ns=(10**18, 10**18))  # not written just now (the racy window)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))

    def load(*flags: str) -> str:
        proc = subprocess.run([sys.executable, *flags, "-c", CACHED_READ, str(tmp_path)],
                              env=env, capture_output=True, text=True, timeout=30)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert load() != "[]"
    # -S: without site, whose editable-install finder imports `re` itself.
    assert load("-S") == "[]"


def test_a_changed_or_forged_settings_cache_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # outside the workspace
    ws = tmp_path / "ws"
    path = write(ws / "slopjudge.yaml", "jobs: 2\n")
    os.utime(path, ns=(10**18, 10**18))
    assert load_settings(str(ws)).jobs == 2
    path.write_text("jobs: 3\n")
    os.utime(path, ns=(2 * 10**18, 2 * 10**18))
    assert load_settings(str(ws)).jobs == 3
    (cache,) = (tmp_path / "state" / "slopjudge" / "settings").iterdir()
    cache.write_bytes(cache.read_bytes().replace(b'"jobs":3', b'"jobs":4'))
    assert load_settings(str(ws)).jobs == 3


def test_a_settings_file_put_back_with_its_old_size_and_mtime_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cp -p`, `rsync -a`, `tar x`, `touch -r` keep a file's mtime: same size, same mtime,
    other values."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    path = write(ws / "slopjudge.yaml", "unknown_tools: allow\n")
    os.utime(path, ns=(10**18, 10**18))
    assert load_settings(str(ws)).unknown_tools == "allow"
    path.write_text("unknown_tools: deny \n")  # the same size
    os.utime(path, ns=(10**18, 10**18))
    assert load_settings(str(ws)).unknown_tools == "deny"


def test_a_signed_settings_cache_of_another_shape_is_a_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another version of slopjudge shares the state folder and may write its own shape."""
    from slopjudge.loading.rulecache import read_signed, write_signed

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    path = write(ws / "slopjudge.yaml", "jobs: 2\n")
    os.utime(path, ns=(10**18, 10**18))
    assert load_settings(str(ws)).jobs == 2
    (cache,) = (tmp_path / "state" / "slopjudge" / "settings").iterdir()
    for other in ({"format": 2, "entries": []}, [1, 2], {"key": None, "values": 3}):
        write_signed(str(cache), "settings", str(ws), other)
        assert load_settings(str(ws)).jobs == 2
        assert read_signed(str(cache), "settings", str(ws))["values"]["jobs"] == 2


def test_settings_load_in_a_workspace_whose_name_is_not_utf8(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    ws = os.path.join(str(tmp_path), os.fsdecode(b"ws\xff"))
    os.mkdir(ws)
    path = write(Path(ws) / "slopjudge.yaml", "jobs: 2\n")
    os.utime(path, ns=(10**18, 10**18))
    assert load_settings(ws).jobs == 2
    assert load_settings(ws).jobs == 2  # from the cache


def test_an_empty_settings_file_means_defaults(tmp_path: Path) -> None:
    write(tmp_path / "slopjudge.yaml", "# nothing yet\n")
    s = load_settings(str(tmp_path))
    assert s.rules_dir == str(tmp_path / "rules")
    assert s.config_files == [str(tmp_path / "slopjudge.yaml")]


def test_pyproject_tool_slopjudge(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", """\
        [project]
        name = "x"

        [tool.slopjudge]
        rules_dir = "guard/rules"
        template_dirs = ["guard/templates"]
        stop_block_cap = 2
        runner = "slopjudge-agent --harness codex"

        [tool.other]
        rules_dir = "no"
        """)
    s = load_settings(str(tmp_path))
    assert s.rules_dir == str(tmp_path / "guard" / "rules")
    assert s.template_dirs[0] == str(tmp_path / "guard" / "templates")
    assert s.stop_block_cap == 2
    assert s.runner == "slopjudge-agent --harness codex"
    assert s.config_files == [str(tmp_path / "pyproject.toml")]


def test_pyproject_without_the_table_is_still_watched(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n")
    s = load_settings(str(tmp_path))
    assert s.rules_dir == str(tmp_path / "rules")
    assert s.config_files == [str(tmp_path / "pyproject.toml")]


def test_environment_overrides_beat_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "slopjudge.yaml", "runner: from-file\nevents_file: e.jsonl\n")
    monkeypatch.setenv("SLOPJUDGE_RUNNER", "from-env --flag")
    monkeypatch.setenv("SLOPJUDGE_EVENTS_FILE", str(tmp_path / "env-events.jsonl"))
    s = load_settings(str(tmp_path))
    assert s.runner == "from-env --flag"
    assert s.events_file == str(tmp_path / "env-events.jsonl")


def test_rules_dir_argument_beats_the_file_and_is_relative_to_the_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "slopjudge.yaml", "rules_dir: from-file\n")
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    s = load_settings(str(tmp_path), rules_dir="mine")
    assert s.rules_dir == str(tmp_path / "sub" / "mine")


@pytest.mark.parametrize(
    "text,where,words",
    [
        (
            "rules_dri: x\n",
            "slopjudge.yaml:1:1",
            "unknown setting `rules_dri`; did you mean `rules_dir`?",
        ),
        ("runner: a\njobs: many\n", "slopjudge.yaml:2:1", "`jobs` must be a whole number >= 0"),
        ("jobs: -1\n", "slopjudge.yaml:1:1", "`jobs` must be a whole number >= 0"),
        (
            "template_dirs: {a: 1}\n",
            "slopjudge.yaml:1:1",
            "`template_dirs` must be a list of folders",
        ),
        ("runner: ''\n", "slopjudge.yaml:1:1", "`runner` must be a non-empty string"),
        ("runner: [unclosed\n", "slopjudge.yaml:2:1", "broken YAML"),
        ("- a\n- b\n", "slopjudge.yaml:1:1", "must be a mapping"),
        ("jobs: 1\njobs: 2\n", "slopjudge.yaml:2:1", "broken YAML"),
    ],
)
def test_bad_settings_files_are_one_line_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, where: str, words: str
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "slopjudge.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_settings(str(tmp_path))
    message = str(info.value)
    assert message.startswith(where + ": "), message
    assert words in message and "\n" not in message


def test_bad_pyproject_points_at_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n\n[tool.slopjudge]\n  jobz = 2\n")
    with pytest.raises(ConfigError) as info:
        load_settings(str(tmp_path))
    assert str(info.value) == "pyproject.toml:5:3: unknown setting `jobz`; did you mean `jobs`?"


def test_broken_toml_is_reported_with_its_position(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "pyproject.toml", "[tool.slopjudge]\njobs = = 2\n")
    with pytest.raises(ConfigError) as info:
        load_settings(str(tmp_path))
    assert str(info.value).startswith("pyproject.toml:2:")
    assert "broken TOML" in str(info.value)


def test_find_workspace_is_the_git_top_level(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "a" / "b").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=repo / "a" / "b",
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    assert find_workspace(str(repo / "a" / "b")) == top == str(repo)


def test_find_workspace_outside_git_is_the_start(tmp_path: Path) -> None:
    # tmp_path has no .git above it on a normal machine; check that first.
    probe = tmp_path
    while probe != probe.parent:
        if (probe / ".git").exists():
            pytest.skip("a .git folder above the temp dir")
        probe = probe.parent
    assert find_workspace(str(tmp_path / "x")) == str(tmp_path / "x")


def test_display_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert display_path(str(tmp_path / "rules" / "a.yaml")) == "rules/a.yaml"
    assert display_path("rules/a.yaml") == "rules/a.yaml"
    assert display_path("/elsewhere/a.yaml") == "/elsewhere/a.yaml"
    assert display_path(str(tmp_path)) == "."


def test_settings_defaults_follow_state_dir() -> None:
    s = Settings(workspace="/w", rules_dir="/w/rules", template_dirs=[], state_dir="/s")
    assert (s.events_file, s.cache_dir) == ("/s/events.jsonl", "/s/cache")


def test_packaged_templates_are_listed_once_in_a_checkout() -> None:
    repo = Path(__file__).resolve().parent.parent
    s = load_settings(str(repo))
    real = [os.path.realpath(d) for d in s.template_dirs]
    assert len(real) == len(set(real))
    if (repo / "templates").is_dir():
        assert s.template_dirs[0] == str(repo / "templates")


def test_a_file_stamped_to_the_second_is_racy_for_longer() -> None:
    """A file system that stamps mtimes to the second could hold two writes of one second
    under one mtime: such a file is not cached until the second is well past."""
    from slopjudge.loading.config import is_racy

    now = 1_700_000_000_500_000_000
    second = 1_700_000_000 * 10**9  # this second, as such a file system stamps it
    assert is_racy([1, second - 10**9, 0, 0, 0], now)
    assert not is_racy([1, now - 10**9 + 7, 0, 0, 0], now)  # a fine clock: 1 s is past
    assert not is_racy([1, second - 10 * 10**9, 0, 0, 0], now)
    assert is_racy([1, now - 1000, 0, 0, 0], now)
    assert not is_racy(None, now)


def test_a_pyproject_whose_tool_is_no_table_holds_no_settings(tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "tool = 1\n")
    assert load_settings(str(tmp_path)).rules_dir == str(tmp_path / "rules")
