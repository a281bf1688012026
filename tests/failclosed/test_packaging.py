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

from tests.helpers import REPO_ROOT, cli_env, git

# Every rule of the source pack must reach the wheel and sdist.
PACK_RULES = len(list((Path(__file__).resolve().parents[2] / "rules").glob("*/rule.yaml")))


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


def _processes_carrying(mark: str) -> list[str]:
    """The command lines of the processes whose environment holds ``mark``: whatever a
    hook starts inherits it, a process that detached itself included."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            environ = Path("/proc", pid, "environ").read_bytes()
            cmdline = Path("/proc", pid, "cmdline").read_bytes()
        except OSError:
            continue  # gone, or not this user's
        if mark.encode() in environ.split(b"\0"):
            shown = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{pid}: {shown}")
    return found


def test_a_session_through_the_installed_hooks_leaves_no_process_running(
    tmp_path: Path, dist: dict[str, Path]
) -> None:
    """As a user gets it: `slopjudge install claude`, then a session's hooks as Claude
    Code runs them (start, a Read, a clean Write, a denied Write, a Bash, stop). Each
    call answers in its own process, and when the session ends nothing slopjudge
    started is still running: no server, no spare, no check."""
    slopjudge = _venv(tmp_path / "venv", dist["wheel"])
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / ".venv").symlink_to(slopjudge.parent.parent)
    mark = f"SLOPJUDGE_TEST_SESSION={os.getpid()}-{tmp_path.name}"
    env = cli_env({mark.split("=")[0]: mark.split("=")[1], "CLAUDE_PROJECT_DIR": str(repo)})
    env.pop("PYTHONPATH", None)
    for args in (["init"], ["install", "claude"]):
        assert subprocess.run([str(slopjudge), *args], cwd=repo, env=env, capture_output=True,
                              timeout=300).returncode == 0
    wrapper = repo / ".claude" / "hooks" / "slopjudge"

    def hook(point: str, event: str, **fields: object) -> subprocess.CompletedProcess[str]:
        payload = json.dumps({"hook_event_name": event, "session_id": "s", "cwd": str(repo),
                              **fields})
        return subprocess.run([str(wrapper), "hook", point], cwd=repo, env=env, input=payload,
                              capture_output=True, text=True, timeout=300)

    def tool(name: str, **tool_input: object) -> subprocess.CompletedProcess[str]:
        return hook("pre-tool", "PreToolUse", tool_name=name, tool_input=tool_input)

    assert hook("start", "SessionStart", source="startup").returncode == 0
    assert tool("Read", file_path=str(repo / "README.md")).stdout == ""
    clean = tool("Write", file_path=str(repo / "notes.txt"), content="hello\n")
    assert (clean.returncode, clean.stdout) == (0, ""), clean.stderr
    denied = tool("Write", file_path=str(repo / "rules" / "protect-rules" / "rule.yaml"),
                  content="description: gone\nchecks: []\n")
    assert json.loads(denied.stdout)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert tool("Bash", command="ls").returncode == 0
    assert hook("stop", "Stop", stop_hook_active=False).returncode == 0
    left = _processes_carrying(mark)
    assert not left, left
