"""The rule pack's regular expressions are compiled only where a text can match them, and a
file a process has read is shared by the pack's checks it runs, without changing a finding.

``slopscan.Later`` compiles a pattern on first use and answers a text that holds none of
its ``words`` without compiling it: every ``words`` claim in the pack is checked here
against texts made to match the pattern (hypothesis ``from_regex``) and against every line
of the slop corpora and rule cases. Running several of the pack's scripts in one process
(as slopjudge does) must give each the output it gives run alone.
"""

from __future__ import annotations

import importlib.util
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slopjudge.model import Changeset, Event, FileChange, Rule
from slopjudge.payload import for_rule

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules"
LIB = RULES / "_lib"
SCRIPTS = sorted([*RULES.glob("*/check.py"), *RULES.glob("*/prepare.py")])


def _load(path: Path) -> ModuleType:
    """A pack module imported as a module (its checks run only as ``__main__``)."""
    if str(LIB) not in sys.path:
        sys.path.insert(0, str(LIB))
    name = "pack_" + re.sub(r"\W", "_", str(path.relative_to(RULES)))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _laters(value: Any, depth: int = 0) -> Iterator[Any]:
    """The ``Later`` patterns in a module-level value (tables of them included)."""
    if type(value).__name__ == "Later":
        yield value
    elif depth < 2 and isinstance(value, (list, tuple)):
        for item in value:
            yield from _laters(item, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for item in value.values():
            yield from _laters(item, depth + 1)


def _with_words() -> list[Any]:
    found = []
    seen: set[int] = set()  # a table one module imports from another is checked once
    _load(SCRIPTS[0])  # puts _lib on sys.path
    libs = [importlib.import_module(name) for name in ("slopscan", "secretpatterns")]
    for path, module in [(LIB / "slopscan.py", libs[0]), (LIB / "secretpatterns.py", libs[1]),
                         *((p, _load(p)) for p in SCRIPTS)]:
        for name, value in sorted(vars(module).items()):
            for k, rx in enumerate(_laters(value)):
                if rx.words and id(rx) not in seen:
                    seen.add(id(rx))
                    found.append(pytest.param(rx, id=f"{path.parent.name}:{name}:{k}"))
    return found


WITH_WORDS = _with_words()


def _corpus_texts() -> list[str]:
    """Every added line of the slop corpora's diffs and the rule cases' files, and each
    diff's added lines joined (patterns that span lines)."""
    texts: list[str] = []
    for diff in sorted((ROOT / "tests" / "fixtures").glob("slop*/*.diff")):
        added = [ln[1:] for ln in diff.read_text(encoding="utf-8", errors="replace").splitlines()
                 if ln.startswith("+") and not ln.startswith("+++")]
        texts += added + ["\n".join(added)]
    for case in sorted((ROOT / "tests" / "rules").rglob("*")):
        if case.is_file() and not case.is_symlink() and case.stat().st_size < 200_000:
            texts += case.read_text(encoding="utf-8", errors="replace").splitlines()
    return texts


CORPUS = _corpus_texts()


def test_the_pack_states_words_for_its_patterns() -> None:
    assert len(WITH_WORDS) >= 58  # a prefilter lost would pass the tests below unseen
    # (Three Python prefilters are plain word lists now, `ss.may_hold(..., fold=False)`:
    # a pattern that was only those words joined by `|` needs no regex.)


@pytest.mark.parametrize("rx", WITH_WORDS)
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_every_match_holds_one_of_the_words(rx: Any, data: st.DataObject) -> None:
    """A text the pattern matches is never answered by the words alone."""
    text = data.draw(st.from_regex(rx.compiled()))
    if rx.compiled().search(text):
        assert rx.may_hold(text), f"{rx.pattern!r} matches {text!r}, none of {rx.words}"
        assert rx.search(text) is not None


@pytest.mark.parametrize("rx", WITH_WORDS)
def test_no_line_of_the_corpora_is_missed_by_the_words(rx: Any) -> None:
    compiled = rx.compiled()
    missed = [t for t in CORPUS if compiled.search(t) and not rx.may_hold(t)]
    assert not missed, f"{rx.pattern!r} matches {missed[:3]!r}, none of {rx.words}"


def test_later_is_a_compiled_pattern_compiled_when_first_needed() -> None:
    ss = _load(LIB / "slopscan.py")
    rx = ss.Later(r"\bTODO\b:?\s*(\w+)", re.I, words=("todo",))
    assert rx.search("nothing to see here") is None
    assert rx.match("no") is None and list(rx.finditer("none")) == []
    assert rx._rx is None  # answered by its words: not compiled
    assert rx.search("x = 1  # ToDo: later").group(1) == "later"
    assert rx._rx is not None
    assert rx.sub("-", "a TODO b") == "a -"
    assert rx.findall("todo one, TODO two") == ["one", "two"]
    # re.I folds the Kelvin sign onto k: a text that is not ASCII is always searched
    kelvin = ss.Later(r"token", re.I, words=("token",))
    assert kelvin.search("to\u212aen") is not None


def test_importing_a_pack_script_compiles_no_regular_expression() -> None:
    """What a script's module defines is compiled when a change reaches it, not at import."""
    code = (
        "import re, sys, importlib.util\n"
        "seen = []\n"
        "orig = re._compile\n"
        "def spy(p, f):\n"
        "    seen.append(p)\n"
        "    return orig(p, f)\n"
        f"sys.path.insert(0, {str(LIB)!r})\n"
        "import json, slopscan, hookio\n"  # as the hook has them; slopjudge's are not the pack's
        "re._compile = spy\n"
        "for i, path in enumerate(sys.argv[1:]):\n"
        "    spec = importlib.util.spec_from_file_location(f'm{i}', path)\n"
        "    m = importlib.util.module_from_spec(spec)\n"
        "    spec.loader.exec_module(m)\n"
        "print(len(seen), seen[:5])\n"
    )
    scripts = [str(p) for p in SCRIPTS if "import slopscan" in p.read_text()]
    proc = subprocess.run([sys.executable, "-c", code, *scripts], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("0 "), proc.stdout


def test_a_write_time_script_imports_no_re_until_a_pattern_is_compiled() -> None:
    """The scripts a Write runs at PreToolUse import `re` (and the enum, functools and
    collections it loads, half a `python -c pass`) only when a change reaches a pattern.
    `-S`: no site, whose editable-install finder imports `re` itself."""
    scripts = [str(p) for p in sorted(RULES.glob("*/check.py"))
               if "Write" in (p.parent / "rule.yaml").read_text(encoding="utf-8")]
    code = ("import sys\n"
            f"sys.path[:0] = [{str(LIB)!r}, {str(ROOT)!r}]\n"
            "from _frozen_importlib_external import SourceFileLoader\n"
            "for i, path in enumerate(sys.argv[1:]):\n"
            "    exec(SourceFileLoader(f'm{i}', path).get_code(f'm{i}'),\n"
            "         {'__name__': f'm{i}', '__file__': path})\n"
            "print(sorted(m for m in ('re', 'enum', 'functools', 'collections')\n"
            "             if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-S", "-c", code, *scripts], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert len(scripts) >= 14 and proc.stdout.strip() == "[]", proc.stdout


# ------------------------------------------------------------------ one process, many checks


def _new_file(path: str, text: str) -> FileChange:
    """An added file, with its real unified diff."""
    lines = text.splitlines(keepends=True)
    diff = (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n"
            f"+++ b/{path}\n@@ -0,0 +1,{len(lines)} @@\n" + "".join("+" + ln for ln in lines))
    return FileChange(path=path, status="A", old_content=None, new_content=text, diff=diff)


def _payload(files: list[FileChange], rule: str, event: Event | None = None) -> dict[str, Any]:
    the_rule = Rule(id=rule, path=str(RULES / rule / "rule.yaml"), dir=str(RULES / rule),
                    description="")
    _, data = for_rule(event=event or Event(kind="ci"), workspace=str(ROOT), rule=the_rule,
                       changeset=Changeset(files=files), check_id="scan")
    return data


SLOPPY = '''"""Prices."""
import time


def total(prices: list[float]) -> float:
    # total = sum(p for p in prices)
    try:
        time.sleep(2)  # give the cache time to settle
        return sum(prices)
    except Exception:
        pass


def refund(order):
    raise NotImplementedError  # TODO: implement refunds
'''


def _in_one_process(jobs: list[tuple[Path, str]]) -> list[tuple[int, str]]:
    """Each (script, payload) run one after another in this process, as ``__main__`` with
    its payload on stdin, the pack's ``_lib`` staying imported between them (as slopjudge
    runs them); the exit status and output of each."""
    from importlib.machinery import SourceFileLoader

    results = []
    saved = sys.stdin, sys.stdout, list(sys.path), sys.argv, sys.modules["__main__"]
    for name in ("slopscan", "hookio", "secretpatterns"):
        sys.modules.pop(name, None)  # as a fresh process has them: not imported yet
    try:
        for script, payload in jobs:
            module = ModuleType("__main__")
            module.__file__ = str(script)
            sys.modules["__main__"] = module
            sys.path[:] = [str(script.parent), *saved[2]]
            sys.stdin, sys.stdout, sys.argv = io.StringIO(payload), io.StringIO(), [str(script)]
            status = 0
            try:
                exec(SourceFileLoader("__main__", str(script)).get_code("__main__"),  # noqa: S102
                     module.__dict__)
            except SystemExit as exc:
                status = int(exc.code or 0)
            results.append((status, sys.stdout.getvalue()))
    finally:
        sys.stdin, sys.stdout, sys.path[:], sys.argv, sys.modules["__main__"] = (
            saved[0], saved[1], saved[2], saved[3], saved[4])
        for name in ("slopscan", "hookio", "secretpatterns"):
            sys.modules.pop(name, None)
    return results


def _alone(script: Path, payload: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, str(script)], input=payload, capture_output=True,
                          text=True, timeout=60, cwd=script.parent)
    return proc.returncode, proc.stdout


@pytest.mark.parametrize("event", [Event(kind="ci"), Event(kind="pre-tool", tool_name="Write")],
                         ids=["ci", "pre-tool"])
def test_checks_in_one_process_find_what_each_finds_alone(event: Event) -> None:
    """The second check of a file reuses the first's reading of it: their findings are
    those of each script run as its own process."""
    files = [_new_file("src/prices.py", SLOPPY)]
    rules = ["swallowed-errors", "sleep-waits", "placeholder-code", "commented-out-code",
             "hardcoded-secrets", "emoji-marketing"]
    jobs = [(RULES / r / "check.py", json.dumps(_payload(files, r, event))) for r in rules]
    together = _in_one_process(jobs)
    alone = [_alone(script, payload) for script, payload in jobs]
    assert together == alone
    refused = [r for r, (status, _) in zip(rules, alone, strict=True) if status == 1]
    assert refused == ["swallowed-errors", "placeholder-code", "commented-out-code"], alone


def test_a_file_entry_is_read_once_per_process_and_only_when_equal() -> None:
    ss = _load(LIB / "slopscan.py")
    files = [_new_file("src/prices.py", SLOPPY)]
    raw = json.dumps(_payload(files, "swallowed-errors"))
    first = list(ss.files(json.loads(raw)))
    again = list(ss.files(json.loads(raw)))  # another check's copy of the same payload
    assert len(first) == 1 and again[0] is first[0]
    lexed = first[0].lexed()
    assert again[0].lexed() is lexed
    changed = json.loads(raw)
    changed["changeset"]["files"][0]["hunks"][0]["added"][0][1] = '"""Costs."""'
    other = list(ss.files(changed))
    assert other[0] is not first[0] and other[0] != first[0]


def test_pyast_walks_a_tree_the_real_ast_made() -> None:
    """A rule of the person's own may hand `_lib`'s helpers a tree from `ast.parse`."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import ast, pyast; "
            "t = ast.parse('def f():\\n    \"doc\"\\n'); "
            "print(len(list(pyast.walk(t))), pyast.get_docstring(t.body[0]))")
    out = subprocess.run([sys.executable, "-c", code, str(LIB)], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["5", "doc"]
