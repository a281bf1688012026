"""Find the pinned Claude Code CLI for end-to-end tests.

The CLI comes from the npm package ``@anthropic-ai/claude-code`` pinned in
``package.json``/``package-lock.json`` at the repository root (``npm ci``
installs it into ``node_modules/``; ``.ci/run`` does that). The package's
postinstall copies a native binary over ``node_modules/.bin/claude``; when
install scripts were skipped the platform package's binary is used directly.

``claude_bin()`` returns the path of a binary that reports the pinned version,
or calls ``pytest.skip`` with the reason. Under ``CI=true`` a missing or wrong
CLI is a test **failure** instead: CI must really run these tests.
Override the location with ``SLOPJUDGE_TEST_CLAUDE_BIN``.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def pinned_version() -> str:
    pkg = json.loads((ROOT / "package.json").read_text())
    return str(pkg["dependencies"]["@anthropic-ai/claude-code"])


def _platform_package() -> str:
    machine = platform.machine().lower()
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        machine, machine
    )
    system = platform.system().lower()
    return f"@anthropic-ai/claude-code-{system}-{arch}"


def _candidates() -> list[Path]:
    override = os.environ.get("SLOPJUDGE_TEST_CLAUDE_BIN")
    if override:
        return [Path(override)]
    nm = ROOT / "node_modules"
    plat = nm / _platform_package()
    return [nm / ".bin" / "claude", plat / "claude", plat / "bin" / "claude"]


@functools.lru_cache(maxsize=1)
def _find() -> tuple[str | None, str]:
    """(path, why-not) for the first candidate that prints the pinned version."""
    want = pinned_version()
    reasons: list[str] = []
    for cand in _candidates():
        if not (cand.is_file() and os.access(cand, os.X_OK)):
            reasons.append(f"{cand}: not installed")
            continue
        try:
            out = subprocess.run(
                [str(cand), "--version"], capture_output=True, timeout=60,
                env={**os.environ, "DISABLE_AUTOUPDATER": "1"},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            reasons.append(f"{cand}: {exc}")
            continue
        text = out.stdout.decode("utf-8", "replace").strip()
        if out.returncode == 0 and text.split()[:1] == [want]:
            return str(cand), ""
        reasons.append(f"{cand}: --version said {text!r}, want {want}")
    return None, "; ".join(reasons)


def claude_bin() -> str:
    """The pinned claude binary, or skip (fail under CI=true) with the reason."""
    path, why = _find()
    if path:
        return path
    message = (
        f"Claude Code CLI {pinned_version()} not available ({why}); "
        "run `npm ci` at the repository root"
    )
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)
    raise AssertionError("unreachable")
