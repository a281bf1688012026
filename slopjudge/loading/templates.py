"""Judge templates: a sandboxed Jinja2 environment that keeps data inert, strict when
a rule loads (what it guarantees, and where it follows sloprail's: docs/judges.md)."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import posixpath
import threading
import time
import traceback
from collections.abc import Iterable
from functools import lru_cache, wraps
from pathlib import Path
from typing import Any

import jinja2
from jinja2 import meta, nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup

from slopjudge.model import Changeset, Commit, Event, FileChange, LoadError, Rule
from slopjudge.payload import FILE_EVENT_KEYS, build_payload, file_event, payload_keys

# The top-level names of the judge context: the payload's (SPEC §3, defined by
# schemas/payload.schema.json) and the two only templates see.
CONTEXT_KEYS: tuple[str, ...] = (
    *payload_keys(),
    "transcriptPath",  # sloprail's name for event.transcript_path (templates only)
    "unit",  # which part of the change this prompt judges (checks/split.py)
    "subject",  # a rule with `subjects` only: the subject judged (checks/subjects.py)
)

_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def escape_data(value: Any) -> Markup:
    """``value`` safe to interpolate into a prompt: no tag can be closed or opened (the
    environment's ``finalize``: Jinja's own escape then does nothing)."""
    if hasattr(value, "__html__"):
        return Markup(value.__html__())
    return Markup(str(value).translate(_ESCAPES))


def _break_close(text: str) -> str:
    # sloprail's own guard: a value may hold any text but ``</``, so it cannot
    # close the tag it sits in; JSON reads ``<\/`` back as ``</``.
    return text.replace("</", "<\\/")


def _raw(value: Any) -> Markup:
    """No entities, but every ``</`` still broken (sloprail's ``raw`` trusts the value)."""
    return escape_data(value) if hasattr(value, "__html__") else Markup(_break_close(str(value)))


def _dirname(value: Any) -> str:
    """Go's ``path.Dir``, as sloprail's ``dirname`` (Go cleans a leading ``//``, POSIX not)."""
    cleaned = posixpath.normpath(posixpath.dirname(str(value)) or ".")
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def _tojson(value: Any, indent: int | None = None) -> Markup:
    """sloprail's ``tojson``: keys sorted, compact, only ``</`` broken."""
    if indent is not None and (not isinstance(indent, int) or isinstance(indent, bool)):
        raise TypeError(f"tojson: indent must be an integer, not {indent!r}")
    text = json.dumps(
        value, sort_keys=True, ensure_ascii=False,
        indent=indent, separators=(",", ": ") if indent is not None else (",", ":"),
        # A stand-in of the synthetic payload reads as a sample; anything else fails as json's.
        default=lambda v: "sample" if isinstance(v, _Anything) else json.JSONEncoder().default(v),
    )
    # Go's encoder escapes these two line separators even without HTML escaping.
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(_break_close(text))


class _Prepared(dict[str, Any]):
    """Prepare's ``additionalContext`` (and every mapping inside it) while rendering;
    ``where`` names it for the author (``additionalContext.files[0]``)."""

    where = "additionalContext"


def _prepared(value: Any, where: str = "additionalContext") -> Any:
    if isinstance(value, dict) and not isinstance(value, (_Prepared, _AnyMapping)):
        wrapped = _Prepared({k: _prepared(v, f"{where}.{k}") for k, v in value.items()})
        wrapped.where = where
        return wrapped
    if isinstance(value, list):
        return [_prepared(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


class _SloprailUndefined(jinja2.StrictUndefined):
    """sloprail's (gonja's) undefined where it cannot hide a mistake: a key missing on a
    present parent prints as "" and tests false; the load check stays strict."""

    __slots__ = ()

    def _lenient(self) -> bool:
        parent = self._undefined_obj
        # Prepare's output stays strict: an empty value there would ask the judge
        # about less than the author meant.
        return parent is not jinja2.utils.missing and not isinstance(parent, _Prepared)

    @property
    def _undefined_message(self) -> str:
        parent, name = self._undefined_obj, self._undefined_name
        if not isinstance(parent, _Prepared) or self._undefined_hint:
            return super()._undefined_message
        keys = sorted(str(k) for k in parent)
        hint = difflib.get_close_matches(str(name), keys, n=1)
        tip = f"; did you mean {parent.where}.{hint[0]}?" if hint else ""
        return (f"prepare's output has no {parent.where}.{name} (it has "
                f"{', '.join(keys) or 'no keys'}{tip}); test optional keys with `is defined`")

    def __str__(self) -> str:  # type: ignore[override]
        return "" if self._lenient() else self._fail_with_undefined_error()

    def __bool__(self) -> bool:  # type: ignore[override]
        return False if self._lenient() else self._fail_with_undefined_error()


class TemplateRenderError(Exception):
    """``str()`` is ``path:line: message``."""


# Wall-clock limits on a render (at load, and for a judge's prompt): past them the
# template is an error at the line it had reached, never a hang.
LOAD_TIME_LIMIT_S = 3.0
RENDER_TIME_LIMIT_S = 10.0
# Values no prompt needs, refused before Python spends memory or minutes on them.
MAX_INT_BITS = 100_000
MAX_REPEAT_ITEMS = 10_000_000


class TemplateTimeout(Exception):
    pass


_clock = threading.local()  # ``end``: this thread's render deadline (monotonic), if any


def check_deadline() -> None:
    end = getattr(_clock, "end", None)
    if end is not None and time.monotonic() > end:
        raise TemplateTimeout(f"the template ran longer than {_clock.limit:g} s and was "
                              "stopped (a loop or a value too large for a prompt)")


def _render(template: jinja2.Template, payload: dict[str, Any], limit: float) -> str:
    """Render ``payload``, stopped past ``limit`` seconds in any thread (no alarm signal
    reaches a judge's worker): the clock is checked in every block, call, filter and test (a
    trace function cost twice as much). A huge number or repetition is refused before it
    runs. The rubric is trusted text (RUBRIC.md), kept verbatim."""
    _clock.end, _clock.limit = time.monotonic() + limit, limit
    try:
        return template.render(dict(
            payload, transcriptPath=payload["event"].get("transcript_path"),
            additionalContext=_prepared(payload["additionalContext"]),
            rubric=Markup(payload["rubric"])))
    finally:
        _clock.end = None  # never nested: no filter, test or global renders a template


class _DeadlineCodeGenerator(CodeGenerator):
    def blockvisit(self, body: Iterable[nodes.Node], frame: Frame) -> None:
        self.writeline("environment.check_deadline()")
        super().blockvisit(body, frame)


class _Sandbox(ImmutableSandboxedEnvironment):
    """``**`` and ``*`` checked before they run; intercepting them also stops Jinja
    folding ``{{ 10**10**8 }}`` into a constant while it compiles, past any time limit."""

    intercepted_binops = frozenset({"**", "*"})
    code_generator_class = _DeadlineCodeGenerator
    check_deadline = staticmethod(check_deadline)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        check_deadline()
        return super().call(__context, __obj, *args, **kwargs)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        ints = isinstance(left, int) and isinstance(right, int)  # a bool's one bit: never large
        if operator == "**" and ints and right > 0 and abs(left) > 1:
            if right * (abs(left).bit_length() - 1) > MAX_INT_BITS:
                raise SecurityError(f"{left} ** {right} is too large a number for a template")
        if operator == "*":
            if ints and left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise SecurityError("a product too large a number for a template")
            for seq, n in ((left, right), (right, left)):
                repeats = isinstance(seq, (str, list, tuple)) and isinstance(n, int)
                if repeats and len(seq) * n > MAX_REPEAT_ITEMS:
                    raise SecurityError(f"repeating a {type(seq).__name__} {n} times makes "
                                        "more than a prompt holds")
        return super().call_binop(context, operator, left, right)


@lru_cache(maxsize=64)
def _environment(search_path: tuple[str, ...], strict: bool) -> ImmutableSandboxedEnvironment:
    env = _Sandbox(
        loader=jinja2.FileSystemLoader(list(search_path)),
        undefined=jinja2.StrictUndefined if strict else _SloprailUndefined,
        # On for *.md.j2 as SPEC §5 asks, and for every other judge template too:
        # no prompt format is better off letting data close its tags.
        autoescape=True,
        finalize=escape_data,
        keep_trailing_newline=True,
        auto_reload=True,
    )
    env.filters.update(e=escape_data, escape=escape_data, raw=_raw, dirname=_dirname,
                       tojson=_tojson, funcname=lambda value: str(value).rpartition(".")[2])
    env.filters.update({name: _checked(fn) for name, fn in env.filters.items()})
    env.tests.update({name: _checked(fn) for name, fn in env.tests.items()})
    return env


def _checked(fn: Any) -> Any:
    """A loop inside a filter or a loop's test runs no block of its own."""

    @wraps(fn)  # keeps Jinja's pass_context marks
    def checked(*args: Any, **kwargs: Any) -> Any:
        check_deadline()
        return fn(*args, **kwargs)

    return checked


def _locate(
    path: str, rule_dir: str, template_dirs: list[str], *, strict: bool = False
) -> tuple[ImmutableSandboxedEnvironment, str]:
    """The environment for a rule and the loader name of ``path`` inside it."""
    target = Path(os.path.abspath(path))
    search = [os.path.abspath(rule_dir), *(os.path.abspath(d) for d in template_dirs)]
    root = next((r for r in search if target.is_relative_to(r)), None)
    if root is None:  # outside every search folder: its own folder is searched first
        search.insert(0, root := str(target.parent))
    return _environment(tuple(search), strict), target.relative_to(root).as_posix()


def render(path: str, context: dict[str, Any], *, rule_dir: str, template_dirs: list[str]) -> str:
    env, name = _locate(path, rule_dir, template_dirs)
    try:
        return _render(env.get_template(name), context, RENDER_TIME_LIMIT_S)
    except Exception as exc:  # every failure becomes one clear line
        e = _explain(exc, os.path.abspath(path))
        raise TemplateRenderError(f"{e.path}:{e.line}: {e.message}") from None


def template_sha256(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


class _Anything:
    """Any value prepare or a tool call may supply, so templates load."""

    def __getattr__(self, name: str) -> Any:
        # Jinja and the sandbox probe these: they must read as absent.
        if name.startswith(("_", "jinja")) or name in ("unsafe_callable", "alters_data"):
            raise AttributeError(name)
        return _Anything()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _Anything()

    __getitem__ = __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __mod__ = (
        __call__)

    def __iter__(self) -> Any:
        return iter((_Anything(),))

    def __str__(self) -> str:
        return "sample"

    def __int__(self) -> int:
        return 1

    __index__ = __len__ = __int__

    def __float__(self) -> float:
        return 1.0

    def __lt__(self, other: Any) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__


class _AnyMapping(dict[str, Any]):
    def __missing__(self, key: Any) -> Any:
        return _Anything()


_SAMPLE_DIFF = """\
diff --git a/src/example.py b/src/example.py
index 1111111..2222222 100644
--- a/src/example.py
+++ b/src/example.py
@@ -1,2 +1,2 @@
 import os
-value = 1
+value = 2
"""


def synthetic_payload(
    rule_dir: str = "/rules/example", *, each: str = "changeset"
) -> dict[str, Any]:
    """A payload with every SPEC §3 key and one sample file, for load-time rendering
    (``each="file"``: the event is that file's, every field in)."""
    sample = FileChange(
        path="src/example.py", status="M", old_path="src/example.py",
        old_content="import os\nvalue = 1\n", new_content="import os\nvalue = 2\n",
        diff=_SAMPLE_DIFF, added=1, removed=1,
    )
    changeset = Changeset(base="0" * 40, head="1" * 40, files=[sample],
                          commits=[Commit(sha="1" * 40, subject="Change value", body="")])
    event = Event(kind="stop", tool_name="Write", tool_input=_AnyMapping(),
                  session_id="synthetic-session",
                  transcript_path="/tmp/synthetic-transcript.jsonl", cwd="/workspace")
    payload = build_payload(
        event=event, workspace="/workspace", changeset=changeset, files=[sample],
        others=[{"path": "README.md", "status": "M"}], change=_SAMPLE_DIFF,
        rule=Rule(id="example", path=os.path.join(rule_dir, "rule.yaml"), dir=rule_dir,
                  description="a sample rule"),
        check_id="check-1",
    )
    payload["event"].update(argv=[["git", "status"]], raw="git status", invocations=[
        {"bin": "git", "argv": ["git", "status"], "flags": {}, "cwd": "/workspace", "env": {}}])
    cite = {"quote": "use short sentences", "sourceTypes": ["user"], "line": 1,
            "path": "/tmp/synthetic-transcript.jsonl", "message": "Please use short sentences.",
            "call": "", "files": ["src/example.py"]}
    payload["event"]["citations"] = payload["changeset"]["citations"] = [cite]
    # Only a rule with `subjects` has one; a template reading it must load.
    payload["subject"] = {"id": "example", "files": ["src/example.py"], "context": {},
                          "fingerprint": ""}
    if each == "file":
        file = payload["changeset"]["files"][0]
        marked = dict(file, newContent=f"{file['newContent']}# sr:example src.example\n")
        payload["event"] = file_event(payload["event"], marked, [cite])
        payload["event"]["oldPath"] = "src/old_example.py"  # a rename's; every key must load
    payload["additionalContext"] = _AnyMapping()
    payload["rubric"] = "Sample rubric.\n"
    payload["unit"] = {"index": 1, "count": 1, "files": ["src/example.py"],
                       "hunks": {"first": 1, "last": 1, "of": 1}, "whole": True}
    return payload


def _explain(exc: BaseException, path: str) -> LoadError:
    """Where ``exc`` happened in a template (``path`` when no template frame says) and why."""
    if isinstance(exc, jinja2.TemplateSyntaxError):
        return LoadError(exc.filename or path, exc.lineno or 1, 1, exc.message or str(exc))
    # The innermost template frame: Jinja rewrites them to carry the template's file and line.
    where, line = next(((fs.filename, fs.lineno or 1)
                        for fs in reversed(traceback.extract_tb(exc.__traceback__))
                        if fs.filename and not fs.filename.endswith((".py", ".pyc"))
                        and os.path.isfile(fs.filename)), (path, 1))
    if isinstance(exc, SecurityError):
        return LoadError(where, line, 1, f"sandbox: {exc}")
    if isinstance(exc, TemplateTimeout):
        return LoadError(where, line, 1, str(exc))
    if isinstance(exc, jinja2.UndefinedError):
        per_file = any(f"attribute '{k}'" in str(exc) for k in FILE_EVENT_KEYS)
        hint = (" (event.path, oldContent, newContent, oldPath and the markers are a per-file"
                " judge's: set `each: file`, or test `is defined`)") if per_file else ""
        return LoadError(where, line, 1, f"the judge context has no such value: {exc}{hint}")
    if isinstance(exc, jinja2.TemplateNotFound):
        return LoadError(where, line, 1, f"template not found: {exc.name}")
    return LoadError(where, line, 1, f"template fails to render: {type(exc).__name__}: {exc}")


def _static_problems(
    env: ImmutableSandboxedEnvironment, name: str, seen: set[str], at: tuple[str, int]
) -> list[LoadError]:
    """Problems visible without rendering, in this template (``at``: where it is named) and
    the ones it includes."""
    if name in seen:
        return []
    seen.add(name)
    assert env.loader is not None  # the environments made here always have a loader
    try:
        source, filename, _ = env.loader.get_source(env, name)
        ast = env.parse(source, name, filename)
    except jinja2.TemplateNotFound:
        return [LoadError(*at, 1, f"template not found: {name}")]
    except jinja2.TemplateSyntaxError as exc:
        return [_explain(exc, name)]
    except (OSError, UnicodeDecodeError) as exc:
        return [LoadError(*at, 1, f"cannot read template: {exc}")]
    where = filename or name
    problems: list[LoadError] = []
    # Unknown filters and tests, even in branches a render would not reach.
    for node in ast.find_all((nodes.Filter, nodes.Test)):
        kind = "filter" if isinstance(node, nodes.Filter) else "test"
        if node.name not in (env.filters if kind == "filter" else env.tests):
            problems.append(LoadError(where, node.lineno, 1, f"unknown {kind} {node.name!r}"))
    if problems:
        return problems
    for var in sorted(meta.find_undeclared_variables(ast) - {*CONTEXT_KEYS, *env.globals}):
        line = next((n.lineno for n in ast.find_all(nodes.Name) if n.name == var), 1)
        hint = difflib.get_close_matches(var, CONTEXT_KEYS, n=1)
        tip = f" (did you mean {hint[0]!r}?)" if hint else ""
        problems.append(LoadError(where, line, 1, f"unknown variable {var!r}{tip}; the "
                                  "judge context has " + ", ".join(CONTEXT_KEYS)))
    for access in ast.find_all((nodes.Getattr, nodes.Getitem)):
        key = access.attr if isinstance(access, nodes.Getattr) else getattr(access, "arg", None)
        attr = key.value if isinstance(key, nodes.Const) else key
        if isinstance(attr, str) and attr.startswith("_"):
            problems.append(LoadError(where, access.lineno, 1,
                                      f"sandbox: access to {attr!r} is not allowed in a template"))
    refs: Any = ast.find_all((nodes.Include, nodes.Import, nodes.FromImport, nodes.Extends))
    for ref in refs:
        # A name, or for an include a list of them, the first found used (select_template).
        given = ref.template
        listed = isinstance(given, (nodes.Tuple, nodes.List))
        if listed and not isinstance(ref, nodes.Include):
            problems.append(LoadError(where, ref.lineno, 1, "only `include` takes a list of "
                                      "templates; name one"))
            continue
        items = given.items if listed else [given]
        names = [n.value for n in items if isinstance(n, nodes.Const) and isinstance(n.value, str)]
        if not names or len(names) < len(items):
            continue  # a computed name: checked when it renders
        found = next((n for n in names if _findable(env, n)), None)
        if found is not None or not getattr(ref, "ignore_missing", False):
            problems += _static_problems(env, found or names[0], seen, (where, ref.lineno))
    return problems


def _findable(env: ImmutableSandboxedEnvironment, name: str) -> bool:
    try:
        env.loader.get_source(env, name)  # type: ignore[union-attr]
    except jinja2.TemplateNotFound:
        return False
    except Exception:  # noqa: BLE001 - there but unreadable: _static_problems says so
        return True
    return True


def validate_template(
    path: str, *, rule_dir: str, template_dirs: list[str], each: str = "changeset"
) -> list[LoadError]:
    """Every problem of a template, rendered against a synthetic payload with strict
    undefined: every field a payload can carry is in it, so a name it lacks is a mistake."""
    target = os.path.abspath(path)
    env, name = _locate(target, rule_dir, template_dirs, strict=True)
    try:
        problems = _static_problems(env, name, set(), (target, 1))
        if not problems:
            payload = synthetic_payload(rule_dir, each=each)
            _render(env.get_template(name), payload, LOAD_TIME_LIMIT_S)
    except Exception as exc:  # the checks' own failure, or the render's (an include's included)
        return [_explain(exc, target)]
    return problems

