"""A rule's payload is serialised once and shared by its checks: each check still
reads exactly its own SPEC §3 object."""

from __future__ import annotations

import json
from pathlib import Path

from slopjudge.checks import engine
from slopjudge.checks.options import RunOptions
from slopjudge.checks.script import payload_bytes
from slopjudge.hookspec import CheckContext
from slopjudge.model import Changeset, Check, Event, FileChange, Rule
from slopjudge.payload import build_payload


def _ctx(tmp_path: Path, shared: engine.SharedPayload | None, base: dict[str, object],
         check_id: str) -> CheckContext:
    check = Check(id=check_id, rule="r", kind="script", script="x.py")
    rule = Rule(id="r", path=str(tmp_path / "rule.yaml"), dir=str(tmp_path), description="d",
                checks=[check])
    return CheckContext(rule=rule, check=check, event=Event(kind="ci"), workspace=str(tmp_path),
                        changeset=Changeset(), payload=dict(base, check={"id": check_id}),
                        options=RunOptions(), shared_payload=shared)


def test_each_check_reads_its_own_payload_from_the_shared_bytes(tmp_path: Path) -> None:
    files = [FileChange(path="src/é.py", status="A", new_content="x = 'ü'\n", diff="+x = 'ü'\n",
                        added=1)]
    base = build_payload(event=Event(kind="ci"), workspace=str(tmp_path),
                         changeset=Changeset(files=files), files=files, others=[],
                         change="+x = 'ü'\n", rule=None)
    shared = engine.SharedPayload(base)
    for check_id in ("one", "two"):
        ctx = _ctx(tmp_path, shared, base, check_id)
        for ascii_only in (True, False):
            got = payload_bytes(ctx, ensure_ascii=ascii_only)
            assert json.loads(got) == ctx.payload
            assert got.isascii() == ascii_only
    assert len(shared.encoded) == 2  # serialised once per encoding, not per check


def test_a_payload_changed_after_sharing_is_serialised_as_it_is(tmp_path: Path) -> None:
    base: dict[str, object] = {"check": {"id": None}, "rubric": "", "additionalContext": {}}
    shared = engine.SharedPayload(base)
    ctx = _ctx(tmp_path, shared, base, "one")
    ctx.payload["rubric"] = "changed"
    assert json.loads(payload_bytes(ctx))["rubric"] == "changed"


def test_a_shared_payload_of_nothing_but_the_check_is_still_json() -> None:
    for ascii_only in (True, False):
        body = engine.SharedPayload({}).for_check("c", ensure_ascii=ascii_only)
        assert json.loads(body) == {"check": {"id": "c"}}
