"""The verifier executable: exit 0/3/1 and the JUDGE-* lines, as sr-agent expects them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slopjudge.judging import verifier


def _run(exe: list[str], answer: bytes, tmp_path: Path, *, env_extra: dict[str, str] | None = None,
         stdin: bool = True) -> subprocess.CompletedProcess[bytes]:
    path = tmp_path / "answer"
    path.write_bytes(answer)
    env = {k: v for k, v in os.environ.items() if k != "SLOPJUDGE_MIN_CONFIDENCE"}
    env.update(env_extra or {})
    return subprocess.run([*exe, str(path)], input=answer if stdin else b"", capture_output=True,
                          env=env, timeout=30)


@pytest.fixture(params=["module", "path"])
def exe(request: pytest.FixtureRequest) -> list[str]:
    if request.param == "module":
        return [sys.executable, "-m", "slopjudge.judging.verifier"]
    return [verifier.verifier_path()]


def test_pass_exits_0_with_pass_reason(exe: list[str], tmp_path: Path) -> None:
    r = _run(exe, b'{"pass": true, "reasoning": "tidy \\"work\\"\\nline two"}', tmp_path)
    assert r.returncode == 0
    assert r.stderr.decode().splitlines() == [
        'JUDGE-PASS-REASON-JSON: "tidy \\"work\\"\\nline two"'
    ]


def test_pass_without_reasoning_text_prints_nothing(exe: list[str], tmp_path: Path) -> None:
    r = _run(exe, b'{"pass": true, "reasoning": ""}', tmp_path)
    assert r.returncode == 0 and r.stderr == b""


def test_refusal_exits_3_with_reason_json(exe: list[str], tmp_path: Path) -> None:
    r = _run(exe, b'```json\n{"pass": false, "reasoning": "dead code in a.py"}\n```\n', tmp_path)
    assert r.returncode == 3
    line = r.stderr.decode().strip()
    assert line == 'JUDGE-REASON-JSON: "dead code in a.py"'
    assert json.loads(line.split(": ", 1)[1]) == "dead code in a.py"


@pytest.mark.parametrize(
    "answer",
    [b"", b"no json here", b'{"pass": "true", "reasoning": "x"}', b'{"pass": true}',
     b'{"pass": true, "reasoning": "a"}{"pass": false, "reasoning": "b"}', b"\xff\xfe{}"],
)
def test_malformed_exits_1_with_reason(exe: list[str], answer: bytes, tmp_path: Path) -> None:
    r = _run(exe, answer, tmp_path)
    assert r.returncode == 1
    lines = r.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("JUDGE-REASON: ") and len(lines[0]) > 15


def test_reads_the_file_when_stdin_is_empty(tmp_path: Path) -> None:
    r = _run(
        [sys.executable, "-m", "slopjudge.judging.verifier"],
        b'{"pass": false, "reasoning": "r"}',
        tmp_path,
        stdin=False,
    )
    assert r.returncode == 3


def test_min_confidence_requires_confidence_on_a_pass(tmp_path: Path) -> None:
    exe = [verifier.verifier_path()]
    env = {"SLOPJUDGE_MIN_CONFIDENCE": "0.7"}
    missing = _run(exe, b'{"pass": true, "reasoning": "ok"}', tmp_path, env_extra=env)
    assert missing.returncode == 1 and b'lacks "confidence"' in missing.stderr
    # An unsure pass is accepted here; slopjudge applies the threshold itself.
    low = _run(
        exe, b'{"pass": true, "reasoning": "ok", "confidence": 0.2}', tmp_path, env_extra=env
    )
    assert low.returncode == 0
    refusal = _run(exe, b'{"pass": false, "reasoning": "no"}', tmp_path, env_extra=env)
    assert refusal.returncode == 3


def test_verifier_path_is_absolute_and_executable() -> None:
    path = verifier.verifier_path()
    assert os.path.isabs(path) and os.access(path, os.X_OK)


def test_wrapper_when_no_console_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verifier, "_installed", lambda: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = verifier.verifier_path()
    assert path.startswith(str(tmp_path / "cache"))
    assert verifier.verifier_path() == path  # written once, reused
    r = _run([path], b'{"pass": false, "reasoning": "via wrapper"}', tmp_path)
    assert r.returncode == 3 and b"via wrapper" in r.stderr


def test_main_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = tmp_path / "answer"
    answer.write_text('{"pass": false, "reasoning": "in process"}')
    monkeypatch.setattr(sys, "stdin", open(os.devnull))
    assert verifier.main([str(answer)]) == 3
    assert capsys.readouterr().err == 'JUDGE-REASON-JSON: "in process"\n'
