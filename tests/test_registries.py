"""The extension registries: each a dict typed by its protocol in hookspec.py, which mypy
enforces on every entry; the CLI offers exactly the registered names; the code dispatches
through the registry, so an entry added there is the whole of a new extension."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from slopjudge.checks import CHECK_KINDS, engine
from slopjudge.checks.options import RunOptions
from slopjudge.cli import build_parser
from slopjudge.harnesses.claude import ClaudeCode
from slopjudge.hookspec import CheckContext, JudgeAttempt
from slopjudge.judging.runner import agent
from slopjudge.model import Changeset, Check, CheckResult, Event, FileChange, Rule
from slopjudge.report import FORMATS

ROOT = Path(__file__).resolve().parent.parent

# Each line marked "# rejected" must be the one place mypy reports; every other line passes.
ENTRIES = '''\
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from slopjudge.checks import CHECK_KINDS
from slopjudge.hookspec import CheckContext, JudgeAttempt
from slopjudge.model import CheckResult, RunReport
from slopjudge.report import FORMATS
from slopjudge.harnesses.registry import HARNESSES
from slopjudge.harnesses.claude import ClaudeCode
from slopjudge.hookspec import Harness


def kind_ok(ctx: CheckContext) -> CheckResult:
    raise NotImplementedError


def kind_extra_arg(ctx: CheckContext, extra: int) -> CheckResult:
    raise NotImplementedError


def kind_wrong_result(ctx: CheckContext) -> str:
    return ""


def format_ok(report: RunReport, *, color: bool = False) -> str:
    return ""


def format_without_color(report: RunReport) -> str:
    return ""


class NoCheckTools:
    """A harness as the old Protocol described it: no check_tools."""

    name = "x"
    binary = "x"
    missing_message = ""

    def resolve_model(self, model_set: str, warnings: list[str] | None = None) -> str:
        return model_set

    def override_models(self, overrides: Mapping[str, str]) -> None:
        pass

    def argv(self, attempt: JudgeAttempt) -> tuple[list[str], bytes]:
        return [], b""

    def parse_output(self, stdout: bytes) -> tuple[bytes, dict[str, Any] | None]:
        return stdout, None


class AgentOk(ClaudeCode):
    name = "ok"

    def judge(self, env: Mapping[str, str]) -> tuple[Harness, bool]:
        return ClaudeCode(), True


class AgentOldJudge(ClaudeCode):
    name = "old"

    def judge(self, env: Mapping[str, str]) -> tuple[NoCheckTools, bool]:  # type: ignore[override]
        return NoCheckTools(), True


class AgentNoStopBlock:
    """An agent module missing one of the interface's parts (its Stop answer)."""

    name = "half"
    settings_relpath: tuple[str, ...] = (".half", "hooks.json")
    hooks = ClaudeCode.hooks
    root = "."

    def read_payload(self, point: str, payload: dict[str, Any]) -> dict[str, Any]:
        return payload

    def pre_tool_answer(self, decision: str, reason: str) -> dict[str, Any]:
        return {}

    def end_notice(self, notice: str) -> tuple[dict[str, Any], bool]:
        return {}, True

    def install_notes(self, workspace: str) -> list[str]:
        return []

    def trust_problems(self, workspace: str) -> list[str]:
        return []

    def judge(self, env: Mapping[str, str]) -> tuple[Harness, bool]:
        return ClaudeCode(), True


CHECK_KINDS["script"] = kind_ok
CHECK_KINDS["judge"] = kind_extra_arg  # rejected
CHECK_KINDS["judge"] = kind_wrong_result  # rejected
CHECK_KINDS["lint"] = kind_ok  # rejected: a kind model.CheckKindName does not declare
FORMATS["ok"] = format_ok
FORMATS["drifted"] = format_without_color  # rejected
HARNESSES["ok"] = AgentOk()
HARNESSES["old"] = AgentOldJudge()  # rejected
HARNESSES["half"] = AgentNoStopBlock()  # rejected
'''


def test_mypy_holds_every_registry_entry_to_its_protocol(tmp_path: Path) -> None:
    beside = Path(sys.executable).with_name("mypy")
    mypy = str(beside) if beside.is_file() else shutil.which("mypy")
    if mypy is None:
        pytest.skip("mypy is not installed (pip install -e '.[test]' installs it)")
    probe = tmp_path / "entries.py"
    probe.write_text(ENTRIES)
    proc = subprocess.run(
        [mypy, "--strict", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
         "--config-file", str(ROOT / "pyproject.toml"), str(probe)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    flagged = {int(m.group(1)) for m in re.finditer(rf"^{re.escape(str(probe))}:(\d+): error:",
                                                    proc.stdout, re.M)}
    marked = {n for n, line in enumerate(ENTRIES.splitlines(), 1) if "# rejected" in line}
    assert len(marked) == 6
    assert flagged == marked, proc.stdout + proc.stderr
    # Nothing but the marked entries: the package itself and the good entries type-check.
    assert f"Found {len(marked)} errors in 1 file" in proc.stdout, proc.stdout


def _choices(parser: argparse.ArgumentParser, argv: list[str],
             capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The choices argparse lists when ``argv`` ends in a value it does not take."""
    with pytest.raises(SystemExit):
        parser.parse_args(argv)
    found = re.search(r"invalid choice: .*\(choose from (.*)\)", capsys.readouterr().err)
    assert found is not None
    return [c.strip().strip("'") for c in found.group(1).split(",")]


def test_run_format_choices_are_the_report_registry(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser("run")
    assert _choices(parser, ["run", "--format", "nope"], capsys) == list(FORMATS)
    for name in FORMATS:
        assert parser.parse_args(["run", "--format", name]).format == name


def test_run_write_takes_exactly_the_registered_formats() -> None:
    from slopjudge.commands.run import parse_writes

    assert parse_writes([f"{name}=out.{name}" for name in FORMATS]) == [
        (name, f"out.{name}") for name in FORMATS]
    with pytest.raises(ValueError, match="FORMAT one of " + ", ".join(FORMATS)):
        parse_writes(["xml=out.xml"])


def _one_file() -> Changeset:
    return Changeset(files=[FileChange(path="a.py", status="M", old_content="a\n",
                                       new_content="b\n",
                                       diff="--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-a\n+b\n")])


def _rule(tmp_path: Path, kind: str) -> Rule:
    check = Check(id="c", rule="r", kind=kind, script="true", timeout=30)  # type: ignore[arg-type]
    return Rule(id="r", path=str(tmp_path / "rule.yaml"), dir=str(tmp_path), description="r",
                checks=[check])


def test_the_engine_dispatches_on_kind_through_the_registry(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    calls: list[str] = []

    def kind(ctx: CheckContext) -> CheckResult:
        calls.append(ctx.check.full_id)
        return CheckResult(id=ctx.check.full_id, rule=ctx.rule.id, check=ctx.check.id,
                           kind="script", outcome="refuse", reason="from the registry")

    monkeypatch.setitem(CHECK_KINDS, "script", kind)
    [res] = engine.run([_rule(tmp_path, "script")], Event(kind="stop"), _one_file(),
                       workspace=str(tmp_path), options=RunOptions())
    assert calls == ["r/c"] and (res.outcome, res.reason) == ("refuse", "from the registry")


def test_a_kind_nobody_registered_is_an_error_not_a_crash(tmp_path: Path) -> None:
    [res] = engine.run([_rule(tmp_path, "lint")], Event(kind="stop"), _one_file(),
                       workspace=str(tmp_path), options=RunOptions())
    assert res.outcome == "error"
    assert "no check kind 'lint' (script or judge)" in res.reason


def test_harness_names_are_the_harness_registry(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    env = {"PATH": "/nonexistent"}
    for name in agent.HARNESSES:
        assert agent.parse_options(["--model", "m", "--harness", name, "p"], env).harness == name
    with pytest.raises(agent.UsageError, match=re.escape(f"({' or '.join(agent.HARNESSES)})")):
        agent.parse_options(["--model", "m", "--harness", "nope", "p"], env)

    class Echo:
        """A harness registered for this test: its command is the attempt itself."""

        name = "echo"
        binary = "echo"
        missing_message = "echo is missing"

        def resolve_model(self, model_set: str, warnings: list[str] | None = None) -> str:
            return model_set.upper()

        def override_models(self, overrides: Mapping[str, str]) -> None:
            pass

        def check_tools(self, allowed_tools: list[str], disallowed_tools: list[str]) -> None:
            pass

        def argv(self, attempt: JudgeAttempt) -> tuple[list[str], bytes]:
            return ["echo", attempt.model, attempt.prompt], b""

        def parse_output(self, stdout: bytes) -> tuple[bytes, dict[str, Any] | None]:
            return stdout, None

    class EchoAgent(ClaudeCode):
        def judge(self, env: Mapping[str, str]) -> tuple[Echo, bool]:  # type: ignore[override]
            return Echo(), True

    monkeypatch.setitem(agent.HARNESSES, "claude", EchoAgent())
    opts = agent.parse_options(["--model", "m", "--dry-run", "judge", "this"], env)
    assert agent.run_agent(opts, env) == 0
    out = capsys.readouterr()
    assert out.out == "echo M 'judge this'\n"
    assert "harness echo, model M" in out.err


def test_each_format_renders_with_its_own_module_imported_on_first_use() -> None:
    import importlib

    from slopjudge.report import render
    from tests.test_reports import sample_report

    report = sample_report()
    for name, renderer in FORMATS.items():
        module = importlib.import_module(f"slopjudge.report.{name}")
        assert renderer(report) == module.render(report) == render(report, name)
    probe = ("import sys\nfrom slopjudge.model import RunReport\nfrom slopjudge.report import "
             "render\nrender(RunReport(outcome='pass'), 'text')\n"
             "print(sorted(m for m in sys.modules if m.startswith('slopjudge.report.')))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    assert out.stdout.strip() == "['slopjudge.report.text']", out.stderr
