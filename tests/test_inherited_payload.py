"""A big change's per-file work is done once per run: rules share their file entries and
their JSON, a forked Python check reads the payload its worker already held (the same
object its stdin holds), and the rule pack's helper builds each file once before the
forks. Each of these must leave what a check sees exactly as it was."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slopjudge import procs
from slopjudge.changes import changeset as cs
from slopjudge.checks import engine
from slopjudge.checks.options import RunOptions
from slopjudge.model import Changeset, Check, Event, Rule
from slopjudge.payload import encode, for_rule
from tests.helpers import executable, py

ROOT = Path(__file__).resolve().parent.parent

DIFF = """\
diff --git a/src/app.py b/src/app.py
index 1111111..2222222 100644
--- a/src/app.py
+++ b/src/app.py
@@ -1,3 +1,5 @@
 def main():
-    return compute(1, 2)
+    # Résumé: "naïve" → ok
+    return compute(1,
+                   2)
     pass
diff --git a/src/new.py b/src/new.py
new file mode 100644
--- /dev/null
+++ b/src/new.py
@@ -0,0 +1,3 @@
+'''Doc.'''
+x = "a # not a comment"
+y = 2  # a comment
diff --git a/tests/test_app.py b/tests/test_app.py
new file mode 100644
--- /dev/null
+++ b/tests/test_app.py
@@ -0,0 +1,2 @@
+def test_main():
+    assert main() is None
diff --git a/tests/data/case.py b/tests/data/case.py
new file mode 100644
--- /dev/null
+++ b/tests/data/case.py
@@ -0,0 +1 @@
+# flags: --fast
diff --git a/web/ui.ts b/web/ui.ts
new file mode 100644
--- /dev/null
+++ b/web/ui.ts
@@ -0,0 +1,2 @@
+const re = /a\\/b/; // slash
+/* block */ let s = `tpl ${re}`;
diff --git a/old.py b/old.py
deleted file mode 100644
--- a/old.py
+++ /dev/null
@@ -1 +0,0 @@
-gone = True
"""


def _rule(rule_id: str, paths: list[str], script: str = "check.py",
          folder: Path | None = None) -> Rule:
    check = Check(id="scan", rule=rule_id, kind="script", script=script)
    where = folder or ROOT / "rules" / rule_id
    return Rule(id=rule_id, path=str(where / "rule.yaml"), dir=str(where),
                description=rule_id, paths=paths, checks=[check])


def _changeset(extra: str = "") -> Changeset:
    return cs.read_diff((DIFF + extra).encode("utf-8"), "change.diff")


def _payloads(change: Changeset, rules: list[Rule], ws: str) -> list[dict[str, Any]]:
    memo: dict[Any, Any] = {}
    return [for_rule(event=Event(kind="ci"), workspace=ws, changeset=change, rule=r,
                     memo=memo)[1] for r in rules]


def test_rules_share_file_entries_and_encode_them_as_json_dumps_would(tmp_path: Path) -> None:
    long_line = "+" + "z = 'é' * 3  # ünïcode\n"
    extra = ("diff --git a/src/long.py b/src/long.py\nnew file mode 100644\n--- /dev/null\n"
             f"+++ b/src/long.py\n@@ -0,0 +1,300 @@\n{long_line * 300}")
    change = _changeset(extra)
    every, python = _payloads(change, [_rule("a", []), _rule("b", ["*.py"])], str(tmp_path))
    shared = {f["path"]: f for f in every["changeset"]["files"]}
    for f in python["changeset"]["files"]:
        assert f is shared[f["path"]]  # one entry per file for the run
    assert len(python["change"]) > 4096  # the spliced ``change`` is exercised too
    cache: dict[Any, Any] = {}
    for payload in (every, python, every):
        for ascii_only in (True, False):
            want = json.dumps(payload, ensure_ascii=ascii_only).encode("utf-8")
            assert encode(payload, ascii_only, cache) == want


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same JSON types all the way down (a tuple is not a list)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


INHERITS = f"""
import json, sys
sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
from test_inherited_payload import _same
from slopjudge.payload import inherited
raw = sys.stdin.read()
held = inherited()
if held is None:
    print(json.dumps({{"reason": "nothing inherited"}}))
    sys.exit(1)
if not _same(held, json.loads(raw)):
    print(json.dumps({{"reason": "the inherited payload is not the one on stdin"}}))
    sys.exit(1)
print(json.dumps({{"reason": str(len(held["changeset"]["files"]))}}))
"""


@pytest.mark.skipif(not procs.forks_python(), reason="Python checks fork only with cgroups")
def test_a_forked_check_inherits_exactly_what_its_stdin_holds(tmp_path: Path) -> None:
    folder = tmp_path / "rules" / "r"
    script = executable(folder / "check.py", py(INHERITS))
    rules = [_rule("r", [], str(script), folder), _rule("s", [], str(script), folder)]
    rules[1].checks[0].rule = "s"
    change = _changeset()
    results = engine.run(rules, Event(kind="ci"), change, workspace=str(tmp_path),
                         options=RunOptions(jobs=2))
    assert [(r.outcome, r.reason) for r in results] == [("pass", "6"), ("pass", "6")]


def test_a_process_slopjudge_did_not_fork_inherits_nothing() -> None:
    out = subprocess.run([sys.executable, "-c", "from slopjudge.payload import inherited; "
                          "print(inherited())"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"


def _slopscan() -> ModuleType:
    """A fresh copy of the pack's helper (nothing prepared yet)."""
    path = ROOT / "rules" / "_lib" / "slopscan.py"
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))  # slopscan imports its sibling hookio
    name = f"slopscan_under_test_{len(sys.modules)}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _seen(ss: ModuleType, payload: dict[str, Any], **flags: bool) -> list[Any]:
    out = []
    for sf in ss.files(payload, **flags):
        sf.lexed()
        out.append((sf, sf.is_test))
    return out


FLAGS = [{}, {"include_deleted": True}, {"include_test_data": True},
         {"include_deleted": True, "include_test_data": True}]


def test_files_prepared_before_the_fork_are_the_files_a_check_builds(tmp_path: Path) -> None:
    ss = _slopscan()
    change = _changeset()
    every, python = _payloads(change, [_rule("a", []), _rule("b", ["*.py"])], str(tmp_path))
    fresh = {(id(p), i): _seen(ss, p, **f) for p in (every, python)
             for i, f in enumerate(FLAGS)}
    assert ss._PREPARED is None
    ss.slopjudge_prefork(every)
    ss.slopjudge_prefork(python)  # its entries were built for ``every`` already
    prepared = ss._PREPARED
    assert prepared is not None and len(prepared.entries) == 6  # each file once
    built = {id(e[1]) for e in prepared.entries.values()}
    for p in (every, python):
        for i, f in enumerate(FLAGS):
            got = _seen(ss, p, **f)
            assert got == fresh[(id(p), i)]
            assert all(id(sf) in built for sf, _ in got)  # taken, not built again
    # Another workspace is another context: nothing prepared is used, the answer is the same.
    moved = dict(every, workspace=str(tmp_path / "elsewhere"))
    again = _seen(ss, moved, include_deleted=True, include_test_data=True)
    assert again == fresh[(id(every), 3)]
    assert not any(id(sf) in built for sf, _ in again)


def test_a_file_without_parsed_hunks_still_fails_the_check_after_a_prefork(
        tmp_path: Path) -> None:
    ss = _slopscan()
    [payload] = _payloads(_changeset(), [_rule("a", [])], str(tmp_path))
    broken = dict(payload["changeset"]["files"][0])
    del broken["hunks"]
    payload["changeset"] = dict(payload["changeset"], files=[broken])
    ss.slopjudge_prefork(payload)  # what it cannot build it leaves to the check
    with pytest.raises(ValueError, match="no parsed hunks"):
        list(ss.files(payload))


def test_prefork_past_its_budget_leaves_the_rest_to_the_checks(tmp_path: Path) -> None:
    ss = _slopscan()
    [payload] = _payloads(_changeset(), [_rule("a", [])], str(tmp_path))
    fresh = _seen(ss, payload, include_deleted=True, include_test_data=True)
    vars(ss)["PREFORK_BUDGET_S"] = -1.0  # spent before the first file
    ss.slopjudge_prefork(payload)
    assert ss._PREPARED is not None and not ss._PREPARED.entries
    vars(ss)["PREFORK_BUDGET_S"] = 60.0
    ss.slopjudge_prefork(payload)  # the list was not finished: it is prepared now
    assert len(ss._PREPARED.entries) == 6
    assert _seen(ss, payload, include_deleted=True, include_test_data=True) == fresh


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=" \tabcdefhinoprstuvwy(=/;", max_size=7), max_size=8))
def test_a_regex_may_start_where_it_could_before_reading_only_the_end(code: list[str]) -> None:
    ss = _SS
    prev = "".join(code).rstrip()  # what the whole line's code so far decides
    whole = (not prev or prev[-1] in "(,=:[!&|?{};+-*%<>~^" or bool(
        re.search(r"\b(return|typeof|case|in|of|delete|void|throw)$", prev)))
    assert ss._regex_can_start(code) == whole


_SS = _slopscan()
