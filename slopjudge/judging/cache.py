"""The verdict cache (SPEC §8): only real verdicts, one file per key, signed with a MAC
bound to its key (:mod:`slopjudge.cachesign`), so an entry an agent rewrote to a pass or
copied from another key is a miss."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from slopjudge import cachesign
from slopjudge.fsutil import write_atomic
from slopjudge.judging.verdict import VERDICT_INSTRUCTION_VERSION, parse_verdict

# First line of an entry: this, then the entry's MAC (cachesign); the verdict JSON follows.
_MAGIC = b"slopjudge-verdict "


def cache_key(prompt: str, *, model: str, allowed_tools: list[str], disallowed_tools: list[str],
              runner_identity: str, instruction_version: str = VERDICT_INSTRUCTION_VERSION) -> str:
    # A JSON list keeps the parts apart: no two different inputs share a key.
    material = json.dumps(
        ["slopjudge-verdict-cache/1", prompt, instruction_version, model,
         list(allowed_tools), list(disallowed_tools), runner_identity],
        ensure_ascii=False,
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


class VerdictCache:
    def __init__(self, directory: str, *, workspace: str | None = None) -> None:
        self.directory = Path(directory)
        # A signing key inside the workspace signs nothing (cachesign.key).
        self.workspace = workspace

    def _path(self, key: str) -> Path:
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            head, _, body = self._path(key).read_bytes().partition(b"\n")
            if not head.startswith(_MAGIC) or not cachesign.verify(
                key.encode("ascii") + b"\0" + body, "verdict", head[len(_MAGIC):].decode("ascii"),
                self.workspace,
            ):
                return None  # not written by slopjudge (or for another key): ask the judge
            text = body.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None
        return parse_verdict(text)[0]

    def put(self, key: str, verdict: dict[str, Any]) -> None:
        """Store a verdict; anything that is not a schema-valid verdict is refused."""
        text = json.dumps(verdict, ensure_ascii=False, sort_keys=True)
        checked, problem = parse_verdict(text)
        if checked is None:
            raise ValueError(f"only verdicts are cached: {problem}")
        body = text.encode("utf-8")
        mac = cachesign.sign(key.encode("ascii") + b"\0" + body, "verdict", self.workspace)
        if mac is None:
            return  # no signing key: an unsigned entry would never be trusted
        write_atomic(str(self._path(key)), _MAGIC + mac.encode("ascii") + b"\n" + body, mode=0o600)
