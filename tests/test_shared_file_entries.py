"""A big change's per-file work is done once per run: rules share their file entries and
their JSON. That must leave what a check sees exactly as it was."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from slopjudge.changes import changeset as cs
from slopjudge.model import Changeset, Check, Event, Rule
from slopjudge.payload import encode, for_rule

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


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=" \tabcdefhinoprstuvwy(=/;", max_size=7), max_size=8))
def test_a_regex_may_start_where_it_could_before_reading_only_the_end(code: list[str]) -> None:
    ss = _SS
    prev = "".join(code).rstrip()  # what the whole line's code so far decides
    whole = (not prev or prev[-1] in "(,=:[!&|?{};+-*%<>~^" or bool(
        re.search(r"\b(return|typeof|case|in|of|delete|void|throw)$", prev)))
    assert ss._regex_can_start(code) == whole


_SS = _slopscan()
