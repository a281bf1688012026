"""`slopjudge import sloprail [.sloprail]`: convert sloprail rule folders into rules/.

``file-guard/<name>/file-guard.yaml`` and ``gate/<name>/gate.yaml`` become
``rules/<name>/rule.yaml`` with the scripts, prepares and templates copied
beside it. What has no slopjudge meaning (match expressions beyond plain path
or command tests, ``require``, contexts, structure rules, ``subjects``,
``response_schema``, ``post_process``, scripts calling sloprail's own
commands) is printed per rule with the file and line it came from. Nothing
is ever overwritten; the converted rules are loaded as ``slopjudge validate``
loads them, and every problem is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from slopjudge.changes.tools import CHANGE_TOOLS
from slopjudge.commands._shared import add_rules_argument, fail

# A line of a script that runs one of sloprail's own programs.
_SR_COMMAND = re.compile(r"(?:^|[\s;&|(`$'\"])(sr|sr-[a-z]+|sloprail)(?:\s|$)")
# A string literal of sloprail's expression language (expr-lang).
_LIT = r'"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\''


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
    files: dict[str, str] = field(default_factory=dict)  # rule-relative name -> source path
    yaml: str = ""
    notes: list[Note] = field(default_factory=list)  # what did not convert
    fatal: bool = False  # the rule itself could not be converted

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


def _unquote(m: re.Match[str]) -> str:
    """The string literal of a match: _LIT's two groups are always its last two."""
    double, single = m.groups()[-2:]
    raw = double if double is not None else single
    return re.sub(r"\\(.)", r"\1", raw)


def _terms(expr: str) -> list[str] | None:
    """``a or b || c`` split at top level (outside quotes and brackets); None if unbalanced."""
    out, buf, depth, quote, i = [], [], 0, "", 0
    while i < len(expr):
        ch = expr[i]
        if quote:
            buf.append(ch)
            if ch == "\\" and i + 1 < len(expr):
                buf.append(expr[i + 1])
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            buf.append(ch)
        elif ch in "([{":
            depth += 1
            buf.append(ch)
        elif ch in ")]}":
            depth -= 1
            buf.append(ch)
        elif depth == 0 and (m := re.match(r"\s+(or|\|\|)\s+", expr[i:])):
            out.append("".join(buf).strip())
            buf = []
            i += m.end()
            continue
        else:
            buf.append(ch)
        i += 1
    if quote or depth:
        return None
    out.append("".join(buf).strip())
    return [t for t in out if t]


_GLOB_CHARS = re.compile(r"[*?\[\]\\{}]")


def _path_test(term: str, var: str) -> list[tuple[str, str | None]] | None:
    """``<var> endsWith "x"`` (and startsWith, ==, contains) as (path glob, exclude glob)."""
    m = re.fullmatch(rf"{re.escape(var)}\s+(endsWith|startsWith|==|contains)\s+(?:{_LIT})", term)
    if not m:
        return None
    op, lit = m.group(1), _unquote(m)
    if not lit or _GLOB_CHARS.search(lit) or lit.startswith("/"):
        return None
    if op == "==":
        return [("/" + lit, None)]
    if op == "startsWith":
        return [("/" + lit + ("**" if lit.endswith("/") else "*"), None)]
    if op == "contains":
        return [("**/*" + lit + "*", None)]
    # endsWith: a folder whose name ends so would admit every file under it.
    return [("**/*" + lit, "**/*" + lit + "/**")]


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


def _command_test(term: str) -> list[str] | None:
    m = re.fullmatch(rf"any\(\s*event\.invocations\s*,\s*\.bin\s*==\s*(?:{_LIT})\s*\)", term)
    if m:
        b = _unquote(m)
        if not b or _GLOB_CHARS.search(b) or re.search(r"[\s()]", b):
            return None
        return [f"Bash({b})", f"Bash({b} *)"]
    m = re.fullmatch(rf"event\.raw\s+(==|startsWith|contains)\s+(?:{_LIT})", term)
    if m:
        lit = _unquote(m)
        if not lit or _GLOB_CHARS.search(lit) or re.search(r"[()]", lit):
            return None
        return [{"==": f"Bash({lit})", "startsWith": f"Bash({lit}*)",
                 "contains": f"Bash(*{lit}*)"}[m.group(1)]]
    return None


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


def _script_notes(path: str, shown: str) -> list[Note]:
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
                              f"(`{text[:80]}`): not available under slopjudge; the check "
                              "refuses until it is rewritten"))
        elif re.search(r"\.event\.(raw|invocations|resultKnown|result)\b", text):
            notes.append(Note(f"{shown}:{n}", "reads a sloprail event field slopjudge does "
                              "not send: a Bash command is event.tool_input.command (and "
                              "event.argv); edit results are changeset.files[].newContent"))
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
            conv.notes += _script_notes(local, f"{rel_dir}/{name}")
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
                    conv.notes.append(Note(at, "prepare on a script check: slopjudge runs "
                                           "prepare only before a judge; left out"))
                    continue
                p = _local(rule_dir, str(value))
                if p is None:
                    conv.fail(at, f"prepare `{value}` is not a file inside "
                              "the rule folder")
                    continue
                pname = os.path.relpath(p, rule_dir)
                conv.files[pname] = p
                conv.notes += _script_notes(p, f"{rel_dir}/{pname}")
                lines.append(f"    prepare: {_yaml_str(pname)}")
            elif key in ("model", "timeout"):
                lines.append(f"    {key}: {_yaml_str(str(value))}")
            elif key in ("allowed_tools", "disallowed_tools"):
                if isinstance(value, list):
                    lines.append(f"    {key}: {_yaml_list([str(v) for v in value])}")
                else:
                    conv.notes.append(Note(at, f"{key} is not a list; left out"))
            elif key in ("response_schema", "post_process"):
                conv.notes.append(Note(at, f"{key}: slopjudge judges answer its own verdict "
                                       "schema only; left out"))
            else:
                conv.notes.append(Note(at, f"check field `{key}` has no slopjudge meaning; "
                                       "left out"))
        if kind == "judge" and each_file:
            lines.append("    each: file")
        out += lines
        prev = (cid, kind)
    return out


def _require_notes(reader: _Reader, data: Any, conv: Converted) -> None:
    req = data.get("require")
    if not req:
        return
    items = req if isinstance(req, list) else [req]
    for n, item in enumerate(items):
        where = reader.at(req, n) if isinstance(req, list) else reader.at(data, "require")
        what = ", ".join(str(k) for k in item) if isinstance(item, dict) else str(item)
        conv.notes.append(Note(where, f"require ({what}): slopjudge has no prerequisites "
                               "(skills, contexts, citations); left out, so the rule no "
                               "longer waits for it"))


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


class _Selection:
    """The ``paths`` and ``exclude`` a conversion builds from sloprail path tests."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.exclude: list[str] = []

    def add(self, include: str, exclude: str | None) -> None:
        self.paths.append(include)
        if exclude:
            self.exclude.append(exclude)

    def add_all(self, found: Sequence[list[tuple[str, str | None]] | None]) -> None:
        for f in found:
            for inc, exc in f or []:
                self.add(inc, exc)

    def yaml_lines(self, exclude_note: str | None = None) -> list[str]:
        lines = [f"paths: {_yaml_list(self.paths)}"] if self.paths else []
        if self.exclude:
            lines += [f"# {exclude_note}"] if exclude_note else []
            lines.append(f"exclude: {_yaml_list(self.exclude)}")
        return lines


def _file_guard(o: _Opened) -> None:
    conv, reader, data = o.conv, o.reader, o.data
    sel = _Selection()
    match = data.get("match")
    if match is None or str(match).strip() == "":
        conv.notes.append(Note(reader.at(data), "no match: every file"))
    else:
        text = str(match).strip()
        if not re.search(r"[\s\"']", text):
            g = _glob(text)
            if g is None:
                conv.fail(reader.at(data, "match"), f"match glob `{text}` uses "
                          "`**` inside a name or a backslash, which slopjudge "
                          "globs read differently")
            else:
                sel.add(*g)
        else:
            terms = _terms(text)
            found = [_path_test(t, "path") for t in terms] if terms else [None]
            if any(f is None for f in found):
                conv.fail(reader.at(data, "match"), f"match `{text}`: a sloprail "
                          "match expression (markers, contexts, trailers, and/not, "
                          "regexes) that slopjudge's paths cannot express")
            else:
                sel.add_all(found)
    deletions = str(data.get("deletions") or "skip")
    if deletions == "only":
        conv.fail(reader.at(data, "deletions"), "deletions: only: slopjudge "
                  "cannot run a rule on deleted files alone")
    elif deletions == "skip":
        conv.notes.append(Note(reader.at(data, "deletions") if "deletions" in data
                               else reader.at(data),
                               "deletions: skip (the default): slopjudge also shows this rule "
                               "deleted files; a per-file judge sees no event.newContent on "
                               "them (`is defined`)"))
    for key in ("subjects", "context"):
        if key in data:
            conv.notes.append(Note(reader.at(data, key), f"{key}: has no slopjudge meaning; "
                                   "left out"))
    _require_notes(reader, data, conv)
    checks = _convert_checks(conv, reader, data, o.folder, o.rel_dir, each_file=True)
    if not checks:
        conv.fail(reader.at(data), "no check converted")
    lines = _header(f"sloprail file-guard {o.name}", conv.source + "/file-guard.yaml")
    lines.append("on: [stop, ci]")
    lines += sel.yaml_lines("sloprail matched whole file paths: a folder matching is not "
                            "enough.")
    lines.append("checks:")
    conv.yaml = "\n".join(lines + checks) + "\n"


_FILE_EVENTS = {"PreFileCreate", "PreFileUpdate", "PreFileWrite"}


def _gate(o: _Opened) -> None:
    conv, reader, data = o.conv, o.reader, o.data
    on: list[str] = []
    tools: list[str] = []
    sel = _Selection()
    any_file_without_match = False
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
        match = str(trig.get("match") or "").strip()
        terms = _terms(match) if match else []
        if event in _FILE_EVENTS:
            on.append("pre-tool")
            tools += [t for t in CHANGE_TOOLS if t not in tools]
            if event != "PreFileWrite":
                conv.notes.append(Note(where, f"{event}: slopjudge's pre-tool event does not "
                                       "tell a create from an update; the rule runs on both"))
            if not match:
                any_file_without_match = True
                continue
            found = [_path_test(t, "event.path") for t in terms or []]
            if not terms or any(f is None for f in found):
                conv.fail(reader.at(trig, "match"), f"match `{match}`: a sloprail "
                          "match expression slopjudge's paths cannot express")
                continue
            sel.add_all(found)
        elif event == "PreCommandInvoke":
            file_only = False
            on.append("pre-tool")
            if not match:
                tools.append("Bash")
                continue
            cmd = [_command_test(t) for t in terms or []]
            if not terms or any(c is None for c in cmd):
                conv.fail(reader.at(trig, "match"), f"match `{match}`: a sloprail "
                          "match expression slopjudge's `tools` patterns cannot "
                          "express")
                continue
            for c in cmd:
                tools += [t for t in c or [] if t not in tools]
            conv.notes.append(Note(reader.at(trig, "match"), "sloprail matched a program by "
                                   "its basename; `Bash(<cmd> *)` matches it as written (a "
                                   "full path such as /usr/bin/<cmd> is not the same)"))
        elif event in ("PreToolUse", "Stop"):
            file_only = False
            on.append("pre-tool" if event == "PreToolUse" else "stop")
            if match:
                conv.fail(reader.at(trig, "match"), f"match `{match}` on {event}: not converted")
            elif event == "PreToolUse":
                tools.append("*")
        else:
            conv.fail(where, f"event {event}: slopjudge has no such event "
                      "(it judges pre-tool calls, stops and CI changes)")
    if data.get("enabled") is False:
        conv.notes.append(Note(reader.at(data, "enabled"), "enabled: false: slopjudge has no "
                               "off-by-default rules; the converted rule is on"))
    _require_notes(reader, data, conv)
    checks = _convert_checks(conv, reader, data, o.folder, o.rel_dir,
                             each_file=file_only and bool(on))
    if not checks:
        conv.fail(reader.at(data), "no check converted")
    if any_file_without_match:
        sel = _Selection()
    lines = _header(f"sloprail gate {o.name}", conv.source + "/gate.yaml")
    lines.append(f"on: {_yaml_list(sorted(set(on)))}")
    if tools and "*" not in tools:
        lines.append(f"tools: {_yaml_list(tools)}")
    lines += sel.yaml_lines()
    lines.append("checks:")
    conv.yaml = "\n".join(lines + checks) + "\n"


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
    if "preventive" in data:
        conv.notes.append(Note(reader.at(data, "preventive"), "preventive: retired in "
                               "sloprail; left out"))
    return data


def _disabled(root: str, shown_root: str) -> dict[str, str]:
    """``disabled:`` of ``config.yaml``: qualified name -> where it is listed."""
    path = os.path.join(root, "config.yaml")
    if not os.path.isfile(path):
        return {}
    from ruamel.yaml.error import YAMLError

    reader = _Reader(path, f"{shown_root}/config.yaml")
    try:
        data = reader.load()
    except (OSError, UnicodeDecodeError, YAMLError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        print(f"{reader.shown}:1: cannot read ({first}); its `disabled:` list is not applied",
              file=sys.stderr)
        return {}
    items = data.get("disabled") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return {}
    return {str(v): reader.at(items, n) for n, v in enumerate(items)}


def discover(root: str, shown_root: str) -> list[Converted]:
    """Every sloprail declaration under ``root``, converted or named as not convertible."""
    out: list[Converted] = []
    disabled = _disabled(root, shown_root)
    for nature in _CONVERTERS:
        yaml_name = f"{nature}.yaml"
        base = os.path.join(root, nature)
        if not os.path.isdir(base):
            continue
        if nature == "file-guard" and os.path.isfile(os.path.join(base, "structure.yaml")):
            conv = Converted("file-guard/structure.yaml", fatal=True)
            conv.notes.append(Note(f"{shown_root}/file-guard/structure.yaml:1",
                                   "a structure rule (path allowlist): slopjudge has none; "
                                   "write a script check over changeset.files instead"))
            out.append(conv)
        for name in sorted(os.listdir(base)):
            folder = os.path.join(base, name)
            if name.startswith(".") or not os.path.isdir(folder):
                continue
            if name.endswith(".tests"):
                continue
            if not os.path.isfile(os.path.join(folder, yaml_name)):
                conv = Converted(f"{nature}/{name}", fatal=True)
                conv.notes.append(Note(f"{shown_root}/{nature}/{name}:1",
                                       f"no {yaml_name} in this folder"))
                out.append(conv)
                continue
            if f"{nature}/{name}" in disabled:
                conv = Converted(f"{nature}/{name}", fatal=True)
                conv.notes.append(Note(disabled[f"{nature}/{name}"],
                                       "disabled in config.yaml: not converted"))
                out.append(conv)
                continue
            out.append(convert(nature, folder, name, shown_root))
    for nature, why in (("context", "a context (a scope a session enters and leaves): "
                                    "slopjudge has no contexts"),
                        ("guardrails", "a legacy GUARDRAIL.md rule: convert it by hand")):
        base = os.path.join(root, nature)
        if os.path.isdir(base):
            for name in sorted(os.listdir(base)):
                if os.path.isdir(os.path.join(base, name)) and not name.startswith("."):
                    conv = Converted(f"{nature}/{name}", fatal=True)
                    conv.notes.append(Note(f"{shown_root}/{nature}/{name}:1", why))
                    out.append(conv)
    return out


def _copy_tests(src_dir: str, dest_dir: str) -> list[str]:
    tests = os.path.join(src_dir, "tests")
    if not os.path.isdir(tests):
        return []
    shutil.copytree(tests, os.path.join(dest_dir, "tests"), symlinks=True)
    return sorted(d for d in os.listdir(tests) if os.path.isdir(os.path.join(tests, d)))


def write_rule(conv: Converted, rules_dir: str, src_dir: str) -> str | None:
    """Write ``rules/<id>/``; a one-line reason instead when something is in the way."""
    assert conv.rule_id is not None
    dest = os.path.join(rules_dir, conv.rule_id)
    for taken in (dest, dest + ".yaml"):
        if os.path.lexists(taken):
            return f"{os.path.relpath(taken)} already exists; nothing written (never overwritten)"
    os.makedirs(dest)
    for name, src in sorted(conv.files.items()):
        target = os.path.join(dest, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(src, target)  # keeps the execute bit
    _copy_tests(src_dir, dest)
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
            print(f"{conv.source}: NOT converted")
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
            print(f"  {'why' if conv.fatal else 'not converted'}: {note}")
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
    bad = [c for c in found if c.fatal]
    print(f"slopjudge: {len(written)} rule(s) converted ({len(invalid)} of them do not "
          f"validate), {len(bad)} not converted", file=sys.stderr)
    return 1 if bad or invalid else 0
