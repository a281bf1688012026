"""Per-file judges read their file as sloprail's do, and sloprail's template
behaviours (raw, dirname, funcname, tojson, undefined) render as README says.

The rule test drives the real loader and engine over a real git range holding a
create, an update, a delete and a rename, with a judge mock recording each
per-file prompt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from slopjudge.changes import changeset as cs
from slopjudge.checks import engine
from slopjudge.checks.options import RunOptions
from slopjudge.loading.loader import load_rules
from slopjudge.loading.templates import (
    TemplateRenderError,
    render,
    synthetic_payload,
    validate_template,
)
from slopjudge.model import Event, FileChange
from slopjudge.payload import file_event, file_payload, scan_markers
from tests.helpers import commit_all, executable, git, make_repo, py, write_files

# Written for this project: every per-file field, `is defined` on a delete, every extra filter.
PER_FILE_TEMPLATE = """\
FILE {{ event.path }} KIND {{ event.kind }} ON {{ event.on }} DIR {{ event.path | dirname }}
{% if event.oldPath is defined %}RENAMED FROM {{ event.oldPath }}
{% endif %}{% if event.newContent is defined %}<new>
{{ event.newContent }}</new>
{% else %}DELETED (no new content)
{% endif %}{% if event.oldContent is defined %}<old>
{{ event.oldContent | raw }}</old>
{% endif %}{% for m in event.newMarkers -%}
NEW MARKER {{ m.kind }} {{ m.fqn | funcname }} @{{ m.line }}
{% endfor %}{% for m in event.oldMarkers %}OLD MARKER {{ m.kind }} {{ m.fqn }} @{{ m.line }}
{% endfor %}MARKERS {{ event.newMarkers | tojson }}
{{ change }}
"""


def _rule(ws: Path, template: str = PER_FILE_TEMPLATE, each: str = "file") -> Path:
    folder = ws / "rules" / "per-file"
    write_files(folder, {
        "rule.yaml": ("description: reads each file's event\non: [ci]\n"
                      f"checks:\n  - id: judge\n    judge: judge.md.j2\n    each: {each}\n"),
        "judge.md.j2": template,
    })
    return folder


def _mock(tmp: Path) -> tuple[Path, Path]:
    saw = tmp / "saw"
    saw.mkdir()
    script = executable(tmp / "mock.py", py(f"""
import json, sys
prompt, _, payload = sys.stdin.read().rpartition("\\n\\n")
path = json.loads(payload)["event"]["path"]
open({str(saw)!r} + "/" + path.replace("/", "__"), "w").write(prompt)
print(json.dumps({{"pass": True, "reasoning": "ok"}}))
"""))
    return script, saw


def test_each_file_unit_sees_its_file_as_sloprail_does(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "repo", {
        "src/keep.py": "# sr:invariant pkg.mod.Keep\nx = 1\n",
        "src/gone.py": "-- sr:owner team.Data\nold body\n",
        "src/moved_from.py": "a\nb\nc\nd\ne\nf\n",
    })
    _rule(ws)
    base = commit_all(ws, "rules")
    write_files(ws, {"src/keep.py": "# sr:invariant pkg.mod.Keep\nx = 2 < 3 && y\n",
                     "docs/new.md": "new </new> page\n// sr:doc guide.Intro\n"})
    (ws / "src" / "gone.py").unlink()
    git(ws, "mv", "src/moved_from.py", "src/moved_to.py")
    commit_all(ws)
    loaded = load_rules(str(ws / "rules"), workspace=str(ws))
    assert loaded.errors == [] and [r.id for r in loaded.rules] == ["per-file"]
    script, saw = _mock(tmp_path)
    changeset = cs.from_git_range(str(ws), base, "HEAD")
    results = engine.run(loaded.rules, Event(kind="ci", cwd=str(ws)), changeset,
                         workspace=str(ws),
                         options=RunOptions(judge_mocks={"per-file/judge": str(script)}))
    assert [r.outcome for r in results] == ["pass"], results
    seen = {p.name.replace("__", "/"): p.read_text() for p in saw.iterdir()}
    assert set(seen) == {"src/keep.py", "src/gone.py", "src/moved_to.py", "docs/new.md"}

    update = seen["src/keep.py"]
    assert "FILE src/keep.py KIND PostFileUpdate ON ci DIR src\n" in update
    # Data is escaped as every value is; `raw` keeps & < > but still breaks `</`.
    assert "<new>\n# sr:invariant pkg.mod.Keep\nx = 2 &lt; 3 &amp;&amp; y\n</new>" in update
    assert "<old>\n# sr:invariant pkg.mod.Keep\nx = 1\n</old>" in update
    assert "NEW MARKER invariant Keep @1\nOLD MARKER invariant pkg.mod.Keep @1\n" in update
    assert 'MARKERS [{"fqn":"pkg.mod.Keep","kind":"invariant","line":1}]' in update
    assert "RENAMED FROM" not in update

    delete = seen["src/gone.py"]
    assert "KIND PostFileDelete" in delete and "DELETED (no new content)" in delete
    assert "<old>\n-- sr:owner team.Data\nold body\n</old>" in delete
    assert "OLD MARKER owner team.Data @1" in delete and "NEW MARKER" not in delete
    assert "MARKERS []" in delete

    create = seen["docs/new.md"]
    assert "FILE docs/new.md KIND PostFileCreate ON ci DIR docs" in create
    assert "<new>\nnew &lt;/new&gt; page\n// sr:doc guide.Intro\n</new>" in create
    assert "<old>" not in create and "NEW MARKER doc Intro @2" in create

    rename = seen["src/moved_to.py"]
    assert "KIND PostFileRename" in rename and "RENAMED FROM src/moved_from.py" in rename
    assert "<new>\na\nb\nc\nd\ne\nf\n</new>" in rename


def test_a_pre_tool_event_about_one_file_carries_its_fields(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    edit = cs.from_proposed_edits(str(ws), [("a.py", None, "# sr:todo a.b\nx = 2\n")])
    files, others = cs.split(edit, [], [])
    from slopjudge.payload import build_payload

    event = Event(kind="pre-tool", tool_name="Write",
                  tool_input={"file_path": str(ws / "a.py"), "content": "..."})
    data = build_payload(event=event, workspace=str(ws), changeset=edit, files=files,
                         others=others, change="")
    ev = data["event"]
    assert ev["kind"] == "PreFileUpdate" and ev["on"] == "pre-tool" and ev["path"] == "a.py"
    assert ev["oldContent"] == "x = 1\n" and ev["newContent"].endswith("x = 2\n")
    assert ev["newMarkers"] == [{"kind": "todo", "fqn": "a.b", "line": 1}]
    assert ev["oldMarkers"] == [] and "oldPath" not in ev and ev["tool_name"] == "Write"
    assert data["changeset"]["files"][0].keys() == file_payload(FileChange("a", "M")).keys()
    # A Bash call is about no file: its event is unchanged.
    bash = build_payload(event=Event(kind="pre-tool", tool_name="Bash",
                                     tool_input={"command": "ls"}),
                         workspace=str(ws), changeset=cs.Changeset(), files=[], others=[],
                         change="")
    assert bash["event"]["kind"] == "pre-tool" and "path" not in bash["event"]


@pytest.mark.parametrize(("text", "expected"), [
    ("// sr:invariant a.B\n", [("invariant", "a.B", 1)]),
    ("x\n  #   sr:doc  docs/x.md  \r\n", [("doc", "docs/x.md", 2)]),  # CRLF, padding
    ("-- sr:k v", [("k", "v", 1)]),  # last line without a newline
    ("code() // sr:k v\n", []),  # not a whole line
    ("// sr:k v w\n", []),  # two words after the kind
    ("// sr:k a\rb\n", []),  # a carriage return mid-line ends the fqn
    ("// sr:k a\vb\n", [("k", "a\vb", 1)]),  # RE2's \s has no vertical tab
    ("// sr:k a\u00a0b\n", [("k", "a\u00a0b", 1)]),  # nor a no-break space
    ("; sr:k v\n", []),  # an unknown leader
    ("", []),
])
def test_markers_are_read_as_sloprail_reads_them(text: str, expected: list[Any]) -> None:
    assert [(m["kind"], m["fqn"], m["line"]) for m in scan_markers(text)] == expected


def test_file_event_keeps_absent_content_absent() -> None:
    ev = file_event({"kind": "stop", "cwd": "/w", "path": "stale"},
                    {"path": "x", "status": "D", "oldPath": None, "oldContent": "gone\n",
                     "newContent": None})
    assert ev["kind"] == "PostFileDelete" and ev["on"] == "stop" and ev["path"] == "x"
    assert "newContent" not in ev and ev["oldContent"] == "gone\n" and ev["newMarkers"] == []
    binary = file_event({"kind": "ci"}, {"path": "img.png", "status": "M", "oldContent": None,
                                         "newContent": None})
    assert "oldContent" not in binary and "newContent" not in binary


# --- the filters and undefined values, rendered -------------------------------------


def _render(tmp_path: Path, text: str, **changes: Any) -> str:
    path = tmp_path / "judge.md.j2"
    path.write_text(text)
    payload = synthetic_payload(str(tmp_path), each="file")
    payload.update(changes)
    return render(str(path), payload, rule_dir=str(tmp_path), template_dirs=[])


def test_raw_keeps_markup_characters_but_never_a_closing_tag(tmp_path: Path) -> None:
    out = _render(tmp_path, "<d>{{ additionalContext.v | raw }}</d>|{{ additionalContext.v }}",
                  additionalContext={"v": 'a < b && "c" </d><x>'})
    assert out == '<d>a < b && "c" <\\/d><x></d>|a &lt; b &amp;&amp; "c" &lt;/d&gt;&lt;x&gt;'
    # Trusted text (the rubric, a set block of the template) stays verbatim.
    assert _render(tmp_path, "{% set t %}<b></b>{% endset %}{{ t | raw }}") == "<b></b>"


@pytest.mark.parametrize(("value", "expected"), [
    ("a/b/c.py", "a/b"), ("c.py", "."), ("", "."), ("/c.py", "/"), ("a/b/", "a/b"),
    ("//a", "/"), ("a//b", "a"), ("../x", ".."),
])
def test_dirname_is_gos_path_dir(tmp_path: Path, value: str, expected: str) -> None:
    out = _render(tmp_path, "{{ additionalContext.p | dirname }}", additionalContext={"p": value})
    assert out == expected


def test_funcname_and_tojson(tmp_path: Path) -> None:
    out = _render(tmp_path, "{{ 'e2e.TestFoo' | funcname }} {{ 'plain' | funcname }}")
    assert out == "TestFoo plain"
    value = {"b": ["x & y", "<a>", "</file>", "\u2028"], "a": 1}
    out = _render(tmp_path, "{{ additionalContext.v | tojson }}", additionalContext={"v": value})
    assert out == '{"a":1,"b":["x & y","<a>","<\\/file>","\\u2028"]}'
    assert json.loads(out) == value  # round-trips
    out = _render(tmp_path, "{{ additionalContext.v | tojson(indent=2) }}",
                  additionalContext={"v": {"k": [1]}})
    assert out == '{\n  "k": [\n    1\n  ]\n}'
    with pytest.raises(TemplateRenderError, match="indent must be an integer"):
        _render(tmp_path, "{{ 1 | tojson(indent='x') }}")


def test_undefined_is_lenient_only_on_a_present_parent(tmp_path: Path) -> None:
    assert _render(tmp_path, "[{{ event.nope }}]{% if event.nope %}x{% endif %}") == "[]"
    for text in ("{{ event.nope.deeper }}", "{% for x in event.nope %}{% endfor %}",
                 "{{ additionalContext.nope }}"):
        with pytest.raises(TemplateRenderError, match="no such value"):
            _render(tmp_path, text, additionalContext={"present": 1})


def test_the_load_check_stays_strict(tmp_path: Path) -> None:
    path = tmp_path / "judge.md.j2"

    def errors(text: str, each: str) -> list[str]:
        path.write_text(text)
        return [e.message for e in validate_template(
            str(path), rule_dir=str(tmp_path), template_dirs=[], each=each)]

    assert errors(PER_FILE_TEMPLATE, "file") == []
    assert errors("{{ event.newContnet }}", "file") != []  # a typo is still refused
    problems = errors("{{ event.path }}", "changeset")
    assert problems and "set `each: file`" in problems[0]
    assert errors("{% if event.path is defined %}{{ event.path }}{% endif %}", "changeset") == []
    assert errors("{{ x | nosuchfilter }}", "file") != []


def test_a_changeset_judge_reading_event_path_does_not_load(tmp_path: Path) -> None:
    ws = make_repo(tmp_path / "repo")
    _rule(ws, "{{ event.path }}\n", each="changeset")
    loaded = load_rules(str(ws / "rules"), workspace=str(ws))
    assert loaded.rules == []
    assert "set `each: file`" in str(loaded.errors[0])
