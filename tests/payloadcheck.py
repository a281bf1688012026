"""Every payload the suite sees is validated against ``schemas/payload.schema.json``.

Each process the suite starts (hooks, ``slopjudge run``, ``slopjudge test``, and the
test process itself) finds a folder in ``SLOPJUDGE_CHECK_PAYLOADS`` and keeps there
each distinct payload it builds (``slopjudge.payload.keep_for_check``). The test
process validates them after each test, once per distinct payload, and fails that
test naming it: the validator is loaded once per worker, not once per subprocess.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import jsonschema

from slopjudge.loading.schemas import load_schema
from slopjudge.payload import CHECK_ENV, SCHEMA


class PayloadShapeError(AssertionError):
    """A payload that does not match ``schemas/payload.schema.json``."""


@functools.cache
def _validator() -> Any:
    schema = load_schema(SCHEMA)
    return jsonschema.validators.validator_for(schema)(schema)


def shape_problems(payload: dict[str, Any]) -> list[str]:
    """Every way ``payload`` departs from the schema, as ``at /json/path: message``
    (jsonschema quotes the offending value, which may be a whole file: cut short)."""
    problems = sorted(_validator().iter_errors(payload),
                      key=lambda e: [str(p) for p in e.absolute_path])
    return ["at /" + "/".join(str(p) for p in e.absolute_path) + ": "
            + (e.message if len(e.message) <= 200 else e.message[:199] + "…")
            for e in problems]


def check_shape(payload: dict[str, Any]) -> None:
    problems = shape_problems(payload)
    if problems:
        raise PayloadShapeError("payload does not match payload.schema.json: "
                                + "; ".join(problems[:5]))


OUTSIDE = "outside any test (a module or session fixture, or a process that outlived its test)"


class PayloadCheck:
    """One folder per test, plus one for payloads built between tests."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="slopjudge-payloads-"))
        self.between = self.root / "between"
        self.owner: dict[Path, str] = {self.between: OUTSIDE}
        self.checked: set[str] = set()  # file names (hashes) already validated
        self.keep = False  # an invalid payload's file stays for a look
        os.environ[CHECK_ENV] = str(self.between)

    def start(self, nodeid: str) -> Path:
        """Payloads built from now on are ``nodeid``'s."""
        folder = self.root / f"t{len(self.owner):05d}"
        self.owner[folder] = nodeid
        os.environ[CHECK_ENV] = str(folder)
        return folder

    def finish(self, folder: Path) -> None:
        """Raise if a payload ``folder``'s test built (or one built between tests) is invalid."""
        os.environ[CHECK_ENV] = str(self.between)
        self.raise_problems([folder, self.between])

    def problems(self, folders: list[Path]) -> list[str]:
        found = []
        for folder in folders:
            try:
                names = sorted(n for n in os.listdir(folder) if n.endswith(".json"))
            except FileNotFoundError:
                continue
            for name in names:
                if name in self.checked:
                    continue
                self.checked.add(name)
                payload = json.loads((folder / name).read_bytes())
                found += [f"{self.owner[folder]}: {folder / name} {problem}"
                          for problem in shape_problems(payload)[:5]]
        return found

    def raise_problems(self, folders: list[Path]) -> None:
        found = self.problems(folders)
        if found:
            self.keep = True
            raise PayloadShapeError("payload does not match payload.schema.json: "
                                    + "; ".join(found[:5]))

    def close(self) -> None:
        """Validate what was kept after its test had finished, then remove the folders."""
        try:
            self.raise_problems(list(self.owner))
        finally:
            if not self.keep:
                shutil.rmtree(self.root, ignore_errors=True)
