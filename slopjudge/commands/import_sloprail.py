"""`slopjudge import sloprail [.sloprail]`: convert sloprail rule folders into rules/.

``file-guard/<name>/file-guard.yaml`` and ``gate/<name>/gate.yaml`` become
``rules/<name>/rule.yaml`` with the scripts, prepares, templates, ``when`` and
``subjects`` scripts copied beside it. Match expressions become the rule's
``match:`` (a gate's triggers joined into one), ``require`` and ``subjects`` carry
over, ``preventive: true`` adds ``pre-tool`` on the file tools. A rule that would
behave differently under slopjudge is refused, never written: every reason is one
docs/sloprail.md lists, printed with the file and line it came from. Nothing is
ever overwritten, nothing is read or copied through a symlink that leads out of
the .sloprail folder, and the converted rules are loaded as ``slopjudge
validate`` loads them, every problem printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from slopjudge.changes.tools import CHANGE_TOOLS
from slopjudge.commands._shared import add_rules_argument, fail

# A line of a script that runs one of sloprail's own programs.
_SR_COMMAND = re.compile(r"(?:^|[\s;&|(`$'\"])(sr|sr-[a-z]+|sloprail)(?:\s|$)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", choices=["sloprail"], help="the tool to import from")
    parser.add_argument("folder", nargs="?", default=".sloprail",
                        help="the .sloprail folder (default: .sloprail)")
    add_rules_argument(parser)


@dataclass
class Note:
    where: str  # file:line
    text: str

    def __str__(self) -> str:
        return f"{self.where}: {self.text}"


@dataclass
class Converted:
    source: str  # "file-guard/<name>"
    rule_id: str | None = None
    files: dict[str, str] = field(default_factory=dict)  # each file it names -> source path
    made: dict[str, str] = field(default_factory=dict)  # rule-relative name -> script text
    yaml: str = ""
    notes: list[Note] = field(default_factory=list)  # what did not convert
    fatal: bool = False  # the rule itself could not be converted
    off: bool = False  # off in sloprail (disabled, or enabled: false): not converted, rightly

    def fail(self, where: str, message: str) -> None:
        """A note on what makes the rule itself unconvertible."""
        self.notes.append(Note(where, message))
        self.fatal = True


class _Reader:
    """One sloprail YAML file, read round-trip so every value has a line."""

    def __init__(self, path: str, shown: str) -> None:
        self.path = path
        self.shown = shown

    def load(self) -> Any:
        from ruamel.yaml import YAML

        with open(self.path, encoding="utf-8") as fh:
            return YAML(typ="rt").load(fh)

    def at(self, node: Any, key: Any = None) -> str:
        line = 1
        lc = getattr(node, "lc", None)
        try:
            if lc is not None and key is not None:
                line = (lc.item(key)[0] if isinstance(key, int) else lc.key(key)[0]) + 1
            elif lc is not None:
                line = lc.line + 1
        except (KeyError, IndexError, TypeError):
            pass
        return f"{self.shown}:{line}"


# ---- match expressions -----------------------------------------------------------

# The event fields slopjudge gives a match (payload.py, rulefilter.py): a file event's,
# a shell command's and any tool call's.
_EVENT_FIELDS = frozenset({
    "kind", "on", "path", "oldPath", "oldContent", "newContent", "oldMarkers", "newMarkers",
    "newContentKnown", "resultKnown", "raw", "invocations", "citations", "argv", "tool",
    "tool_name", "tool_input", "session_id", "transcript_path", "cwd",
})
_GLOB_CHARS = re.compile(r"[*?\[\]\\{}]")


def _expr_problem(text: str, *, gate: bool) -> str | None:
    """Why a sloprail match expression cannot become a slopjudge ``match`` that means the
    same; None when it can (docs/sloprail.md lists every reason)."""
    from slopjudge.loading.matchexpr import MatchError, _tokens, compile_match

    try:
        toks = _tokens(text)
    except MatchError as exc:
        return f"match `{text}` does not parse at column {exc.offset + 1}: {exc}"
    names = [(n, v) for n, (k, v, _) in enumerate(toks) if k == "name"]
    after_dot = {n for n, _ in names if n and toks[n - 1][0] == "op"
                 and toks[n - 1][1] in (".", "?.")}
    bare = {v for n, v in names if n not in after_dot and not (
        n + 1 < len(toks) and toks[n + 1][1] == "(")}
    if "context" in bare:
        return f"match `{text}` reads contexts (`context[...]`): slopjudge has no contexts"
    if "trailers" in bare:
        return f"match `{text}` reads commit trailers, which slopjudge's match does not give"
    if gate and bare & {"path", "status", "markers", "oldMarkers"}:
        return f"match `{text}`: a gate reads `event.<field>`; sloprail refuses a bare name"
    for n, (kind, value, _) in enumerate(toks[:-2]):
        if kind == "name" and value == "event" and n not in after_dot \
                and toks[n + 1][1] in (".", "?.") and toks[n + 2][1] not in _EVENT_FIELDS:
            return (f"match `{text}` reads `event.{toks[n + 2][1]}`, a field slopjudge's "
                    "events do not carry")
    try:
        compile_match(text)
    except MatchError as exc:
        return f"match `{text}` at column {exc.offset + 1}: {exc}"
    return None


def _glob(pattern: str) -> tuple[str, str | None] | None:
    """A sloprail bare glob (whole path, anchored) as a slopjudge path glob and exclude."""
    if "\\" in pattern:
        return None
    for seg in pattern.split("/"):
        if "**" in seg and seg != "**":
            return None  # sloprail's mid-segment ** crosses folders; slopjudge's does not
    anchored = pattern if "/" in pattern.strip("/") or pattern.startswith("/") else "/" + pattern
    if pattern.endswith("**"):
        return anchored, None
    # slopjudge admits the files under a folder a glob matches; sloprail only whole paths.
    return anchored, anchored.rstrip("/") + "/**"


# ---- conversion ------------------------------------------------------------------


def _rule_id(name: str) -> str:
    rid = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")
    return rid if rid and rid[0].isalnum() else f"r-{rid}".strip("-")


def _check_id(value: str, used: set[str]) -> str:
    stem = os.path.basename(value).split(".")[0] or "check"
    base = _rule_id(stem) or "check"
    cid, n = base, 2
    while cid in used:
        cid, n = f"{base}-{n}", n + 1
    used.add(cid)
    return cid


def _local(rule_dir: str, value: str) -> str | None:
    """A file named by a check, inside its rule folder; None for anything else."""
    if os.path.isabs(value):
        return None
    full = os.path.normpath(os.path.join(rule_dir, value))
    # Resolved, so neither `..` nor a symlink brings in a file from elsewhere.
    real, home = os.path.realpath(full), os.path.realpath(rule_dir)
    if os.path.commonpath([real, home]) != home:
        return None
    return full if os.path.isfile(full) else None


def _script_problems(path: str, shown: str) -> list[Note]:
    """Lines of a script or prepare that would not work under slopjudge."""
    notes: list[Note] = []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return notes
    for n, line in enumerate(lines, 1):
        text = line.strip()
        if text.startswith("#"):
            continue
        m = _SR_COMMAND.search(text)
        if m:
            notes.append(Note(f"{shown}:{n}", f"calls sloprail's own `{m.group(1)}` "
                              f"(`{text[:80]}`), which slopjudge does not provide"))
        elif re.search(r"(^|[\s\"'=(:/])\.\./", text):
            notes.append(Note(f"{shown}:{n}", f"reads a file outside its rule folder "
                              f"(`{text[:80]}`), which is not copied"))
        elif re.search(r"[\"']Changeset[\"']", text):
            notes.append(Note(f"{shown}:{n}", "expects sloprail's changeset event "
                              "(`event.kind == \"Changeset\"`); slopjudge gives each file's "
                              "event"))
        elif re.search(r"\bSR_(AGENT_ID|TREE)\b|SLOPRAIL_", text):
            notes.append(Note(f"{shown}:{n}", f"reads an environment variable slopjudge "
                              f"does not set (`{text[:80]}`)"))
    return notes


def _yaml_str(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _yaml_list(values: list[str]) -> str:
    return "[" + ", ".join(_yaml_str(v) for v in values) + "]"


def _convert_checks(
    conv: Converted, reader: _Reader, data: Any, rule_dir: str, rel_dir: str, *, each_file: bool
) -> list[str]:
    """The ``checks:`` lines of rule.yaml; notes and copied files go on ``conv``."""
    out: list[str] = []
    checks = data.get("checks") or []
    if not isinstance(checks, list):
        conv.fail(reader.at(data, "checks"), "checks is not a list")
        return out
    used: set[str] = set()
    prev: tuple[str, str] | None = None  # (id, kind) of the check before
    for n, item in enumerate(checks):
        where = reader.at(checks, n)
        if not isinstance(item, dict):
            conv.fail(where, f"check {n + 1} is not a mapping")
            continue
        kinds = [k for k in ("script", "judge") if item.get(k)]
        if len(kinds) != 1:
            conv.fail(where, f"check {n + 1} needs exactly one of script, judge")
            continue
        kind = kinds[0]
        main = str(item[kind])
        local = _local(rule_dir, main)
        if local is None:
            conv.fail(reader.at(item, kind),
                      f"{kind} `{main}` is not a file inside the rule folder")
            continue
        cid = _check_id(main, used)
        name = os.path.relpath(local, rule_dir)
        conv.files[name] = local
        lines = [f"  - id: {cid}", f"    {kind}: {_yaml_str(name)}"]
        if kind == "script":
            for bad in _script_problems(local, f"{rel_dir}/{name}"):
                conv.fail(bad.where, bad.text)
        if prev is not None and prev[1] == "script":
            # sloprail stops at the first refusal: a script before this check gates it.
            lines.append(f"    needs: [{prev[0]}]")
        for key in item:
            if key in ("script", "judge"):
                continue
            value = item[key]
            at = reader.at(item, key)
            if key == "prepare":
                if kind != "judge":
                    conv.fail(at, "prepare on a script check: slopjudge runs a prepare "
                              "only before a judge")
                    continue
                p = _local(rule_dir, str(value))
                if p is None:
                    conv.fail(at, f"prepare `{value}` is not a file inside "
                              "the rule folder")
                    continue
                pname = os.path.relpath(p, rule_dir)
                conv.files[pname] = p
                for bad in _script_problems(p, f"{rel_dir}/{pname}"):
                    conv.fail(bad.where, bad.text)
                lines.append(f"    prepare: {_yaml_str(pname)}")
            elif key in ("model", "timeout"):
                lines.append(f"    {key}: {_yaml_str(str(value))}")
            elif key in ("allowed_tools", "disallowed_tools"):
                if isinstance(value, list):
                    lines.append(f"    {key}: {_yaml_list([str(v) for v in value])}")
                else:
                    conv.fail(at, f"{key} is not a list")
            elif key in ("response_schema", "post_process"):
                conv.fail(at, f"{key}: slopjudge's judges answer its own verdict schema "
                          "only (pass, reasoning, confidence, findings)")
            else:
                conv.fail(at, f"check field `{key}` has no slopjudge meaning")
        if each_file:
            lines.append("    each: file")
        out += lines
        prev = (cid, kind)
    return out


def _convert_require(conv: Converted, reader: _Reader, data: Any, rule_dir: str,
                     rel_dir: str) -> list[str]:
    """``require:`` as slopjudge's (checks/require.py), its ``when`` scripts copied."""
    req = data.get("require")
    if req is None:
        return []
    if not isinstance(req, list):
        conv.fail(reader.at(data, "require"), "require is not a list")
        return []
    out = ["require:"]
    for n, item in enumerate(req):
        where = reader.at(req, n)
        if not isinstance(item, dict):
            conv.fail(where, f"require {n + 1} is not a mapping")
            continue
        entry: dict[str, Any] = {}
        for key, value in item.items():
            if key == "context":
                conv.fail(where, f"require context `{value}`: slopjudge has no contexts")
            elif key == "skill" and isinstance(value, str):
                entry["skill"] = value
            elif key == "files" and isinstance(value, list):
                entry["files"] = [str(v) for v in value]
            elif key == "citation" and isinstance(value, dict) and set(value) == {
                    "source_types"} and isinstance(value["source_types"], list) and all(
                    t in ("user", "tool_result") for t in value["source_types"]):
                entry["citation"] = {"source_types": [str(t) for t in value["source_types"]]}
            elif key == "when":
                script = _local(rule_dir, str(value))
                if script is None:
                    conv.fail(where, f"when `{value}` is not a file inside the rule folder")
                    continue
                name = os.path.relpath(script, rule_dir)
                conv.files[name] = script
                for bad in _script_problems(script, f"{rel_dir}/{name}"):
                    conv.fail(bad.where, bad.text)
                entry["when"] = name
            else:
                conv.fail(where, f"require field `{key}`: {value!r} has no slopjudge form")
        out.append(f"  - {json.dumps(entry, ensure_ascii=False)}")
    return out


def _header(description: str, source: str) -> list[str]:
    return [
        f"# Converted from sloprail's .sloprail/{source} by `slopjudge import sloprail`.",
        f"description: {_yaml_str(description)}",
    ]


def convert(nature: str, folder: str, name: str, shown_root: str) -> Converted:
    """One file-guard's or gate's conversion: its YAML read (unreadable: noted, fatal),
    then the converter of its nature."""
    conv = Converted(f"{nature}/{name}")
    rel_dir = f"{shown_root}/{nature}/{name}"
    reader = _Reader(os.path.join(folder, f"{nature}.yaml"), f"{rel_dir}/{nature}.yaml")
    data = _load(reader, conv)
    if data is not None:
        _CONVERTERS[nature](_Opened(conv, reader, rel_dir, data, folder, name))
    return conv


class _Opened(NamedTuple):
    """A declaration being converted: its result, YAML reader, folder as shown, mapping."""

    conv: Converted
    reader: _Reader
    rel_dir: str
    data: Any
    folder: str
    name: str


def _paths_lines(glob: tuple[str, str | None] | None) -> list[str]:
    if glob is None:
        return []
    lines = [f"paths: {_yaml_list([glob[0]])}"]
    if glob[1]:
        lines += ["# sloprail matched whole file paths: a folder matching is not enough.",
                  f"exclude: {_yaml_list([glob[1]])}"]
    return lines


def _joined(parts: list[str], op: str) -> str:
    if len(parts) == 1:
        return parts[0]
    return f" {op} ".join(f"({p})" for p in parts)


_FILE_GUARD_KEYS = ("match", "deletions", "require", "subjects", "checks", "preventive")
_GATE_KEYS = ("on", "require", "checks", "enabled")


def _unknown_keys(o: _Opened, known: tuple[str, ...]) -> None:
    for key in o.data:
        if key not in known:
            o.conv.fail(o.reader.at(o.data, key), f"field `{key}` has no slopjudge form"
                        + (" (slopjudge has no contexts)" if key == "context" else ""))


def _file_match(o: _Opened) -> tuple[tuple[str, str | None] | None, list[str]]:
    """A file-guard's ``match`` and ``deletions`` as (paths glob, match conditions)."""
    conv, reader, data = o.conv, o.reader, o.data
    conds: list[str] = []
    glob = None
    text = str(data.get("match") or "").strip()
    if text and not re.search(r"[\s\"']", text):
        glob = _glob(text)
        if glob is None:
            conv.fail(reader.at(data, "match"), f"match glob `{text}` uses `**` inside a "
                      "name or a backslash, which slopjudge globs read differently")
    elif text:
        problem = _expr_problem(text, gate=False)
        if problem:
            conv.fail(reader.at(data, "match"), problem)
        conds.append(text)
    deletions = data.get("deletions") or "skip"
    if deletions == "skip":
        conds.append('status != "D"')
    elif deletions == "only":
        conds.append('status == "D"')
    elif deletions != "include":
        conv.fail(reader.at(data, "deletions"), f"deletions: {deletions!r} is not skip, "
                  "include or only (sloprail refuses it)")
    return glob, conds


def _file_guard(o: _Opened) -> None:
    conv, reader, data = o.conv, o.reader, o.data
    _unknown_keys(o, _FILE_GUARD_KEYS)
    glob, conds = _file_match(o)
    on, tools = ["stop", "ci"], []
    preventive = data.get("preventive", False)
    if preventive is True:
        # Judged before the write lands too: the file tools' proposed edit.
        on.append("pre-tool")
        tools = list(CHANGE_TOOLS)
    elif preventive is not False:
        conv.fail(reader.at(data, "preventive"), "preventive must be true or false")
    lines = _header(f"sloprail file-guard {o.name}", conv.source + "/file-guard.yaml")
    lines.append(f"on: {_yaml_list(on)}")
    if tools:
        lines.append(f"tools: {_yaml_list(tools)}")
    lines += _paths_lines(glob)
    if conds:
        lines.append(f"match: {_yaml_str(_joined(conds, 'and'))}")
    lines += _convert_require(conv, reader, data, o.folder, o.rel_dir)
    subjects = data.get("subjects")
    if subjects is not None:
        script = _local(o.folder, str(subjects))
        if script is None:
            conv.fail(reader.at(data, "subjects"), f"subjects `{subjects}` is not a file "
                      "inside the rule folder")
        else:
            name = os.path.relpath(script, o.folder)
            conv.files[name] = script
            for bad in _script_problems(script, f"{o.rel_dir}/{name}"):
                conv.fail(bad.where, bad.text)
            lines.append(f"subjects: {_yaml_str(name)}")
    checks = _convert_checks(conv, reader, data, o.folder, o.rel_dir,
                             each_file=subjects is None)
    if not checks and "require" not in data:
        conv.fail(reader.at(data), "no check converted")
    if not checks:
        conv.made["requirements-met.sh"] = _PASS_SCRIPT
    conv.yaml = "\n".join([*lines, "checks:", *(checks or _REQUIRE_ONLY)]) + "\n"


# A rule of requirements alone still needs a check: one that always passes.
_REQUIRE_ONLY = ["  - id: requirements-met", "    script: requirements-met.sh"]
_PASS_SCRIPT = ("#!/bin/sh\n# sloprail's rule is its requirements: once they hold, it passes.\n"
                "exit 0\n")

# Each gate event as a test on the event slopjudge gives a match, the `on` it needs,
# and its tools (None: every tool).
_GATE_EVENTS: dict[str, tuple[str, list[str], list[str] | None]] = {
    "PreFileCreate": ('event.kind == "PreFileCreate"', ["pre-tool"], list(CHANGE_TOOLS)),
    "PreFileUpdate": ('event.kind == "PreFileUpdate"', ["pre-tool"], list(CHANGE_TOOLS)),
    "PreFileWrite": ('event.kind in ["PreFileCreate", "PreFileUpdate"]', ["pre-tool"],
                     list(CHANGE_TOOLS)),
    # A shell `rm` is seen when the turn stops: the same gate judges it there.
    "PreFileDelete": ('event.kind in ["PreFileDelete", "PostFileDelete"]',
                      ["pre-tool", "stop"], list(CHANGE_TOOLS)),
    "PreCommandInvoke": ('event.kind == "PreCommandInvoke"', ["pre-tool"], ["Bash"]),
    "PreToolUse": ('event.on == "pre-tool"', ["pre-tool"], None),
    "Stop": ('event.on == "stop"', ["stop"], []),
}


def _gate(o: _Opened) -> None:
    conv, reader, data = o.conv, o.reader, o.data
    _unknown_keys(o, _GATE_KEYS)
    on: list[str] = []
    tools: list[str] | None = []
    parts: list[str] = []
    file_only = True
    triggers = data.get("on") or []
    if not isinstance(triggers, list) or not triggers:
        conv.fail(reader.at(data), "a gate needs `on: [{event, match}]`")
        triggers = []
    for n, trig in enumerate(triggers):
        where = reader.at(triggers, n)
        if not isinstance(trig, dict) or not trig.get("event"):
            conv.fail(where, "a trigger needs `event`")
            continue
        event = str(trig["event"])
        if event not in _GATE_EVENTS:
            conv.fail(where, f"event {event}: not a sloprail gate event ("
                      + ", ".join(_GATE_EVENTS) + ")")
            continue
        test, its_on, its_tools = _GATE_EVENTS[event]
        file_only = file_only and its_tools == list(CHANGE_TOOLS)
        on += [x for x in its_on if x not in on]
        if its_tools is None or tools is None:
            tools = None
        else:
            tools += [t for t in its_tools if t not in tools]
        match = str(trig.get("match") or "").strip()
        if match:
            problem = _expr_problem(match, gate=True)
            if problem:
                conv.fail(reader.at(trig, "match"), problem)
            test = f"{test} and ({match})"
        parts.append(test)
        if event == "Stop":
            conv.notes.append(Note(where, "Stop: slopjudge runs a stop rule when the "
                                   "session changed files; a turn that changed none ends"))
        if event == "PreFileDelete":
            conv.notes.append(Note(where, "PreFileDelete: an apply_patch deletion is judged "
                                   "before it runs; a shell `rm` when the turn stops"))
    lines = _header(f"sloprail gate {o.name}", conv.source + "/gate.yaml")
    lines.append(f"on: {_yaml_list(on)}")
    if tools and "pre-tool" in on:
        lines.append(f"tools: {_yaml_list(tools)}")
    if parts:
        lines.append(f"match: {_yaml_str(_joined(parts, 'or'))}")
    lines += _convert_require(conv, reader, data, o.folder, o.rel_dir)
    checks = _convert_checks(conv, reader, data, o.folder, o.rel_dir,
                             each_file=file_only and bool(on))
    if not checks and "require" not in data:
        conv.fail(reader.at(data), "no check converted")
    if not checks:
        conv.made["requirements-met.sh"] = _PASS_SCRIPT
    conv.yaml = "\n".join([*lines, "checks:", *(checks or _REQUIRE_ONLY)]) + "\n"


_CONVERTERS: dict[str, Callable[[_Opened], None]] = {"file-guard": _file_guard, "gate": _gate}


def _load(reader: _Reader, conv: Converted) -> Any:
    from ruamel.yaml.error import YAMLError

    try:
        data = reader.load()
    except (OSError, UnicodeDecodeError, YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        conv.fail(f"{reader.shown}:1", f"cannot read: {first}")
        return None
    if not isinstance(data, dict):
        conv.fail(f"{reader.shown}:1", "not a YAML mapping")
        return None
    return data


def _config_lists(root: str, shown_root: str) -> dict[str, dict[str, str]]:
    """``disabled:`` and ``enabled:`` of ``config.yaml``: qualified name -> where listed."""
    path = os.path.join(root, "config.yaml")
    out: dict[str, dict[str, str]] = {"disabled": {}, "enabled": {}}
    if not os.path.isfile(path):
        return out
    from ruamel.yaml.error import YAMLError

    reader = _Reader(path, f"{shown_root}/config.yaml")
    try:
        data = reader.load()
    except (OSError, UnicodeDecodeError, YAMLError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"{reader.shown}:1: cannot read ({first}); its `disabled:` list is not applied",
              file=sys.stderr)
        return out
    for key in out:
        items = data.get(key) if isinstance(data, dict) else None
        if isinstance(items, list):
            out[key] = {str(v): reader.at(items, n) for n, v in enumerate(items)}
    return out


def _inside(path: str, root: str) -> bool:
    """``path``, symlinks resolved, is ``root`` (resolved) or under it."""
    real, home = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([real, home]) == home


def _not_converted(source: str, where: str, why: str, off: bool = False) -> Converted:
    conv = Converted(source, fatal=True, off=off)
    conv.notes.append(Note(where, why))
    return conv


def _declaration(root: str, shown_root: str, nature: str, name: str,
                 config: dict[str, dict[str, str]]) -> Converted:
    """One rule folder converted, or why it is not."""
    folder = os.path.join(root, nature, name)
    source, where = f"{nature}/{name}", f"{shown_root}/{nature}/{name}:1"
    yaml_path = os.path.join(folder, f"{nature}.yaml")
    if not _inside(folder, root) or (os.path.lexists(yaml_path)
                                      and not _inside(yaml_path, folder)):
        return _not_converted(source, where, "a symlink leading out of the sloprail folder: "
                              "not followed")
    if not os.path.isfile(yaml_path):
        return _not_converted(source, where, f"no {nature}.yaml in this folder")
    if source in config["disabled"]:
        return _not_converted(source, config["disabled"][source],
                              "disabled in config.yaml: off in sloprail, so not converted",
                              off=True)
    conv = convert(nature, folder, name, shown_root)
    off = nature == "gate" and not conv.fatal and _off_by_default(yaml_path)
    if off and source not in config["enabled"]:
        return _not_converted(source, where, "enabled: false and not listed in config.yaml "
                              "`enabled:`: off in sloprail, so not converted", off=True)
    return conv


def _off_by_default(yaml_path: str) -> bool:
    from ruamel.yaml import YAML

    with open(yaml_path, encoding="utf-8") as fh:
        data = YAML(typ="safe").load(fh)
    return isinstance(data, dict) and data.get("enabled") is False


def discover(root: str, shown_root: str) -> list[Converted]:
    """Every sloprail declaration under ``root``, converted or named as not convertible."""
    out: list[Converted] = []
    config = _config_lists(root, shown_root)
    for nature in _CONVERTERS:
        base = os.path.join(root, nature)
        if not os.path.isdir(base):
            continue
        if nature == "file-guard" and os.path.isfile(os.path.join(base, "structure.yaml")):
            out.append(_not_converted(
                "file-guard/structure.yaml", f"{shown_root}/file-guard/structure.yaml:1",
                "a structure rule (path allowlist): slopjudge has none; write a script "
                "check over changeset.files instead"))
        for name in sorted(os.listdir(base)):
            folder = os.path.join(base, name)
            if name.startswith(".") or name.endswith(".tests") or not os.path.isdir(folder):
                continue
            out.append(_declaration(root, shown_root, nature, name, config))
    for nature, why in (("context", "a context (a scope a session enters and leaves): "
                                    "slopjudge has no contexts"),
                        ("guardrails", "a legacy GUARDRAIL.md rule: convert it by hand")):
        base = os.path.join(root, nature)
        if os.path.isdir(base):
            for name in sorted(os.listdir(base)):
                if os.path.isdir(os.path.join(base, name)) and not name.startswith("."):
                    out.append(_not_converted(f"{nature}/{name}",
                                              f"{shown_root}/{nature}/{name}:1", why))
    return out


def _copy_folder(src_dir: str, dest_dir: str, skip: str) -> list[str]:
    """Copy the rule folder (its scripts' sourced siblings and data, its ``tests/``)
    but ``skip``; a symlink is copied as the file it names when that stays inside the
    rule folder, and left out (returned) when it leads out of it."""
    left_out: list[str] = []
    for folder, dirs, files in os.walk(src_dir):
        rel = os.path.relpath(folder, src_dir)
        os.makedirs(os.path.normpath(os.path.join(dest_dir, rel)), exist_ok=True)
        for name in [*files, *[d for d in dirs if os.path.islink(os.path.join(folder, d))]]:
            src = os.path.join(folder, name)
            shown = os.path.normpath(os.path.join(rel, name))
            if shown == skip:
                continue
            if not _inside(src, src_dir) or not os.path.isfile(src):
                left_out.append(shown)
                continue
            shutil.copy2(src, os.path.join(dest_dir, shown))  # keeps the execute bit
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
    return left_out


def write_rule(conv: Converted, rules_dir: str, src_dir: str) -> str | None:
    """Write ``rules/<id>/``; a one-line reason instead when something is in the way."""
    assert conv.rule_id is not None
    dest = os.path.join(rules_dir, conv.rule_id)
    for taken in (dest, dest + ".yaml"):
        if os.path.lexists(taken):
            return f"{os.path.relpath(taken)} already exists; nothing written (never overwritten)"
    os.makedirs(dest)
    skipped = _copy_folder(src_dir, dest, conv.source.split("/")[0] + ".yaml")
    for name, text in sorted(conv.made.items()):
        with open(os.path.join(dest, name), "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(os.path.join(dest, name), 0o755)
    for name in skipped:
        conv.notes.append(Note(f"{conv.source}/{name}", "not copied: a symlink leading "
                               "out of the rule folder"))
    with open(os.path.join(dest, "rule.yaml"), "w", encoding="utf-8") as fh:
        fh.write(conv.yaml)
    return None


def run(args: argparse.Namespace) -> int:
    from slopjudge.loading.config import find_workspace, load_settings

    root = os.path.abspath(args.folder)
    if not os.path.isdir(root):
        return fail(f"no sloprail folder at {args.folder}")
    workspace = find_workspace(os.getcwd())
    rules_arg = getattr(args, "rules", None)
    settings = load_settings(workspace, os.path.abspath(rules_arg) if rules_arg else None)
    rules_dir = settings.rules_dir
    shown_root = os.path.relpath(root)
    found = discover(root, shown_root)
    if not found:
        return fail(f"{args.folder} holds no file-guard/ or gate/ rule folders")
    taken: set[str] = set()
    written: list[str] = []
    invalid: list[str] = []
    for conv in found:
        if not conv.fatal:
            rid = _rule_id(conv.source.split("/", 1)[1])
            if rid in taken:
                rid = _rule_id(conv.source.replace("/", "-"))
            conv.rule_id = rid
            taken.add(rid)
    os.makedirs(rules_dir, exist_ok=True)
    for conv in found:
        if conv.fatal:
            print(f"{conv.source}: " + ("off, not converted" if conv.off else "NOT converted"))
        else:
            assert conv.rule_id is not None
            src_dir = os.path.join(root, conv.source)
            problem = write_rule(conv, rules_dir, src_dir)
            shown = os.path.relpath(os.path.join(rules_dir, conv.rule_id))
            if problem:
                print(f"{conv.source}: NOT converted: {problem}")
                conv.fatal = True
            else:
                print(f"{conv.source} -> {shown}/")
                written.append(conv.rule_id)
        for note in conv.notes:
            print(f"  {'why' if conv.fatal else 'note'}: {note}")
    if written:
        from slopjudge.loading.loader import load_rules

        result = load_rules(rules_dir, workspace=settings.workspace,
                            template_dirs=settings.template_dirs)
        loaded = {r.id for r in result.rules}
        for rid in written:
            folder = os.path.join(rules_dir, rid) + os.sep
            problems = [e for e in result.errors if e.rule == rid
                        or os.path.abspath(e.path).startswith(folder)]
            if rid in loaded and not problems:
                print(f"{rid}: passes slopjudge validate")
            else:
                invalid.append(rid)
                print(f"{rid}: does NOT pass slopjudge validate:")
                for e in problems or result.errors:
                    print(f"  {e}")
    bad = [c for c in found if c.fatal and not c.off]
    off = len(found) - len(bad) - len(written)
    print(f"slopjudge: {len(written)} rule(s) converted ({len(invalid)} of them do not "
          f"validate), {len(bad)} not converted" + (f", {off} off in sloprail" if off else ""),
          file=sys.stderr)
    return 1 if bad or invalid else 0
