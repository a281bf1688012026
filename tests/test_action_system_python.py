"""The action on a runner's own python3 (python-version ''), which refuses `pip install`.

A file of its own, apart from tests/test_action.py (whose helpers it runs the action
with): it builds its venv from nothing, so it runs on another worker at the same time.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.test_action import CLEAN, commit, github_env, pull_request_repo, run_action


def test_a_system_python_that_refuses_pip_installs_into_a_venv(
        tmp_path: Path, slopjudge_wheel: Path) -> None:
    """python-version '': the runner's own python3, which (Debian, Ubuntu 24.04) marks its
    packages externally managed and refuses `pip install` (PEP 668)."""
    system = subprocess.run(["/usr/bin/python3", "-c", "import sysconfig; print("
                             "sysconfig.get_path('stdlib'))"], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert (Path(system) / "EXTERNALLY-MANAGED").is_file(), "this test needs a PEP 668 python3"
    ws, base = pull_request_repo(tmp_path)
    commit(ws, {"src dir/wïdget.py": CLEAN})
    env = github_env(tmp_path, Path("/usr/bin"), base, "x")
    run = run_action({"python-version": "", "install": str(slopjudge_wheel), "dry-run": "true",
                      "upload-sarif": "false"}, env, ws)
    steps = dict(run.log)
    assert steps["Set up Python"] == "skipped: its condition is false"
    assert steps["Install slopjudge"] == "exit 0", run.stdout["Install slopjudge"]
    assert run.outputs["install"]["bin"] == str(Path(env["RUNNER_TEMP"]) / "slopjudge-venv" / "bin")
    assert (steps["Judge"], steps["Verdict"]) == ("exit 0", "exit 0"), run.stdout
