"""The default rule pack's scripts, run as real subprocesses on hand-built payloads.

What a case folder under tests/rules/ cannot show: empty and broken input, the
prepare scripts' context, and tool calls that need a workspace of a given shape.
The payloads follow SPEC §3; diffs are real unified diffs made with difflib.
"""

from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal

import pytest

from slopjudge.model import Changeset, Event, FileChange, Rule
from slopjudge.payload import for_rule

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules"

# Secret-shaped values are assembled at run time so this file holds none.
AWS_KEY_ID = "AKIA" + "Q3XHZ7LMN4P2R8TV"
STRIPE_LIVE = "sk_" + "live_51Hx7Ue2eZvKYlo2C8xQm3Tn9"
PEM_HEADER = "-----BEGIN " + "RSA PRIVATE KEY-----"
ROCKET = "\U0001F680"


def file_change(path: str, old: str | None, new: str | None) -> FileChange:
    a = (old or "").splitlines(keepends=True)
    b = (new or "").splitlines(keepends=True)
    head = f"diff --git a/{path} b/{path}\n" + ("new file mode 100644\n" if old is None else "")
    body = "".join(
        difflib.unified_diff(a, b, "/dev/null" if old is None else f"a/{path}", f"b/{path}")
    )
    status: Literal["A", "M", "D"] = "A" if old is None else "D" if new is None else "M"
    return FileChange(path=path, status=status, old_content=old, new_content=new,
                      diff=head + body)


def payload(files: list[FileChange], *, workspace: str = "/nonexistent-ws", rule: str = "x",
            event: Event | None = None) -> dict[str, Any]:
    """The payload slopjudge's own builder makes (hunks parsed by slopjudge included)."""
    the_rule = Rule(id=rule, path=str(RULES / rule / "rule.yaml"), dir=str(RULES / rule),
                    description="")
    _, data = for_rule(event=event or Event(kind="ci"), workspace=workspace,
                       changeset=Changeset(files=files), rule=the_rule, check_id="scan")
    return data


def run(rule: str, data: dict[str, Any], script: str = "check.py") -> tuple[int, dict[str, Any]]:
    exe = RULES / rule / script
    # As slopjudge runs a Python check: on its own interpreter (the pack imports slopjudge).
    proc = subprocess.run([sys.executable, str(exe)], input=json.dumps(data),
                          capture_output=True, text=True, cwd=exe.parent, timeout=60)
    assert proc.returncode in (0, 1), f"{rule}: exit {proc.returncode}: {proc.stdout}{proc.stderr}"
    out = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, out


def added(path: str, text: str) -> list[FileChange]:
    return [file_change(path, None, text)]


def modified(path: str, old: str, new: str) -> list[FileChange]:
    """A modification seen from a bare diff: no newContent, so scripts read the hunks only."""
    fc = file_change(path, old, new)
    fc.new_content = None
    fc.old_content = None
    return [fc]


# The pack's refuse/pass cases live in one format, tests/rules/<rule>/<case>/ (run by
# `slopjudge test` in test_self.py); this file keeps what a case folder cannot show:
# empty input, crashes, the prepare scripts' context, and workspace-shaped tool calls.


CONTENT_RULES = sorted(p.parent.name for p in RULES.glob("*/check.py"))
PREPARES = sorted(p.parent.name for p in RULES.glob("*/prepare.py"))


@pytest.mark.parametrize("rule", CONTENT_RULES)
def test_every_script_passes_an_empty_changeset(rule: str) -> None:
    assert run(rule, payload([], rule=rule)) == (0, {})


@pytest.mark.parametrize("rule", CONTENT_RULES + PREPARES)
def test_every_script_is_executable_with_a_python_shebang(rule: str) -> None:
    for name in ("check.py", "prepare.py"):
        exe = RULES / rule / name
        if exe.exists():
            assert os.access(exe, os.X_OK)
            assert exe.read_text().startswith("#!/usr/bin/env python3\n")


def test_every_script_passes_empty_stdin() -> None:
    for exe in sorted(RULES.glob("*/check.py")):
        proc = subprocess.run([sys.executable, str(exe)], input="", capture_output=True,
                              text=True, cwd=exe.parent, timeout=60)
        assert proc.returncode == 0, f"{exe}: {proc.stdout}{proc.stderr}"


def test_a_crashing_script_refuses_with_one_line() -> None:
    exe = RULES / "placeholder-code" / "check.py"
    proc = subprocess.run([sys.executable, str(exe)], input="{not json", capture_output=True,
                          text=True, cwd=exe.parent, timeout=60)
    assert proc.returncode == 2
    reason = json.loads(proc.stdout)["reason"]
    assert reason.startswith("the check crashed: JSONDecodeError") and "\n" not in reason
    assert "Traceback" not in proc.stderr


# ----------------------------------------------------------------------------- prepares


def prepare(
    rule: str, files: list[FileChange], workspace: str = "/nonexistent-ws"
) -> dict[str, Any]:
    code, out = run(rule, payload(files, rule=rule, workspace=workspace), script="prepare.py")
    assert code == 0
    return out


def test_weakened_tests_prepare_skips_without_removed_assertions() -> None:
    assert prepare(
        "weakened-tests", added("tests/test_a.py", "def test_a():\n    assert f() == 1\n")
    ) == {"skip": True}


def test_weakened_tests_prepare_lists_a_loosened_assertion() -> None:
    files = modified(
        "tests/test_a.py",
        "def test_a():\n    assert f() == 5400\n",
        "def test_a():\n    assert f() is not None\n",
    )
    ctx = prepare("weakened-tests", files)["additionalContext"]["removed_assertions"]
    assert ctx == [{"path": "tests/test_a.py", "removed_or_changed": ["assert f() == 5400"],
                    "looser": ["assert f() is not None"]}]


def test_weakened_tests_prepare_skips_an_expected_value_rewritten_with_the_code() -> None:
    test = modified(
        "tests/test_a.py",
        "def test_a():\n    assert f() == 5400\n",
        "def test_a():\n    assert f() == 5401\n",
    )
    code = modified("src/a.py", "def f():\n    return 5400\n", "def f():\n    return 5401\n")
    assert prepare("weakened-tests", test + code) == {"skip": True}
    assert "additionalContext" in prepare("weakened-tests", test)  # no code changed: ask


def test_weakened_tests_prepare_ignores_a_moved_assertion() -> None:
    old = "def test_a():\n    x = 1\n    assert f() == 1\n"
    new = "def test_a():\n    assert f() == 1\n    x = 1\n"
    assert prepare("weakened-tests", modified("tests/test_a.py", old, new)) == {"skip": True}


def test_hardcoded_results_prepare_sees_a_literal_shared_with_tests() -> None:
    files = added(
        "src/ship.py", "def cost(w):\n    if w == 2.5:\n        return 22.75\n    return 0\n"
    )
    files += added("tests/test_ship.py", "def test_cost():\n    assert cost(2.5) == 22.75\n")
    out = prepare("hardcoded-results", files)
    lines = out["additionalContext"]["suspicious_lines"]
    assert any("22.75" in s.get("literals", []) for s in lines)


def test_hardcoded_results_prepare_sees_test_detection(tmp_path: Path) -> None:
    files = added(
        "src/a.py",
        "import os\n\ndef f():\n    if os.environ.get('PYTEST_CURRENT_TEST'):\n        return 1\n",
    )
    out = prepare("hardcoded-results", files, workspace=str(tmp_path))
    assert out["additionalContext"]["suspicious_lines"][0]["signal"] == "detects a test run"


def test_hardcoded_results_prepare_skips_plain_code(tmp_path: Path) -> None:
    files = added("src/a.py", "def area(w, h):\n    return w * h\n")
    assert prepare("hardcoded-results", files, workspace=str(tmp_path)) == {"skip": True}


def test_narration_prepare_flags_restating_comments() -> None:
    src = (
        "def f(items):\n    # Initialize the count\n    count = 0\n"
        "    # Loop through the items\n    for i in items:\n"
        "        # Increment the count\n        count += 1\n    return count\n"
    )
    out = prepare("narration-comments", added("src/a.py", src))
    assert len(out["additionalContext"]["suspicious_comments"]) >= 2


def test_narration_prepare_flags_edit_narration() -> None:
    out = prepare(
        "narration-comments", added("src/a.py", "# Added retry logic as requested\nx = retry(f)\n")
    )
    assert out["additionalContext"]["suspicious_comments"][0]["kind"] == "narrates the edit"


def test_narration_prepare_skips_why_comments() -> None:
    src = (
        "def f(v):\n    # CDN overwrites the header, so take the last hop it added.\n"
        "    return v.split(',')[-1]\n"
    )
    assert prepare("narration-comments", added("src/a.py", src)) == {"skip": True}


# ----------------------------------------------------------------------------- pre-tool


def bash(command: str, ws: Path, cwd: Path | None = None) -> dict[str, Any]:
    ev = Event(kind="pre-tool", tool_name="Bash", tool_input={"command": command},
               session_id="s", cwd=str(cwd or ws))
    return payload([], workspace=str(ws), event=ev)


def file_tool(tool: str, path: str, ws: Path) -> dict[str, Any]:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    ev = Event(kind="pre-tool", tool_name=tool, tool_input={key: path, "content": "x"},
               session_id="s", cwd=str(ws))
    return payload([], workspace=str(ws), event=ev)


def test_destructive_shell_follows_cd_out_of_the_workspace(tmp_path: Path) -> None:
    inside = tmp_path / "ws"
    inside.mkdir()
    assert run("destructive-shell", bash("rm -rf build", inside))[0] == 0
    code, out = run("destructive-shell", bash("cd .. && rm -rf build", inside))
    assert code == 1 and "outside the workspace" in out["reason"]


def test_write_through_a_symlink_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "outside").mkdir()
    (ws / "link").symlink_to(tmp_path / "outside")
    code, _ = run("write-outside-workspace", file_tool("Edit", str(ws / "link" / "x.txt"), ws))
    assert code == 1


def test_notebook_edit_outside_is_refused(tmp_path: Path) -> None:
    assert (
        run("write-outside-workspace", file_tool("NotebookEdit", "/opt/nb.ipynb", tmp_path))[0] == 1
    )


@pytest.mark.parametrize("tool,arg,refuses", [
    ("Write", "{ws}/rules/skipped-tests/rule.yaml", True),
    ("Edit", "{ws}/rules/_lib/slopscan.py", True),
    ("Write", "{ws}/slopjudge.yaml", True),
    ("Edit", "{ws}/.claude/settings.json", True),
    ("Write", "{ws}/RUBRIC.md", True),
    ("Write", "{ws}/src/rules.py", False),
    ("Write", "{ws}/docs/rules.md", False),
    ("Bash", "sed -i 's/a/b/' rules/x/rule.yaml", True),
    ("Bash", "echo x >> rules/x.yaml", True),
    ("Bash", "rm -rf rules", True),
    ("Bash", "mv rules/x.yaml /tmp/", True),
    ("Bash", "git checkout -- rules/x.yaml", True),
    ("Bash", "cat rules/x/rule.yaml", False),
    ("Bash", "grep -rn description rules", False),
    ("Bash", "cp rules/x/rule.yaml /tmp/review.yaml", False),
])
def test_protect_rules(tmp_path: Path, tool: str, arg: str, refuses: bool) -> None:
    ws = tmp_path
    (ws / "rules" / "protect-rules").mkdir(parents=True)
    data = bash(arg, ws) if tool == "Bash" else file_tool(tool, arg.format(ws=ws), ws)
    data["rule"]["dir"] = str(ws / "rules" / "protect-rules")
    code, out = run("protect-rules", data)
    assert code == (1 if refuses else 0), out
    if refuses:
        assert "agents may not change them" in out["reason"]


# ----------------------------------------------------------------------------- added vs touched


def test_moved_and_reformatted_lines_are_not_added() -> None:
    old = ("def dump(g):\n    for r in g:\n        print(r, '->', g[r])\n\n\n"
           "def push(c, items):\n    try:\n        c.put(items)\n    except Exception:\n        pass\n")
    new = ("def push(c, items):\n    with c.session():\n        try:\n            c.put(items)\n"
           "        except Exception:\n            pass\n\n\n"
           "def dump(g):\n    for r in g:\n        print(\n            r,\n            \"->\",\n"
           "            g[r],\n        )\n")
    files = modified("app/grammar.py", old, new)
    assert run("swallowed-errors", payload(files))[0] == 0
    assert run("debug-leftovers", payload(files))[0] == 0
    # the same handler written anew is still found
    fresh = modified("app/grammar.py", old, old + "\n\ndef f():\n    try:\n        g()\n"
                     "    except Exception:\n        pass\n")
    assert run("swallowed-errors", payload(fresh))[0] == 1


def test_a_repository_names_its_test_data(monkeypatch: pytest.MonkeyPatch) -> None:
    files = added("regress/inputs/ignores.py", "x = call()  # type: ignore\n")
    assert run("blanket-suppressions", payload(files))[0] == 1
    monkeypatch.setenv("SLOPJUDGE_TEST_DATA", "regress/inputs/**")
    assert run("blanket-suppressions", payload(files))[0] == 0


# ------------------------------------------------------------- categories that generalize
# Each case below stands for a category of look-alike (or of miss) seen on projects the pack
# was not written on; the cases are written here, not taken from those projects.


def findings(rule: str, files: list[FileChange]) -> list[tuple[int, str]]:
    code, out = run(rule, payload(files, rule=rule))
    assert code == (1 if out.get("findings") else 0)
    return [(f["line"], f["message"]) for f in out.get("findings") or []]


@pytest.mark.parametrize("path", ["src/range.ts", "lib/range.js"])
def test_a_doc_comment_without_stars_is_documentation(path: str) -> None:
    text = (
        "/**\n"
        "  Clamp a number into a range.\n"
        "\n"
        "    const n = clamp(12, 0, 10);\n"
        "    n === 10;\n"
        "*/\n"
        "export function clamp(n, lo, hi) {\n"
        "  return Math.min(hi, Math.max(lo, n));\n"
        "}\n"
    )
    assert findings("commented-out-code", added(path, text)) == []
    # The same lines in a plain block comment are code switched off.
    plain = text.replace("/**", "/*", 1)
    assert [line for line, _ in findings("commented-out-code", added(path, plain))] == [4]


def test_comments_in_a_go_example_are_part_of_the_example() -> None:
    text = (
        "package ring_test\n\n"
        'import "fmt"\n\n'
        "func ExampleRing_Push() {\n"
        "\tr := ring.New(2)\n"
        "\t// Pushing past the size evicts the oldest, as in\n"
        "\t// r.Push(3)\n"
        "\tr.Push(1)\n"
        "\tfmt.Printf(\"n = %d\\n\", r.Len())\n"
        "\t// Output:\n"
        "\t// n = 1\n"
        "}\n"
    )
    assert findings("commented-out-code", added("ring/example_test.go", text)) == []
    # Outside an example, a commented call is still disabled code.
    lib = "package ring\n\nfunc (r *Ring) Reset() {\n\t// r.Push(0)\n\tr.n = 0\n}\n"
    assert [line for line, _ in findings("commented-out-code", added("ring/ring.go", lib))] \
        == [4]


@pytest.mark.parametrize("directive, flagged", [
    ("//nolint:errcheck", True),
    ("//nolint: errcheck", True),  # a space after the colon names the same linter
    ("//nolint:gosec,errcheck", True),
    ("//nolint:errcheck // the file was opened read-only", False),
    ("//nolint:gosec", False),
])
def test_nolint_names_are_parsed(directive: str, flagged: bool) -> None:
    text = f"package a\n\nfunc f(c io.Closer) {{\n\tc.Close() {directive}\n}}\n"
    assert bool(findings("blanket-suppressions", added("a.go", text))) == flagged


@pytest.mark.parametrize("directive, flagged", [
    ("// eslint-disable-next-line no-empty", True),
    ("// eslint-disable-next-line @typescript-eslint/no-empty-function", False),
    ("// eslint-disable-next-line no-empty-pattern", False),
    ("// eslint-disable-next-line no-empty -- the socket may be closed already", False),
    ("/* eslint-disable */", True),
])
def test_eslint_rule_names_are_matched_whole(directive: str, flagged: bool) -> None:
    text = f"{directive}\nexport function noop() {{}}\n"
    assert bool(findings("blanket-suppressions", added("src/noop.ts", text))) == flagged


def test_stubs_under_type_checking_are_declarations() -> None:
    text = (
        "from typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n"
        "    class _Reader:\n"
        "        def read(self, n: int) -> bytes:\n"
        "            ...\n\n"
        "def size(r: '_Reader') -> int:\n"
        "    return len(r.read(-1))\n"
    )
    assert findings("placeholder-code", added("pkg/io.py", text)) == []
    runtime = text.replace("if TYPE_CHECKING:", "if True:")
    assert [line for line, _ in findings("placeholder-code", added("pkg/io.py", runtime))] \
        == [6]


def test_a_base_method_its_subclasses_replace_is_no_placeholder() -> None:
    text = (
        "class Exporter:\n"
        "    def write(self, rows):\n"
        "        raise NotImplementedError\n\n"
        "class CsvExporter(Exporter):\n"
        "    def write(self, rows):\n"
        "        return '\\n'.join(','.join(r) for r in rows)\n"
    )
    assert findings("placeholder-code", added("pkg/export.py", text)) == []
    alone = text.split("class CsvExporter")[0]
    assert [line for line, _ in findings("placeholder-code", added("pkg/export.py", alone))] \
        == [3]
    js = (
        "class Store {\n"
        "  load(key) {\n"
        "    throw new Error('not implemented');\n"
        "  }\n"
        "}\n"
        "class MemoryStore extends Store {\n"
        "  load(key) { return this.map.get(key); }\n"
        "}\n"
    )
    assert findings("placeholder-code", added("src/store.js", js)) == []
    lone = js.split("class MemoryStore")[0]
    assert [line for line, _ in findings("placeholder-code", added("src/store.js", lone))] \
        == [3]



def placeholder_refusals(cwd: Path, *args: str) -> list[str]:
    from helpers import sj

    res = sj("run", *args, "--dry-run", "--format", "json", "--rules", str(RULES), "--rule",
             "placeholder-code", "--no-cache", cwd=cwd, process=True)
    (check,) = json.loads(res.stdout)["checks"]
    assert check["outcome"] in ("pass", "refuse"), check
    return [f"{f['path']}:{f['line']}" for f in check["findings"] or []]


@pytest.mark.parametrize("base, sub", [
    ("src/export.py",
     "from . import export\n\nclass CsvExporter(\n    export.Exporter,\n):\n"
     "    def header(self, columns):\n        return ','.join(columns)\n"),
    ("src/export.js",
     "const base = require('./export');\n\nclass CsvExporter extends base.Exporter {\n"
     "  header(columns) {\n    return columns.join(',');\n  }\n}\n"),
])
def test_a_base_default_a_subclass_of_the_repository_overrides_is_no_placeholder(
        tmp_path: Path, base: str, sub: str) -> None:
    """The subclass is not in the change: it is found in the work tree (a Stop hook's view)
    and in the head commit of a clone with nothing checked out (a CI job's); a method it
    does not override stays a placeholder."""
    from helpers import commit_all, git, make_repo, write_files

    py = base.endswith(".py")
    stub = ("class Exporter:\n    def header(self, columns):\n        raise NotImplementedError\n"
            "\n    def footer(self):\n        raise NotImplementedError\n") if py else (
            "class Exporter {\n  header(columns) {\n    throw new Error('not implemented');\n"
            "  }\n\n  footer() {\n    throw new Error('not implemented');\n  }\n}\n")
    footer = f"{base}:6" if py else f"{base}:7"
    repo = make_repo(tmp_path / "repo", {base.replace("export", "csv_export"): sub})
    write_files(repo, {base: stub})
    assert placeholder_refusals(repo, "--working-tree") == [footer]
    head = commit_all(repo)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--no-checkout", str(repo), str(clone))
    assert placeholder_refusals(clone, "--base", f"{head}^", "--head", head) == [footer]
    # a change that also deletes the subclass leaves both stubs placeholders
    git(repo, "rm", "-q", base.replace("export", "csv_export"))
    commit_all(repo)
    assert placeholder_refusals(repo, "--base", f"{head}^") == [f"{base}:3", footer]


def test_deliberate_output_in_tests_is_not_a_leftover() -> None:
    captured = (
        "def test_banner(capsys):\n"
        "    banner = render_banner('v1')\n"
        "    print(banner)\n"
        "    assert capsys.readouterr().out == 'v1\\n'\n"
    )
    on_failure = (
        "def test_roundtrip():\n"
        "    got = roundtrip(SAMPLE)\n"
        "    if got != SAMPLE:\n"
        "        print(diff(got, SAMPLE))\n"
        "        pytest.fail('roundtrip changed the sample')\n"
    )
    left = "def test_parse():\n    got = parse('1h')\n    print(got)\n    assert got == 3600\n"
    assert findings("debug-leftovers", added("tests/test_banner.py", captured)) == []
    assert findings("debug-leftovers", added("tests/test_rt.py", on_failure)) == []
    assert [line for line, _ in findings("debug-leftovers", added("tests/test_p.py", left))] \
        == [3]
    spied = (
        "const spy = vi.spyOn(console, 'log');\n"
        "test('greets', () => {\n  console.log(greet('a'));\n"
        "  expect(spy).toHaveBeenCalledWith('hi a');\n});\n"
    )
    assert findings("debug-leftovers", added("src/greet.test.ts", spied)) == []
    go = (
        "package a\n\nfunc BenchmarkParse(b *testing.B) {\n"
        "\tfor i := 0; i < b.N; i++ {\n\t\tParse(\"1h\")\n\t}\n"
        "\tfmt.Println(\"parsed\", b.N)\n}\n"
    )
    assert findings("debug-leftovers", added("a_test.go", go)) == []


def test_weakened_tests_gate_stays_shut_for_names_comments_and_moves() -> None:
    renamed = modified(
        "src/sum.test.js",
        "it('retuns the sum', () => expect(sum(1, 2)).toBe(3));\n",
        "it('returns the sum', () => expect(sum(1, 2)).toBe(3));\n",
    )
    assert prepare("weakened-tests", renamed) == {"skip": True}
    comment = modified(
        "tests/test_sum.py",
        "def test_sum():\n    # we assert the sum shuold be exact\n    assert sum_(1, 2) == 3\n",
        "def test_sum():\n    # the sum must be exact\n    assert sum_(1, 2) == 3\n",
    )
    assert prepare("weakened-tests", comment) == {"skip": True}
    old_file = "func TestSum(t *testing.T) {\n\tif Sum(1, 2) != 3 {\n\t\tt.Fatal(\"sum\")\n\t}\n}\n"
    moved = [file_change("sum_test.go", "package a\n\n" + old_file, "package a\n"),
             file_change("sum2_test.go", None, "package a\n\n" + old_file)]
    assert prepare("weakened-tests", moved) == {"skip": True}
    message = modified(
        "tests/test_pw.py",
        "def test_pw():\n    assert get_pw() == '', (\n        'no password expected'\n    )\n",
        "def test_pw():\n    assert get_pw() == ''\n",
    )
    assert prepare("weakened-tests", message) == {"skip": True}
    # A changed expected value with no code change still asks.
    changed = modified(
        "src/sum.test.js",
        "it('returns the sum', () => expect(sum(1, 2)).toBe(3));\n",
        "it('returns the sum', () => expect(sum(1, 2)).toBe(4));\n",
    )
    assert "additionalContext" in prepare("weakened-tests", changed)


# ------------------------------------------------------------------ judge prompts, scoped


def test_a_judge_prompt_holds_its_rubric_section_and_hunks_not_whole_files(
        tmp_path: Path) -> None:
    from helpers import commit_all, make_repo, sj

    filler = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n" for i in range(300))
    repo = make_repo(tmp_path / "repo", {
        "src/calc.py": filler + "def area(w, h):\n    return w * h\n",
        "tests/test_calc.py": "def test_area():\n    assert area(2, 3) == 6\n",
    })
    (repo / "tests/test_calc.py").write_text(
        "def test_area():\n    assert area(2, 3) is not None\n", encoding="utf-8")
    (repo / "src/calc.py").write_text(
        filler + "def area(w, h):\n    return abs(w * h)\n", encoding="utf-8")
    commit_all(repo)
    prompts = tmp_path / "prompts"
    res = sj("run", "--base", "HEAD~1", "--head", "HEAD", "--dry-run", "--rules", str(RULES),
             "--rule", "weakened-tests", "--prompts-dir", str(prompts), cwd=repo)
    assert res.returncode == 0, res.stdout + res.stderr
    [prompt] = [p.read_text(encoding="utf-8") for p in prompts.rglob("*") if p.is_file()]
    assert "**S3." in prompt and "**S2." not in prompt and "**S4." not in prompt
    assert "- src/calc.py (M)" in prompt and "- tests/test_calc.py (M)" in prompt
    assert "return abs(w * h)" in prompt  # the hunk
    assert "helper_100" not in prompt  # not the whole file: the judge Reads what it needs
    assert len(prompt) < 12_000


# ------------------------------------------------------------------ stable and preview


def test_a_preview_rule_is_off_until_the_settings_enable_it(tmp_path: Path) -> None:
    from helpers import commit_all, make_repo, sj, write_files

    repo = make_repo(tmp_path / "repo")
    write_files(repo, {
        "rules/loud/rule.yaml": (
            "description: Flags everything.\npreview: true\n"
            "measured: {corpus: a test corpus, precision: 0.5, findings: 4, "
            "false_refusals: 0.02, commits: 100, misses: nothing}\n"
            "checks:\n  - id: scan\n    script: check.py\n"),
        "rules/quiet/rule.yaml": (
            "description: Flags nothing.\nchecks:\n  - id: scan\n    script: check.py\n"),
    })
    for rid in ("loud", "quiet"):
        check = repo / "rules" / rid / "check.py"
        check.write_text("#!/bin/sh\necho '{}'\n", encoding="utf-8")
        check.chmod(0o755)

    def listed() -> dict[str, Any]:
        res = sj("rules", "--format", "json", cwd=repo)
        assert res.returncode == 0, res.stdout + res.stderr
        return {r["id"]: r for r in json.loads(res.stdout)}

    rows = listed()
    assert (rows["loud"]["status"], rows["loud"]["on"]) == ("preview", False)
    assert "precision 0.50" in rows["loud"]["why"] and "misses: nothing" in rows["loud"]["why"]
    assert (rows["quiet"]["status"], rows["quiet"]["on"]) == ("stable", True)
    text = sj("validate", cwd=repo).stdout
    assert "preview (off): loud: precision 0.50 (4 findings)" in text
    (repo / "a.txt").write_text("a\n", encoding="utf-8")
    commit_all(repo)
    res = sj("run", "--base", "HEAD~1", "--head", "HEAD", "--format", "json", cwd=repo)
    run_ids = {c["rule"] for c in json.loads(res.stdout)["checks"]}
    assert "loud" not in run_ids and "quiet" in run_ids
    for setting in ("preview: true\n", "preview: [loud]\n"):
        (repo / "slopjudge.yaml").write_text(setting, encoding="utf-8")
        assert listed()["loud"]["on"] is True
        assert "preview (on): loud" in sj("validate", cwd=repo).stdout
    (repo / "slopjudge.yaml").write_text("preview: [lodu]\n", encoding="utf-8")
    res = sj("validate", cwd=repo)
    assert res.returncode == 1 and "`preview` names lodu, which is no preview rule" in res.stdout
    (repo / "slopjudge.yaml").write_text("preview: sometimes\n", encoding="utf-8")
    res = sj("validate", cwd=repo)
    assert res.returncode != 0
    assert "slopjudge.yaml:1:1: `preview` must be true, false or a list of rule ids" in \
        res.stdout + res.stderr


# ----------------------------------------------------------------------------- the repository


def test_repository_files_are_read_from_the_head_commit_of_an_unchecked_out_clone(
        tmp_path: Path) -> None:
    """A CI job or the corpus bench may judge a commit range in a clone with no files checked
    out: the original of a versioned copy and the package.json behind a command are read
    from the head commit, not only from disk."""
    from helpers import commit_all, git, make_repo, sj, write_files

    src = make_repo(tmp_path / "src", {
        "etl/loader.py": "def load(path):\n    return open(path).read()\n",
        "package.json": '{"name": "x", "bin": {"x": "bin.js"}}\n',
        "bin.js": 'import run from "./index.js"\nrun()\n',
        "index.js": "export default function run() {\n  return 1\n}\n",
    })
    write_files(src, {
        "etl/loader_v2.py": "def load(path, enc='utf-8'):\n    return open(path, encoding=enc).read()\n",
        "index.js": "export default function run() {\n  console.log('done')\n  return 1\n}\n",
    })
    head = commit_all(src)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--no-checkout", str(src), str(clone))
    assert not (clone / "etl").exists()
    res = sj("run", "--base", f"{head}^", "--head", head, "--dry-run", "--format", "json",
             "--rules", str(RULES), "--rule", "versioned-copies", "--rule", "debug-leftovers",
             "--no-cache", cwd=clone, process=True)
    report = json.loads(res.stdout)
    outcome = {c["rule"]: c for c in report["checks"]}
    assert outcome["versioned-copies"]["outcome"] == "refuse"
    assert "duplicates 'loader.py'" in outcome["versioned-copies"]["reason"]
    # index.js is what the package's command runs: its output is no debug leftover
    assert outcome["debug-leftovers"]["outcome"] == "pass", outcome["debug-leftovers"]
