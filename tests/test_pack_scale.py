"""The pack's checks stay linear in the size of a file: one new file with thousands of
findings is read in about the time of one without (a check that looked each line up by
walking the whole file took a minute on these and timed out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import by_id, run_json

RULES = Path(__file__).resolve().parent.parent / "rules"
COUNT = 4000  # a walk over the file per finding took over the checks' 60 s on 3,000 to 4,000


def _one_new_file(body: str) -> str:
    lines = body.count("\n")
    added = "".join("+" + line + "\n" for line in body.splitlines())
    return ("diff --git a/src/many.py b/src/many.py\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/src/many.py\n@@ -0,0 +1,{lines} @@\n{added}")


@pytest.mark.parametrize("rule,body", [
    ("swallowed-errors", "".join(f"def f{i}():\n    try:\n        g{i}()\n"
                                 "    except Exception:\n        pass\n" for i in range(COUNT))),
    ("debug-leftovers", "".join(f"def f{i}(x):\n    print(f\"{{x=}}\")\n    return x\n"
                                for i in range(COUNT))),
])
def test_thousands_of_findings_in_one_file_are_all_reported(
        tmp_path: Path, rule: str, body: str) -> None:
    diff = tmp_path / "many.diff"
    diff.write_text(_one_new_file(body), encoding="utf-8")
    rc, report = run_json("--dry-run", "--rules", str(RULES), "--rule", rule, "--diff",
                          str(diff), cwd=tmp_path)
    result = by_id(report)[f"{rule}/scan"]
    assert result["outcome"] == "refuse", result.get("reason")
    assert len(result["findings"]) == COUNT
    assert rc == 1
