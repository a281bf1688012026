"""Rule files into :class:`~slopjudge.model.Rule` objects, every problem one
``path:line:col: message``: per file the YAML, its shape (the rule schema), then its
meaning; across files the ``needs``. A broken rule disables itself and the rules that
need it. Only a rules cache miss imports this module (ruamel.yaml, jsonschema, jinja2).
"""

from __future__ import annotations

import functools
import json
import operator
import os
import re
import shutil
from dataclasses import dataclass, field
from graphlib import CycleError, TopologicalSorter
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from slopjudge.changes.citations import POOLS
from slopjudge.fsutil import identity
from slopjudge.loading.config import display_path, suggest
from slopjudge.loading.matchexpr import MatchError, compile_match
from slopjudge.loading.schemas import load_schema
from slopjudge.loading.templates import validate_template
from slopjudge.loading.toolrules import tool_rule_problem
from slopjudge.model import EVENT_KINDS, Check, LoadError, LoadResult, Rule
from slopjudge.procs import is_python_script

if TYPE_CHECKING:
    from slopjudge.model import CheckKindName

RULE_ID = r"[a-z0-9][a-z0-9-]*"
# The fields, as the schema lists them; the judge-only ones are those it forbids a script.
_RULE_SCHEMA = load_schema("rule.schema.json")
RULE_FIELDS = tuple(_RULE_SCHEMA["properties"])
CHECK_FIELDS = tuple(_RULE_SCHEMA["$defs"]["check"]["properties"])
JUDGE_ONLY = tuple(_RULE_SCHEMA["$defs"]["check"]["then"]["properties"])
DEFAULT_TIMEOUT = {"script": 120.0, "judge": 600.0}
DEFAULT_ON = ["stop", "ci"]

Pos = tuple[int, int]
RULE_EXTENSIONS = (".yaml", ".yml")
RULE_FILE_NAMES = tuple(f"rule{ext}" for ext in RULE_EXTENSIONS)
_DEEPEST = 6  # the stray walk's: a walk must end
_LEFT_BEHIND = frozenset({"node_modules", "venv", "site-packages", "__pycache__"})


def _listed(folder: str) -> list[str]:
    """``folder``'s names, hidden ones (editor swap files, .git) left out, sorted; none when
    it cannot be read. A listing, not a glob: a glob of a path holding ``[`` lists its
    parent, which may not be readable."""
    try:
        return sorted(n for n in os.listdir(folder) if not n.startswith("."))
    except OSError:
        return []


def find_rule_files(rules_dir: str) -> list[tuple[str, str]]:
    """(rule id, path) for ``rules/<id>.yaml`` and ``rules/<id>/rule.yaml``; ``.yml`` too,
    never skipped in silence (a rule a person wrote must not be quietly out of force)."""
    found: list[tuple[str, str]] = []
    for name in _listed(rules_dir):
        path = os.path.join(rules_dir, name)
        found += [(name[: -len(ext)], path) for ext in RULE_EXTENSIONS if name.endswith(ext)]
        found += [(name, os.path.join(path, rule)) for rule in RULE_FILE_NAMES]
    return sorted(f for f in found if os.path.isfile(f[1]))


def stray_rule_files(rules_dir: str) -> list[str]:
    """Files under ``rules_dir`` a person would take for rules that :func:`find_rule_files`
    does not read: a YAML file (``x.YML``, ``rules.yaml``, ``Rule.yaml``, one in a folder
    deeper) outside a rule's own folder, a link to nothing named as a rule or its folder.
    Not looked in: a rule's folder (its files are its own), folders starting with ``_``
    (shared files), hidden names, dependency folders (a removed rule's ``git rm`` leaves
    ignored ones). Linked folders are followed, each real folder once, six deep at most,
    in sorted order (one answer whatever order the file system lists names in)."""
    read = {p for _, p in find_rule_files(rules_dir)}
    top = _listed(rules_dir)
    # The rules' own folders, however they are reached (a link to one is not walked into).
    seen = {identity(os.path.join(rules_dir, n)) for n in top
            if os.path.isdir(os.path.join(rules_dir, n)) and _holds_rule(rules_dir, n, top)}
    stray: list[str] = []
    for here, subs, files in os.walk(rules_dir, followlinks=True):
        depth = here.count(os.sep) - rules_dir.count(os.sep)
        if (key := identity(here)) in seen or key is None:
            subs[:] = []
            continue
        seen.add(key)
        named = [n for n in sorted(files + subs) if not n.startswith(".") and (
            n.lower().endswith(RULE_EXTENSIONS) and (n in files or n in RULE_FILE_NAMES)
            or depth == 0 and not os.path.exists(os.path.join(here, n))
            and not os.path.splitext(n)[1])]  # a rule folder's link to nothing
        stray += [p for p in (os.path.join(here, n) for n in named) if p not in read]
        subs[:] = [] if depth >= _DEEPEST else sorted(
            d for d in subs if not d.startswith((".", "_")) and d not in _LEFT_BEHIND)
    return sorted(stray)


def _holds_rule(rules_dir: str, name: str, beside: list[str]) -> bool:
    """Whether ``rules/<name>/`` is a rule's: it holds ``rule.yaml``, or keeps the files of
    the rule ``rules/<name>.yaml``, either of them also as a copy set aside
    (``rule.yaml.off``, ``<name>.yaml.off``)."""
    folder = os.path.join(rules_dir, name)
    return (any(os.path.isfile(os.path.join(folder, rule)) for rule in RULE_FILE_NAMES)
            or any(n.startswith(tuple(f"{r}." for r in RULE_FILE_NAMES)) for n in _listed(folder))
            or any(n.startswith(tuple(f"{name}{ext}" for ext in RULE_EXTENSIONS))
                   for n in beside))


# ---- helpers -----------------------------------------------------------------


_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0,
          "h": 3600.0}
_PART = r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)"
_BARE_NUMBER = re.compile(r"[+-]?(\d+(?:\.\d*)?|\.\d+)")


MAX_TIMEOUT = 24 * 3600.0


def parse_duration(value: object) -> float:
    """Seconds in a Go-style duration (sloprail's syntax: ``1m30s``), > 0. A bare number is
    refused: seconds or minutes, a wrong guess kills a good check or lets a hung one hang."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(int(value)) if float(value).is_integer() else str(value)
    if not isinstance(value, str):
        raise ValueError(f"`{value}` is not a duration; write one like `30s` or `2m`")
    text = value.strip()
    if _BARE_NUMBER.fullmatch(text):
        n = text.lstrip("+")
        raise ValueError(f"`{text}` has no unit; write `{n}s` (or `2m`, `500ms`, `1h`)")
    if text.startswith("-"):
        raise ValueError(f"`{text}` is negative; a timeout must be > 0")
    body = text.removeprefix("+")
    if not body:
        raise ValueError("an empty duration; write one like `30s` or `2m`")
    if not re.fullmatch(f"(?:{_PART})+", body):
        raise ValueError(
            f"`{text}` is not a duration; write one like `30s`, `2m`, `1m30s`, `500ms` or `1h`")
    total = sum(float(n) * _UNITS[unit] for n, unit in re.findall(_PART, body))
    if total <= 0:
        raise ValueError(f"`{text}` is zero; a timeout must be > 0")
    if total > MAX_TIMEOUT:  # past what a clock or poll() takes, and no check's business
        raise ValueError(f"`{text}` is longer than a day; a timeout is at most `24h`")
    return total


_NODE = object()  # no key: the node itself (a YAML key may be null)


def _pos(node: Any, key: Any = _NODE, *, of_key: bool = False) -> Pos:
    """Where ``node[key]`` starts (its key, ``of_key``), else ``node`` itself, 1-based;
    the enclosing position when ruamel kept none (a node built by an alias or merge, or
    not from YAML at all)."""
    try:
        lc = node.lc
        if key is _NODE:
            line, col = lc.line, lc.col
        elif isinstance(node, list):
            line, col = lc.item(key)
        else:
            line, col = lc.key(key) if of_key else lc.value(key)
        return line + 1, col + 1
    except Exception:
        if key is _NODE:
            return 1, 1
        if of_key or isinstance(node, list):
            return _pos(node)
        return _pos(node, key, of_key=True)


# The words a message uses for a JSON schema type, and for a loaded value's type
# (bool before int: a bool is an int to isinstance).
_SCHEMA_TYPES = {
    "string": "a string", "array": "a list", "object": "a mapping",
    "number": "a number", "integer": "an integer", "boolean": "a boolean",
}
_VALUE_TYPES: tuple[tuple[type, str], ...] = (
    (type(None), "empty (null)"), (bool, "a boolean"), (int, "an integer"),
    (float, "a number"), (str, "a string"), (dict, "a mapping"), (list, "a list"),
)


def _type_word(instance: Any) -> str:
    return next((w for t, w in _VALUE_TYPES if isinstance(instance, t)), type(instance).__name__)


# ---- one file ----------------------------------------------------------------


@dataclass
class _FileRule:
    """One rule file being read: its problems, and every path looked at for the scripts and
    templates it names (``watched``: a change there invalidates the rules cache)."""

    id: str
    path: str  # absolute
    disp: str  # as printed
    template_dirs: list[str]
    watched: set[str]
    text: str = ""  # the file, read once
    rule: Rule | None = None
    errors: list[LoadError] = field(default_factory=list)
    needs: list[tuple[str, str, Pos]] = field(default_factory=list)  # needer, as written, where
    check_ids: list[str] | None = None  # None: the checks could not be read
    # The events and tools the rule concerns, as far as the file says them
    # readably (see LoadError.on): unknown until the file parses.
    on: list[str] | None = None
    tools: list[str] = field(default_factory=list)

    @property
    def dir(self) -> str:
        return os.path.dirname(self.path)

    def err(self, pos: Pos, message: str) -> None:
        one_line = " ".join(message.split())  # one problem, one line, whatever a parser said
        self.errors.append(LoadError(self.disp, pos[0], pos[1], one_line, rule=self.id))

    def executable(self, item: Any, key: str) -> str | None:
        value: str = item[key].strip()
        candidate = os.path.normpath(os.path.join(self.dir, os.path.expanduser(value)))
        shown, here = display_path(candidate), os.path.lexists(candidate)
        if not here and "/" not in value and len(value.split()) == 1:
            # A bare name not beside the rule may be a command on PATH.
            found = shutil.which(value)
            if found:
                self.watched.add(found)
                return value
            self.watched.update(p for p in os.environ.get("PATH", "").split(os.pathsep) if p)
            problem = f"not found: not in {display_path(self.dir)}/ and not a command on PATH"
        else:
            self.watched.add(candidate)
            if not here and len(value.split()) > 1:
                problem = (f"is a command line, but a {key} names one file or command and takes "
                           "no arguments (it reads the payload on stdin); put the command in a "
                           f"script beside the rule (e.g. {key}.sh) and name that")
            elif not os.path.exists(candidate):
                problem = f"not found (looked for {shown})"
            elif os.path.isdir(candidate):
                problem = f"is a folder, not an executable ({shown})"
            elif not os.access(candidate, os.X_OK) and not is_python_script(candidate):
                # A Python script runs on slopjudge's own interpreter (procs.script_argv):
                # it needs no run bit, which a wheel install does not keep.
                problem = f"is not executable; run `chmod +x {shown}`"
            else:
                return candidate
        self.err(_pos(item, key), f"{key} `{value}` {problem}")
        return None

    def template(self, item: Any, key: str) -> str | None:
        value = item[key].strip()
        bases = [self.dir, *self.template_dirs]
        for base in bases:
            candidate = os.path.normpath(os.path.join(base, value))
            self.watched.add(candidate)
            if os.path.isfile(candidate):
                break
        else:
            looked = ", ".join(f"{display_path(b)}/" for b in bases)
            self.err(_pos(item, key), f"judge template `{value}` not found (looked in {looked})")
            return None
        # A per-file judge's event carries the file's fields: load it with them.
        per_file: dict[str, Any] = {"each": "file"} if item.get("each") == "file" else {}
        try:
            problems = validate_template(candidate, rule_dir=self.dir,
                                         template_dirs=self.template_dirs, **per_file)
        except Exception as exc:  # a template checker bug must not hide the rule's other problems
            self.err((1, 1), f"cannot check template {display_path(candidate)}: {exc}")
            return candidate
        for p in problems:
            p.rule = p.rule or self.id
            self.errors.append(p)
        return candidate


def _scope(data: dict[str, Any]) -> tuple[list[str] | None, list[str]]:
    """The events and tools a rule concerns, read so that a doubt widens them:
    an `on` that is not a list of known events is every event, and `tools`
    with any item slopjudge cannot use is every tool."""
    on = data.get("on", DEFAULT_ON)
    known = isinstance(on, list) and bool(on) and all(x in EVENT_KINDS for x in on)
    tools = data.get("tools", [])
    usable = isinstance(tools, list) and all(
        isinstance(t, str) and not tool_rule_problem(t) for t in tools)
    return ([str(x) for x in on] if known else None), ([str(t) for t in tools] if usable else [])


# -- parse --

# The parser's words for the usual indentation slips, said for a person. Keyed by the
# start of ruamel's problem text.
_UNINDENTED = ("this line's indentation matches no enclosing block: indent it exactly like "
               "the keys (or `- ` items) it belongs with")
_YAML_PROBLEMS = {
    "mapping values are not allowed here": (
        "a `key:` where none can be: this line is indented deeper than the keys it "
        "belongs with, or a value containing `: ` needs quotes"),
    "expected <block end>": _UNINDENTED,
    "did not find expected key": _UNINDENTED,
    "did not find expected '-' indicator": (
        "a `key:` among `- ` items: indent it under its item, or start it with `- `"),
    "could not find expected ':'": (
        "a line that is not `key: value`: check its indentation (a value cannot go on "
        "to the next line unindented) or quote the value"),
    "found character '\\t' that cannot start any token": (
        "a tab character: YAML indents with spaces only"),
}


class YamlProblem(Exception):
    """YAML that does not parse: ``args`` are the 1-based (line, col) and one line."""


def parse_yaml(text: str) -> Any:
    """``text`` read by ruamel.yaml (round trip: nodes keep their positions); raise
    :class:`YamlProblem` with the usual slips in words, else ruamel's own."""
    try:
        return YAML(typ="rt").load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = " ".join(str(exc.problem or "").split())
        context = " ".join(str(exc.context or "").split())
        words = next((w for start, w in _YAML_PROBLEMS.items() if problem.startswith(start)),
                     f"{problem} ({context})" if context and problem else problem or str(exc))
    except YAMLError as exc:
        pos, words = (1, 1), str(exc).strip() or type(exc).__name__
    raise YamlProblem(pos, "broken YAML: " + " ".join(words.split()))


def read_yaml(path: str) -> tuple[Any, Pos, str | None]:
    """The YAML file at ``path`` as :func:`parse_yaml` reads it, else where and why not."""
    try:
        with open(path, encoding="utf-8") as fh:
            return parse_yaml(fh.read()), (1, 1), None
    except YamlProblem as exc:
        return None, exc.args[0], exc.args[1]
    except (OSError, UnicodeDecodeError) as exc:
        return None, (1, 1), str(exc)


def _mapping(fr: _FileRule) -> Any:
    """The rule file's YAML, a mapping; YamlProblem says why not."""
    try:
        with open(fr.path, encoding="utf-8") as f:
            fr.text = text = f.read(MAX_RULE_CHARS + 1)
    except UnicodeDecodeError as exc:
        raise YamlProblem((1, 1), f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    except OSError as exc:
        raise YamlProblem((1, 1), f"cannot read the rule file: {exc.strerror or exc}") from None
    if len(text) > MAX_RULE_CHARS:
        raise YamlProblem((1, 1), f"the rule file is larger than {MAX_RULE_CHARS // 1024} KiB; "
                          "a rule is a page of YAML (large data belongs in a file beside it)")
    data = parse_yaml(text)
    if data is None:
        raise YamlProblem((1, 1), "the file is empty; a rule needs `description` and `checks`")
    _check_size(data)
    if not isinstance(data, dict):
        raise YamlProblem(_pos(data), "the top level must be a mapping (description, checks, "
                          f"…), not {_type_word(data)}")
    return data


# Far above any rule; past them a file's checking (a schema walks every value an alias
# repeats) would outlast a hook's timeout: nested aliases grow exponentially.
MAX_RULE_CHARS = 1024 * 1024
MAX_YAML_NODES = 100_000


def _check_size(data: Any) -> None:
    """Raise YamlProblem at the container where ``data``, aliases expanded, passes
    MAX_YAML_NODES values: a walk that counts as it goes ends, a container inside itself too."""
    todo, count = [data], 1
    while todo:
        node = todo.pop()
        if isinstance(node, (dict, list)):
            items = [*node.keys(), *node.values()] if isinstance(node, dict) else node
            count += len(items)
            if count > MAX_YAML_NODES:
                raise YamlProblem(_pos(node), f"the YAML expands to more than {MAX_YAML_NODES} "
                                  "values through its aliases (`*name`); write the values out")
            todo += items


# -- the schema --


def _schema_problem(data: Any, error: Any) -> tuple[Pos, str] | None:
    """Where a schema error is and what to say; None when the meaning checks say it better."""
    path = list(error.absolute_path)
    v = error.validator
    # These have better messages from the meaning checks below (a duration's, a tool rule's;
    # no validator: a `false` schema, a judge-only field on a script check).
    defs = _RULE_SCHEMA["$defs"]
    if (v in (None, "additionalProperties", "oneOf") or error.schema is defs["duration"]
            or (v == "minLength" and error.schema is defs["toolRule"])):
        return None
    # Where: the value at `path`.
    pos = _pos(functools.reduce(operator.getitem, path[:-1], data), path[-1]) if path else (1, 1)
    where = error.json_path.removeprefix("$").removeprefix(".") or "the rule"
    inst = error.instance
    if v == "type":
        expected = error.validator_value
        names: list[str] = expected if isinstance(expected, list) else [expected]
        want = " or ".join(_SCHEMA_TYPES.get(n, n) for n in names)
        msg = f"`{where}` must be {want}, not {_type_word(inst)}"
        if names == ["array"] and isinstance(inst, str):
            # Quoted unless plain in a YAML flow list (`*.py` is an alias, `[ab]` a list).
            plain = re.fullmatch(r"[\w/.][\w./-]*", inst) and not re.fullmatch(
                r"[-+.\d_eE]+|(?i:null|true|false|yes|no|on|off)", inst)
            msg += f"; write `[{inst if plain else json.dumps(inst)}]`"
    elif v == "enum":
        options = [str(o) for o in error.validator_value]
        msg = (f"`{where}`: `{inst}` is not one of {', '.join(options)}"
               + suggest(str(inst), options))
    elif v == "required":
        # One error per missing field, each naming its own ("'checks' is a required ...").
        missing = [r for r in error.validator_value if r not in inst] or error.validator_value
        name = next((r for r in missing if error.message.startswith(repr(r))), missing[0])
        owner = f"`{where}`" if path else "the rule"
        msg = f"{owner} is missing the required field `{name}`"
    elif v in ("minItems", "minLength"):
        msg = f"`{where}` must not be empty"
    elif v in ("minimum", "maximum") and path[-1] == "min_confidence":
        msg = f"`{where}` must be between 0 and 1, not {inst}"
    elif v == "pattern" and path[-1] == "id":
        msg = (f"`{where}`: `{inst}` is not a valid check id "
               "(letters, digits, `_`, `.`, `-`; no `/`)")
    elif v == "pattern":  # a model list's entry
        msg = f"`{where}`: `{inst}` holds a comma; write each model as an entry of its own"
    elif v == "uniqueItems":
        msg = f"`{where}` lists the same item twice"
    else:
        msg = f"`{where}`: {error.message}"
    return pos, msg


# -- the rule's meaning --


def _read_rule(fr: _FileRule, data: Any) -> None:
    """The rule's fields as slopjudge means them; ``fr.rule`` set, problems recorded."""
    if not re.fullmatch(RULE_ID, fr.id):
        fixed = re.sub(r"[^a-z0-9-]+", "-", fr.id.lower()).strip("-") or "my-rule"
        where = "folder" if os.path.basename(fr.path) in RULE_FILE_NAMES else "file"
        fr.err((1, 1), f"invalid rule id `{fr.id}` (the {where} name): use lowercase letters, "
               f"digits and `-`, starting with a letter or digit, e.g. `{fixed}`")
    _misplaced_keys(fr, data, RULE_FIELDS, CHECK_FIELDS, "")
    description = data.get("description")
    if isinstance(description, str) and description and not description.strip():
        fr.err(_pos(data, "description"), "`description` must not be empty")
    elif isinstance(description, str) and "\n" in description.strip():
        fr.err(_pos(data, "description"),
               "`description` must be one line (a refusal quotes it); put detail in `doc`")
    if isinstance(data.get("tools"), list):
        _tool_items(fr, data["tools"], "tools", deny=False)
    for key in ("tools", "on_uncertain"):
        if key in data and fr.on is not None and "pre-tool" not in fr.on:
            fr.err(_pos(data, key, of_key=True),
                   f"`{key}` has no effect: `on` lacks `pre-tool` "
                   f"(it is {', '.join(fr.on)}); add `pre-tool` or remove `{key}`")
    checks_node = data.get("checks")
    checks: list[Check] = []
    if isinstance(checks_node, list):
        seen: dict[str, int] = {}
        checks = [_read_check(fr, checks_node, i, item, seen)  # the schema reported the others
                  for i, item in enumerate(checks_node) if isinstance(item, dict)]
        fr.check_ids = [c.id for c in checks]
    # As written: a value the schema refuses is an error, and the rule does not load.
    given = {k: data[k] for k in ("paths", "exclude", "mode", "on_uncertain", "preview",
                                  "measured") if k in data}
    fr.rule = Rule(id=fr.id, path=fr.path, dir=fr.dir, checks=checks, on=fr.on or [],
                   tools=fr.tools, description=str(description or "").strip(),
                   doc=str(data.get("doc", "")), **given)
    _read_sloprail_fields(fr, data, fr.rule)


def _read_sloprail_fields(fr: _FileRule, data: Any, rule: Rule) -> None:
    """``match``, ``require`` and ``subjects`` (docs/sloprail.md), each checked here."""
    match = data.get("match")
    if isinstance(match, str):
        try:
            compile_match(match)
            rule.match = match
        except MatchError as exc:
            fr.err(_expr_pos(fr.text, data, "match", exc.offset), f"`match`: {exc}")
    subjects = data.get("subjects")
    if isinstance(subjects, str) and subjects.strip():
        rule.subjects = fr.executable(data, "subjects")
    elif isinstance(subjects, str) and subjects:  # "" is the schema's to name
        fr.err(_pos(data, "subjects"), "`subjects` is blank: name a script beside the rule or "
               "a command on PATH")
    require = data.get("require")
    if isinstance(require, list):
        rule.require = [_requirement(fr, require, i, item)
                        for i, item in enumerate(require) if isinstance(item, dict)]


def _requirement(fr: _FileRule, seq: Any, i: int, item: dict[str, Any]) -> dict[str, Any]:
    """One ``require`` entry as the engine reads it (checks/require.py), its problems
    recorded: exactly one of ``skill`` or ``citation``, ``files`` only with a skill."""
    label = f"require[{i}]"
    _misplaced_keys(fr, item, ("skill", "citation", "files", "when", "context"), (), label)
    kinds = [k for k in ("skill", "citation", "context") if k in item]
    if len(kinds) != 1:
        fr.err(_pos(seq, i), f"`{label}` needs exactly one of `skill` or `citation`")
    elif "context" in item:
        fr.err(_pos(item, "context", of_key=True), f"`{label}.context`: slopjudge has no "
               "contexts (docs/sloprail.md); use `when` with a script that decides it")
    name, files, cite = item.get("skill"), item.get("files", []), item.get("citation")
    if "skill" in item and not (isinstance(name, str) and name.strip()):
        fr.err(_pos(item, "skill"), f"`{label}.skill` must be a skill's name")
    if "files" in item and "skill" not in item:
        fr.err(_pos(item, "files", of_key=True), f"`{label}.files` goes with `skill` only")
    elif not isinstance(files, list) or not all(
            isinstance(f, str) and f and not f.startswith("/") and ".." not in f.split("/")
            for f in files):
        fr.err(_pos(item, "files"), f"`{label}.files` must list paths inside the "
               "skill's folder (relative, no `..`)")
    types = cite.get("source_types") if isinstance(cite, dict) else None
    if "citation" in item and (not isinstance(cite, dict) or set(cite) != {"source_types"}
                               or not isinstance(types, list) or not types
                               or any(t not in POOLS for t in types)):
        fr.err(_pos(item, "citation"), f"`{label}.citation` must be "
               f"{{source_types: [...]}} naming {' and/or '.join(POOLS)}")
    when = item.get("when")
    if when is not None and not (isinstance(when, str) and when.strip()):
        fr.err(_pos(item, "when"), f"`{label}.when` must be a script")
        when = None
    return {"kind": kinds[0] if kinds else None, "files": files, "source_types": types,
            "skill": name.strip() if isinstance(name, str) else None,
            "when": fr.executable(item, "when") if when else None}


def _expr_pos(text: str, data: Any, key: str, offset: int) -> Pos:
    """Where character ``offset`` of the scalar ``data[key]`` sits in the file ``text`` (a
    quoted scalar's escapes are not counted back)."""
    line, col = _pos(data, key)
    before = str(data[key])[:offset]
    lines = text.splitlines()
    opener = lines[line - 1][col - 1:col]
    if opener in ("|", ">"):
        body = [b for b in lines[line:] if b.strip()]
        indent = len(body[0]) - len(body[0].lstrip(" ")) if body else 0
        return line + 1 + before.count("\n"), indent + len(before.rsplit("\n", 1)[-1]) + 1
    if "\n" in before:
        return line, col
    return line, col + (1 if opener in ("'", '"') else 0) + offset


def _misplaced_keys(fr: _FileRule, node: Any, own: tuple[str, ...], other: tuple[str, ...],
                    label: str) -> None:
    """Keys of a rule (``label`` empty) or a check that are not its fields: the other
    level's (said where they go) or unknown (with the closest known one)."""
    for key in node:
        if key in other:
            fr.err(_pos(node, key, of_key=True),
                   f"`{key}` is a rule field, not a check field; move it to the top level"
                   if label else f"`{key}` is a check field; put it under `checks:`")
        elif key not in own:
            fr.err(_pos(node, key, of_key=True), f"unknown field `{key}`"
                   + (f" in `{label}`" if label else "") + suggest(str(key), own))


def _tool_items(fr: _FileRule, items: list[Any], label: str, *, deny: bool) -> None:
    for i, item in enumerate(items):  # an item not a string: the schema reported its type
        if isinstance(item, str) and (problem := tool_rule_problem(item, deny=deny)):
            fr.err(_pos(items, i), f"`{label}[{i}]`: {problem}")


# -- one check's meaning --


def _read_check(fr: _FileRule, seq: Any, index: int, item: dict[str, Any],
                seen: dict[str, int]) -> Check:
    label = f"checks[{index}]"
    _misplaced_keys(fr, item, CHECK_FIELDS, RULE_FIELDS, label)
    at = _pos(seq, index)
    kind = _check_kind(fr, at, item, label)
    raw_id = item.get("id")  # check-N by default, unique in the rule
    check_id = str(raw_id) if isinstance(raw_id, str) and raw_id else f"check-{index + 1}"
    id_pos = _pos(item, "id") if "id" in item else at
    if check_id in seen:
        fr.err(id_pos, f"duplicate check id `{check_id}` (first at line {seen[check_id]})")
    seen.setdefault(check_id, id_pos[0])

    timeout = DEFAULT_TIMEOUT[kind]
    if "timeout" in item:
        try:
            timeout = parse_duration(item["timeout"])
        except ValueError as exc:
            fr.err(_pos(item, "timeout"), f"`{label}.timeout`: {exc}")

    # As written: a value the schema refuses is an error, and the rule does not load.
    given = {k: item[k] for k in ("each", "allowed_tools", "disallowed_tools", "min_confidence")
             if k in item}
    check = Check(id=check_id, rule=fr.id, kind=kind, timeout=timeout, line=at[0], col=at[1],
                  **given)
    for key in ("script",) if kind == "script" else ("prepare", "judge"):
        if isinstance(item.get(key), str) and item[key].strip():
            setattr(check, key, (fr.template if key == "judge" else fr.executable)(item, key))
        elif isinstance(item.get(key), str) and item[key]:  # "" is the schema's to name
            fr.err(_pos(item, key), f"`{label}.{key}` is blank: name a file beside the rule"
                   + (" or a command on PATH" if key != "judge" else ""))
    _check_model(fr, item, label, check)
    # A whole float (50000.0, 5e4) is the schema's integer too: taken as that integer.
    budget = item.get("max_prompt_tokens")
    check.max_prompt_tokens = int(budget) if isinstance(budget, float) and budget.is_integer() \
        else budget
    for key in ("allowed_tools", "disallowed_tools"):
        if isinstance(item.get(key), list):
            _tool_items(fr, item[key], f"{label}.{key}", deny=key == "disallowed_tools")
    needs = item.get("needs")
    if isinstance(needs, list):
        fr.needs += [(check.full_id, str(raw), _pos(needs, i))
                     for i, raw in enumerate(needs) if isinstance(raw, str) and raw]
    return check


def _check_kind(fr: _FileRule, at: Pos, item: dict[str, Any], label: str) -> CheckKindName:
    """``script`` or ``judge``: exactly one of the two, and no judge-only field on a script."""
    has_script, has_judge = "script" in item, "judge" in item
    if has_script and has_judge:
        fr.err(_pos(item, max("script", "judge", key=list(item).index), of_key=True),
               f"`{label}` has both `script` and `judge`; a check is one or the other, "
               "so split it into two checks")
    elif not has_script and not has_judge:
        fr.err(at, f"`{label}` needs one of `script` or `judge`")
    elif has_script:
        for key in (k for k in JUDGE_ONLY if k in item):
            fr.err(_pos(item, key, of_key=True),
                   f"`{key}` applies to judge checks only; `{label}` is a script check")
    return "script" if has_script else "judge"


def _check_model(fr: _FileRule, item: dict[str, Any], label: str, check: Check) -> None:
    # A name, or a preference list (the runner takes the first its harness can run). An
    # empty one, a comma in a list's entry, an entry not a string: the schema's to name.
    model = item.get("model")
    names = [m for m in (model if isinstance(model, list) else [model]) if isinstance(m, str)]
    if any(m and not m.strip() for m in names):
        fr.err(_pos(item, "model"), f"`{label}.model` must not be empty")
    if names:
        check.model = ",".join(m.strip() for m in names)


# ---- across files ------------------------------------------------------------


def _cycles(edges: list[tuple[str, str]]) -> list[list[str]]:
    """Each loop of needs, as the path from its smallest check round to it again:
    graphlib finds one at a time, and one of its edges is set aside to look for the next."""
    graph: dict[str, list[str]] = {}
    for src, dst in edges:
        graph.setdefault(src, []).append(dst)
    found: list[list[str]] = []
    while True:
        try:
            TopologicalSorter(graph).prepare()
            return found
        except CycleError as exc:
            loop = exc.args[1][:0:-1]  # graphlib walks it from need to needer
        start = loop.index(min(loop))
        loop = [*loop[start:], *loop[:start], loop[start]]
        found.append(loop)
        graph[loop[0]].remove(loop[1])


def _resolve(fr: _FileRule, raw: str, pos: Pos, by_id: dict[str, list[_FileRule]]) -> str | None:
    """The full id of the check a need names; None (the error recorded) when none loads."""
    raw = raw.strip()
    rid, cid = raw.split("/", 1) if "/" in raw else (fr.id, raw)
    target = by_id.get(rid, [None])[0]
    if target is None:
        fr.err(pos, f"unknown need `{raw}`: there is no rule `{rid}`" + suggest(rid, by_id))
    elif target.check_ids is None:
        fr.err(pos, f"needs `{raw}`, but rule `{rid}` does not load ({target.disp})")
    elif cid not in target.check_ids:
        owner = "this rule" if rid == fr.id else f"rule `{rid}`"
        fr.err(pos, f"unknown need `{raw}`: {owner} has no check `{cid}`"
               + suggest(cid, target.check_ids))
    else:
        return f"{rid}/{cid}"
    return None


def _link(loaded: list[_FileRule]) -> None:
    """Resolve needs, refuse cycles, disable rules that need a rule that does not load."""
    by_id: dict[str, list[_FileRule]] = {}
    for fr in loaded:
        by_id.setdefault(fr.id, []).append(fr)
    for rid, group in by_id.items():
        if len(group) > 1:
            shown = " and ".join(g.disp for g in group)
            for fr in group:
                fr.err((1, 1), f"rule id `{rid}` is defined twice ({shown}); keep one")

    # (needer, needed) full ids -> the first need that says it
    edge_need: dict[tuple[str, str], tuple[_FileRule, Pos]] = {}
    for fr in loaded:
        for src, raw, pos in fr.needs:
            if (dst := _resolve(fr, raw, pos, by_id)) is not None:
                edge_need.setdefault((src, dst), (fr, pos))

    for loop in _cycles(list(edge_need)):
        reported: set[str] = set()
        for src, dst in zip(loop, loop[1:], strict=False):
            fr, pos = edge_need[(src, dst)]
            if fr.id not in reported:
                reported.add(fr.id)
                fr.err(pos, f"cycle in needs: {' -> '.join(loop)}")

    # A rule that needs a check of a rule that does not load cannot run: disable it too.
    failed = {fr.id for fr in loaded if fr.errors or fr.rule is None}
    changed = True
    while changed:
        changed = False
        for (_src, dst), (fr, pos) in edge_need.items():
            dep = dst.split("/", 1)[0]
            if fr.id not in failed and dep in failed:
                fr.err(pos, f"needs `{dst}`, but rule `{dep}` does not load, so this "
                       "rule is disabled too")
                failed.add(fr.id)
                changed = True

    for fr in loaded:
        for check in fr.rule.checks if fr.rule else []:
            check.needs = [dst for src, dst in edge_need if src == check.full_id]


def load_rules(
    rules_dir: str, *, workspace: str, template_dirs: list[str] | None = None
) -> LoadResult:
    """Every rule under ``rules_dir``; never raises. See :class:`LoadResult`."""
    rules_dir = os.path.abspath(rules_dir)
    template_dirs = [os.path.abspath(t) for t in (template_dirs or [])]
    watched: set[str] = set()
    if not os.path.isdir(rules_dir):
        return LoadResult(rules=[], files=[], watched=[rules_dir], errors=[
            LoadError(display_path(rules_dir), 1, 1, "rules folder not found")])
    found = find_rule_files(rules_dir)
    shown = display_path(rules_dir)
    errors = [LoadError(display_path(p), 1, 1, "not read as a rule: " + (
        f"slopjudge reads {shown}/<id>.yaml and {shown}/<id>/rule.yaml only; rename or move "
        "it (a folder of shared files starts with `_`)" if os.path.isfile(p)
        else "it is not a file (a link to nothing, or a folder)"))
              for p in stray_rule_files(rules_dir)]
    loaded: list[_FileRule] = []
    for rule_id, path in found:
        fr = _FileRule(rule_id, path, display_path(path), template_dirs, watched)
        try:
            data = _mapping(fr)
            fr.on, fr.tools = _scope(data)
            for error in Draft202012Validator(_RULE_SCHEMA).iter_errors(data):
                if problem := _schema_problem(data, error):
                    fr.err(*problem)
            _read_rule(fr, data)
        except YamlProblem as exc:
            fr.err(*exc.args)
        except Exception as exc:  # one broken file must not take the others down
            fr.rule = fr.check_ids = None
            fr.err((1, 1), f"internal error while loading this rule: {type(exc).__name__}: {exc}")
        loaded.append(fr)
    try:
        _link(loaded)
        rules = sorted((fr.rule for fr in loaded if not fr.errors and fr.rule is not None),
                       key=lambda r: r.id)
        for fr in loaded:
            for err in fr.errors:
                err.on, err.tools = fr.on, fr.tools
    except Exception as exc:  # fail closed: no rule is trusted if linking broke
        rules = []
        errors.append(LoadError(display_path(rules_dir), 1, 1,
                                f"internal error linking rules: {exc}"))
    errors += [err for fr in loaded for err in fr.errors]
    errors.sort(key=lambda e: (e.path, e.line, e.col, e.message))
    return LoadResult(rules=rules, errors=errors, files=[p for _, p in found],
                      watched=sorted(watched))
