"""The shipped rule pack works after a real install, as a new user gets it.

Builds the wheel (and a wheel from the sdist, as pip does for a source
release), installs it into a fresh venv, and in a new git repository runs
`slopjudge init`, `validate` (17 rules load, exit 0) and `hook pre-tool`
(a Write over a protected rule file is denied). Wheels keep no run bits on
package data, so this is what proves the pack does not depend on them.

The new venv sees the test interpreter's dependencies through a ``.pth`` file
and installs slopjudge itself from the built wheel only (``--no-index``), so
nothing but the build needs an index.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import (
    REPO_ROOT,
    cli_env,
    git,
    kill_quietly,
    running_servers,
    stop_servers,
    wait_gone,
)

PACK_RULES = 17


def _pip(*args: str, cwd: Path | None = None) -> None:
    res = subprocess.run([sys.executable, "-m", "pip", *args, "-q", "--disable-pip-version-check"],
                         cwd=cwd, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory,
         slopjudge_wheel: Path) -> Iterator[dict[str, Path]]:
    """The wheel built from the checkout, and the wheel pip builds from the sdist."""
    out = tmp_path_factory.mktemp("dist")
    sdist_dir = out / "sdist"
    build = subprocess.run(
        [sys.executable, "-c",
         "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))",
         str(sdist_dir)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )
    assert build.returncode == 0, build.stderr
    sdist = sdist_dir / build.stdout.strip().splitlines()[-1]
    # Built as pip builds a source install, with this venv's setuptools (see conftest's
    # slopjudge_wheel): what the sdist holds decides what the wheel holds either way.
    _pip("wheel", str(sdist), "--no-deps", "--no-build-isolation", "-w", str(out / "from-sdist"))
    yield {
        "wheel": slopjudge_wheel,
        "sdist": next((out / "from-sdist").glob("slopjudge-*.whl")),
    }


def test_the_wheel_holds_the_whole_pack_even_without_run_bits(dist: dict[str, Path]) -> None:
    with zipfile.ZipFile(dist["wheel"]) as whl:
        names = whl.namelist()
    rules = {n.split("/")[3] for n in names
             if n.startswith("slopjudge/data/rules/") and n.endswith("/rule.yaml")}
    assert len(rules) == PACK_RULES, sorted(rules)
    assert "slopjudge/data/rules/protect-rules/check.py" in names
    assert "slopjudge/data/schemas/rule.schema.json" in names
    assert "slopjudge/data/RUBRIC.md" in names


def _venv(root: Path, wheel: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True,
                   timeout=120)
    py = root / "bin" / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    # The dependencies come from the interpreter running the tests; slopjudge
    # itself only from the wheel (its site-packages is searched first).
    dep_dirs = [p for p in site.getsitepackages() if os.path.isdir(p)]
    Path(purelib, "zz-test-deps.pth").write_text("\n".join(dep_dirs) + "\n", encoding="utf-8")
    res = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
         "--no-index", "--disable-pip-version-check", str(wheel)],
        capture_output=True, text=True, timeout=600,
    )
    if res.returncode != 0 and "no such option: --python" in res.stderr:
        pytest.skip("this pip cannot install into another interpreter")
    assert res.returncode == 0, res.stderr
    where = subprocess.run([str(py), "-c", "import slopjudge; print(slopjudge.__file__)"],
                           capture_output=True, text=True, check=True, cwd=root).stdout
    assert where.startswith(purelib), where  # the installed wheel, not the checkout
    return root / "bin" / "slopjudge"


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_installed_pack_validates_and_guards_its_rules(
    tmp_path: Path, dist: dict[str, Path], kind: str
) -> None:
    slopjudge = _venv(tmp_path / "venv", dist[kind])
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    env = cli_env({"PATH": f"{slopjudge.parent}:{os.environ.get('PATH', '')}"})
    env.pop("PYTHONPATH", None)

    def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(slopjudge), *args], cwd=repo, env=env, input=stdin,
                              capture_output=True, text=True, timeout=300)

    init = cli("init")
    assert init.returncode == 0, init.stderr
    protect = repo / "rules" / "protect-rules" / "check.py"
    assert os.access(protect, os.X_OK), "init leaves the pack's scripts runnable"

    validate = cli("validate")
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert f"{PACK_RULES} rule(s) loaded" in validate.stdout + validate.stderr, validate.stdout

    target = repo / "rules" / "protect-rules" / "rule.yaml"
    payload = {
        "hook_event_name": "PreToolUse", "session_id": "s", "cwd": str(repo),
        "tool_name": "Write",
        "tool_input": {"file_path": str(target), "content": "description: gone\nchecks: []\n"},
    }
    hook = cli("hook", "pre-tool", stdin=json.dumps(payload))
    assert hook.returncode in (0, 2), hook.stderr
    answer = json.loads(hook.stdout) if hook.stdout.strip() else {}
    decision = answer.get("hookSpecificOutput", {}).get("permissionDecision")
    assert decision == "deny" or hook.returncode == 2, (hook.stdout, hook.stderr)
    assert "protect-rules" in hook.stdout + hook.stderr


def test_python_scripts_without_run_bits_still_run(
    tmp_path: Path, dist: dict[str, Path]
) -> None:
    """The case a wheel creates, made on purpose: every pack script loses its run bit."""
    slopjudge = _venv(tmp_path / "venv", dist["wheel"])
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    env = cli_env()
    assert subprocess.run([str(slopjudge), "init"], cwd=repo, env=env,
                          capture_output=True).returncode == 0
    for script in (repo / "rules").rglob("*.py"):
        script.chmod(0o644)
    validate = subprocess.run([str(slopjudge), "validate"], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=300)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert "not executable" not in validate.stdout + validate.stderr


# What the hook wrapper runs with a project virtualenv's python (data/hook-wrapper.sh).
WRAPPER_MAIN = "import sys; from slopjudge.cli import main; sys.exit(main())"


def test_the_wrapper_runs_the_command_it_documents() -> None:
    text = (REPO_ROOT / "slopjudge" / "data" / "hook-wrapper.sh").read_text()
    assert f"-P -c '{WRAPPER_MAIN}'" in text


def test_an_installed_hook_server_serves_and_a_changed_install_retires_it(
    tmp_path: Path, dist: dict[str, Path]
) -> None:
    """As a user gets it, called as the hook wrapper calls a virtualenv's slopjudge (its
    python, not pip's launcher, which imports `re` first): a served call imports none
    of the hook's code in the caller; a slopjudge file changed under a running server
    (an upgrade, an edit) is never served by the old code: the server declines, exits,
    and the next one serves."""
    import shutil
    import tempfile
    import time

    slopjudge = _venv(tmp_path / "venv", dist["wheel"])
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    folder = Path(tempfile.mkdtemp(prefix="sj-"))
    env = cli_env({"SLOPJUDGE_SERVER_DIR": str(folder), "SLOPJUDGE_SERVER_IDLE": "30"})
    env.pop("PYTHONPATH", None)
    env.pop("SLOPJUDGE_SERVER", None)
    py = slopjudge.parent / "python"

    def server() -> int | None:
        pids = running_servers(folder)
        return pids[0] if pids and list(folder.glob("*.sock")) else None

    def wait_server(other_than: int | None = None, within: float = 20) -> int:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            pid = server()
            if pid is not None and pid != other_than:
                return pid
            time.sleep(0.05)
        raise AssertionError(f"no hook server started: {sorted(os.listdir(folder))}, "
                             f"locks {[p.read_text() for p in folder.glob('*.lock')]}")

    def call(target: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
        payload = json.dumps({
            "hook_event_name": "PreToolUse", "session_id": "s", "cwd": str(repo),
            "tool_name": "Write",
            "tool_input": {"file_path": str(repo / target), "content": "x: 1\n"},
        })
        res = subprocess.run([str(py), "-X", "importtime", "-P", "-c", WRAPPER_MAIN, "hook",
                              "pre-tool"],
                             cwd=repo, env=env, input=payload, capture_output=True, text=True,
                             timeout=300)
        imported = {line.split("|")[-1].strip() for line in res.stderr.splitlines()
                    if line.startswith("import time:")}
        return res, imported

    try:
        assert subprocess.run([str(slopjudge), "init"], cwd=repo, env=env,
                              capture_output=True, timeout=300).returncode == 0
        call("rules/protect-rules/rule.yaml")  # no server yet: answered here, one started
        pid = wait_server()
        res, imported = call("rules/protect-rules/rule.yaml")
        assert json.loads(res.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert "slopjudge.hooks.server" in imported
        assert not {"re", "slopjudge.hooks.pre_tool", "slopjudge.loading.rulecache",
                    "json"} & imported, sorted(imported)
        # An edit to an installed module the server imported.
        module = Path(subprocess.run(
            [str(py), "-c", "import slopjudge.hooks.pre_tool as m; print(m.__file__)"],
            capture_output=True, text=True, check=True, cwd=tmp_path).stdout.strip())
        module.write_text(module.read_text() + "\n# changed\n")
        res, imported = call("rules/protect-rules/rule.yaml")
        assert json.loads(res.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert "slopjudge.hooks.pre_tool" in imported  # answered by the caller itself
        assert not wait_gone([pid], within=10)  # the old server went
        # A new one serves from the next calls (started by this one, or, where the old
        # one had not let go of its name yet, by a later one: the calls run here till then).
        for _ in range(3):
            try:
                new = wait_server(other_than=pid, within=10)
                break
            except AssertionError:
                res, imported = call("rules/protect-rules/rule.yaml")
                assert json.loads(res.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        else:
            raise AssertionError("no new hook server after three calls")
        res, imported = call("rules/protect-rules/rule.yaml")
        assert json.loads(res.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
        assert "slopjudge.hooks.pre_tool" not in imported  # served by the new one
        assert server() == new
        # A file newer than a server's start (changed while it imported) retires it and
        # keeps the next one from serving: what runs may not be what is on disk.
        later = time.time() + 3600
        os.utime(module, (later, later))
        for _ in range(3):
            res, imported = call("rules/protect-rules/rule.yaml")
            assert json.loads(res.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
            assert "slopjudge.hooks.pre_tool" in imported  # never served
        assert not wait_gone([new], within=10)
    finally:
        kill_quietly(stop_servers(folder))
        shutil.rmtree(folder, ignore_errors=True)
