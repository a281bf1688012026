"""Find the pinned Codex CLI for end-to-end tests.

The CLI comes from the npm package ``@openai/codex`` pinned in
``package.json``/``package-lock.json`` (``npm ci`` installs it into ``node_modules/``;
``.ci/run`` does that). Its native binary (in the platform package npm installs beside
it) is run directly, so the tests need no ``node`` on the PATH they give Codex.

``codex_bin()`` returns the path of a binary that reports the pinned version, or calls
``pytest.skip`` with the reason; under ``CI=true`` a missing or wrong CLI is a test
**failure** instead. Override the location with ``SLOPJUDGE_TEST_CODEX_BIN``.
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
    return str(pkg["dependencies"]["@openai/codex"])


def _candidates() -> list[Path]:
    override = os.environ.get("SLOPJUDGE_TEST_CODEX_BIN")
    if override:
        return [Path(override)]
    machine = platform.machine().lower()
    arch = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64",
            "arm64": "aarch64"}.get(machine, machine)
    npm_arch = {"x86_64": "x64", "aarch64": "arm64"}.get(arch, arch)
    system = platform.system().lower()
    triple = f"{arch}-unknown-linux-musl" if system == "linux" else f"{arch}-apple-darwin"
    plat = ROOT / "node_modules" / "@openai" / f"codex-{system}-{npm_arch}"
    vendor = plat / "vendor" / triple
    return [vendor / "bin" / "codex", vendor / "codex" / "codex"]


@functools.lru_cache(maxsize=1)
def _find() -> tuple[str | None, str]:
    want = pinned_version()
    reasons: list[str] = []
    for cand in _candidates():
        if not (cand.is_file() and os.access(cand, os.X_OK)):
            reasons.append(f"{cand}: not installed")
            continue
        try:
            out = subprocess.run([str(cand), "--version"], capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            reasons.append(f"{cand}: {exc}")
            continue
        text = out.stdout.decode("utf-8", "replace").strip()
        if out.returncode == 0 and text.split()[-1:] == [want]:
            return str(cand), ""
        reasons.append(f"{cand}: --version said {text!r}, want {want}")
    return None, "; ".join(reasons)


def codex_bin() -> str:
    """The pinned codex binary, or skip (fail under CI=true) with the reason."""
    path, why = _find()
    if path:
        return path
    message = (f"Codex CLI {pinned_version()} not available ({why}); "
               "run `npm ci` at the repository root")
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)
    raise AssertionError("unreachable")
