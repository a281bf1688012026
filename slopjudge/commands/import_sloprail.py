"""`slopjudge import sloprail [.sloprail]`: convert sloprail rule folders into rules/.

``file-guard/<name>/file-guard.yaml`` and ``gate/<name>/gate.yaml`` become
``rules/<name>/rule.yaml`` with their folder copied beside it (docs/sloprail.md has
every form). A rule that would behave differently under slopjudge is refused, never
written, with the file and line of each reason. Nothing is overwritten, nothing is
read through a symlink leading out of the folder, and what is written is validated.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from slopjudge.changes.tools import CHANGE_TOOLS
from slopjudge.commands._shared import add_rules_argument, fail, settings_of
from slopjudge.fsutil import inside, write_atomic
from slopjudge.loading.loader import load_rules
from slopjudge.loading.matchexpr import MatchError, _tokens, compile_match

# A line of a script that runs one of sloprail's own programs.
_SR_COMMAND = re.compile(r"(?:^|[\s;&|(`$'\"])(sr|sr-[a-z]+|sloprail)(?:\s|$)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", choices=["sloprail"], help="the tool to import from")
    parser.add_argument("folder", nargs="?", default=".sloprail",
                        help="the .sloprail folder (default: .sloprail)")
    add_rules_argument(parser)


@dataclass
class Converted:
    """A declaration's conversion: its result, and while converting, its YAML file and
    folder as shown, its mapping, its folder and name."""

    source: str  # "file-guard/<name>"
    rule_id: str | None = None
    made: dict[str, str] = field(default_factory=dict)  # rule-relative name -> script text
    yaml: str = ""
    notes: list[str] = field(default_factory=list)  # "file:line: what did not convert"
    fatal: bool = False  # the rule itself could not be converted
    off: bool = False  # off in sloprail (disabled, or enabled: false): not converted, rightly
    enabled: bool = True  # a gate's own `enabled:`, which config.yaml's `enabled:` overrides
    shown: str = ""
    rel_dir: str = ""
    data: Any = None
    folder: str = ""
    name: str = ""

    def note(self, where: str, text: str) -> None:
        self.notes.append(f"{where}: {text}")

    def fail(self, where: str, message: str) -> None:
        """A note on what makes the rule itself unconvertible."""
        self.note(where, message)
        self.fatal = True

    def at(self, node: Any, key: Any = None) -> str:
        return _at(self.shown, node, key)

    def fail_at(self, node: Any, key: Any, message: str) -> None:
        self.fail(self.at(node, key), message)

    def script(self, value: Any, where: str, what: str, *, scan: bool = True) -> str | None:
        """``value`` as a path relative to the rule folder, when it names a file inside it
        (resolved: neither `..` nor a symlink brings one in from elsewhere); its lines
        that would not work under slopjudge noted."""
        full = os.path.normpath(os.path.join(self.folder, str(value)))
        if os.path.isabs(str(value)) or not inside(full, self.folder) \
                or not os.path.isfile(full):
            self.fail(where, f"{what} `{value}` is not a file inside the rule folder")
            return None
        name = os.path.relpath(full, self.folder)
        try:
            with open(full, encoding="utf-8", errors="replace") as fh:
                lines = fh.read().splitlines() if scan else []
        except OSError:
            lines = []
        for n, line in enumerate(lines, 1):
            text = line.strip()
            if text.startswith("#"):
                continue
            for rx, why in _SCRIPT_PROBLEMS:
                m = rx.search(text)
                if m:
                    self.fail(f"{self.rel_dir}/{name}:{n}",
                              why.format(*m.groups(), line=text[:80]))
                    break
        return name


def _read_yaml(path: str) -> tuple[Any, str | None]:
    """A sloprail YAML file, read round-trip so every value has a line; or why not."""
    try:
        with open(path, encoding="utf-8") as fh:
            return YAML(typ="rt").load(fh), None
    except (OSError, UnicodeDecodeError, YAMLError) as exc:
        return None, (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _at(shown: str, node: Any, key: Any = None) -> str:
    """``file:line`` of ``node`` (of its item or key ``key``); line 1 when unknown."""
    try:
        if key is None:
            line = node.lc.line
        else:
            line = (node.lc.item(key) if isinstance(key, int) else node.lc.key(key))[0]
    except (AttributeError, KeyError, IndexError, TypeError):
        line = 0
    return f"{shown}:{line + 1}"


# ---- match expressions -----------------------------------------------------------

# The event fields slopjudge gives a match (payload.py, rulefilter.py): a file event's,
# a shell command's and any tool call's.
_EVENT_FIELDS = frozenset({
    "kind", "on", "path", "oldPath", "oldContent", "newContent", "oldMarkers", "newMarkers",
    "newContentKnown", "resultKnown", "raw", "invocations", "citations", "argv", "tool",
    "tool_name", "tool_input", "session_id", "transcript_path", "cwd",
})


def _expr_problem(text: str, *, gate: bool) -> str | None:
    """Why a sloprail match expression cannot become a slopjudge ``match`` that means the
    same; None when it can (docs/sloprail.md lists every reason)."""
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


# A script line that would not work under slopjudge, and why ({0}: the program it
# calls); the first that matches is noted.
_SCRIPT_PROBLEMS = (
    (_SR_COMMAND, "calls sloprail's own `{0}` (`{line}`), which slopjudge does not provide"),
    (re.compile(r"(^|[\s\"'=(:/])\.\./"),
     "reads a file outside its rule folder (`{line}`), which is not copied"),
    (re.compile(r"[\"']Changeset[\"']"), "expects sloprail's changeset event "
     "(`event.kind == \"Changeset\"`); slopjudge gives each file's event"),
    (re.compile(r"\bSR_(AGENT_ID|TREE)\b|SLOPRAIL_"),
     "reads an environment variable slopjudge does not set (`{line}`)"),
)


def _yaml(value: str | list[str]) -> str:
    """A string or a list of strings in YAML's flow form (JSON's)."""
    return json.dumps(value, ensure_ascii=False)


def _convert_checks(o: Converted, *, each_file: bool) -> list[str]:
    """The ``checks:`` lines of rule.yaml; what does not convert is noted on ``o``."""
    out: list[str] = []
    checks = o.data.get("checks") or []
    if not isinstance(checks, list):
        o.fail_at(o.data, "checks", "checks is not a list")
        return out
    used: set[str] = set()
    prev: tuple[str, str] | None = None  # (id, kind) of the check before
    for n, item in enumerate(checks):
        where = o.at(checks, n)
        if not isinstance(item, dict):
            o.fail(where, f"check {n + 1} is not a mapping")
            continue
        kinds = [k for k in ("script", "judge") if item.get(k)]
        if len(kinds) != 1:
            o.fail(where, f"check {n + 1} needs exactly one of script, judge")
            continue
        kind = kinds[0]
        name = o.script(item[kind], o.at(item, kind), kind, scan=kind == "script")
        if name is None:
            continue
        cid = _check_id(str(item[kind]), used)
        out += [f"  - id: {cid}", f"    {kind}: {_yaml(name)}"]
        if prev is not None and prev[1] == "script":
            # sloprail stops at the first refusal: a script before this check gates it.
            out.append(f"    needs: [{prev[0]}]")
        out += _check_fields(o, item, kind)
        if each_file:
            out.append("    each: file")
        prev = (cid, kind)
    return out


def _check_fields(o: Converted, item: dict[str, Any], kind: str) -> list[str]:
    """A check's fields besides its script or judge, as rule.yaml lines."""
    lines: list[str] = []
    for key, value in item.items():
        at = o.at(item, key)
        if key in ("script", "judge"):
            continue
        if key == "prepare" and kind != "judge":
            o.fail(at, "prepare on a script check: slopjudge runs a prepare only "
                   "before a judge")
        elif key == "prepare":
            name = o.script(value, at, "prepare")
            if name is not None:
                lines.append(f"    prepare: {_yaml(name)}")
        elif key in ("model", "timeout"):
            lines.append(f"    {key}: {_yaml(str(value))}")
        elif key in ("allowed_tools", "disallowed_tools") and isinstance(value, list):
            lines.append(f"    {key}: {_yaml([str(v) for v in value])}")
        elif key in ("allowed_tools", "disallowed_tools"):
            o.fail(at, f"{key} is not a list")
        elif key in ("response_schema", "post_process"):
            o.fail(at, f"{key}: slopjudge's judges answer its own verdict schema "
                   "only (pass, reasoning, confidence, findings)")
        else:
            o.fail(at, f"check field `{key}` has no slopjudge meaning")
    return lines


def _citation(value: Any) -> bool:
    """Whether a sloprail ``citation`` has slopjudge's form: ``{source_types: [...]}``."""
    return isinstance(value, dict) and set(value) == {"source_types"} and isinstance(
        value["source_types"], list) and all(
        t in ("user", "tool_result") for t in value["source_types"])


def _convert_require(o: Converted) -> list[str]:
    """``require:`` as slopjudge's (checks/require.py), its ``when`` scripts copied."""
    req = o.data.get("require")
    if req is None:
        return []
    if not isinstance(req, list):
        o.fail_at(o.data, "require", "require is not a list")
        return []
    out = ["require:"]
    for n, item in enumerate(req):
        where = o.at(req, n)
        if not isinstance(item, dict):
            o.fail(where, f"require {n + 1} is not a mapping")
            continue
        entry: dict[str, Any] = {}
        for key, value in item.items():
            if key == "context":
                o.fail(where, f"require context `{value}`: slopjudge has no contexts")
            elif key == "skill" and isinstance(value, str):
                entry["skill"] = value
            elif key == "files" and isinstance(value, list):
                entry["files"] = [str(v) for v in value]
            elif key == "citation" and _citation(value):
                entry["citation"] = {"source_types": [str(t) for t in value["source_types"]]}
            elif key == "when":
                name = o.script(value, where, "when")
                if name is not None:
                    entry["when"] = name
            else:
                o.fail(where, f"require field `{key}`: {value!r} has no slopjudge form")
        out.append(f"  - {json.dumps(entry, ensure_ascii=False)}")
    return out


def _header(o: Converted, on: list[str]) -> list[str]:
    nature = o.source.split("/")[0]
    return [
        f"# Converted from sloprail's .sloprail/{o.source}/{nature}.yaml by "
        "`slopjudge import sloprail`.",
        f"description: {_yaml(f'sloprail {nature} {o.name}')}",
        f"on: {_yaml(on)}",
    ]


# A rule of requirements alone still needs a check: one that always passes.
_REQUIRE_ONLY = ["  - id: requirements-met", "    script: requirements-met.sh"]
_PASS_SCRIPT = ("#!/bin/sh\n# sloprail's rule is its requirements: once they hold, it passes.\n"
                "exit 0\n")


def _finish(o: Converted, lines: list[str], *, each_file: bool) -> None:
    """The rule.yaml text: ``lines``, then the checks (or one that passes, when the rule
    is its requirements alone)."""
    checks = _convert_checks(o, each_file=each_file)
    if not checks and "require" not in o.data:
        o.fail_at(o.data, None, "no check converted")
    if not checks:
        o.made["requirements-met.sh"] = _PASS_SCRIPT
    o.yaml = "\n".join([*lines, "checks:", *(checks or _REQUIRE_ONLY)]) + "\n"


def convert(nature: str, folder: str, name: str, shown_root: str) -> Converted:
    """One file-guard's or gate's conversion: its YAML read (unreadable: noted, fatal),
    then the converter of its nature."""
    rel_dir = f"{shown_root}/{nature}/{name}"
    conv = Converted(f"{nature}/{name}", shown=f"{rel_dir}/{nature}.yaml", rel_dir=rel_dir,
                     folder=folder, name=name)
    conv.data, problem = _read_yaml(os.path.join(folder, f"{nature}.yaml"))
    if problem is not None:
        conv.fail(f"{conv.shown}:1", f"cannot read: {problem}")
    elif not isinstance(conv.data, dict):
        conv.fail(f"{conv.shown}:1", "not a YAML mapping")
    else:
        conv.enabled = conv.data.get("enabled") is not False
        (_file_guard if nature == "file-guard" else _gate)(conv)
    return conv


def _joined(parts: list[str], op: str) -> str:
    if len(parts) == 1:
        return parts[0]
    return f" {op} ".join(f"({p})" for p in parts)


_FILE_GUARD_KEYS = ("match", "deletions", "require", "subjects", "checks", "preventive")
_GATE_KEYS = ("on", "require", "checks", "enabled")


def _unknown_keys(o: Converted, known: tuple[str, ...]) -> None:
    for key in o.data:
        if key not in known:
            o.fail_at(o.data, key, f"field `{key}` has no slopjudge form"
                      + (" (slopjudge has no contexts)" if key == "context" else ""))


def _file_match(o: Converted) -> tuple[list[str], list[str]]:
    """A file-guard's ``match`` and ``deletions`` as (paths and exclude lines, match
    conditions)."""
    data = o.data
    conds: list[str] = []
    lines: list[str] = []
    text = str(data.get("match") or "").strip()
    if text and not re.search(r"[\s\"']", text):
        glob = _glob(text)
        if glob is None:
            o.fail_at(data, "match", f"match glob `{text}` uses `**` inside a name or a "
                      "backslash, which slopjudge globs read differently")
        else:
            lines.append(f"paths: {_yaml([glob[0]])}")
        if glob is not None and glob[1]:
            lines += ["# sloprail matched whole file paths: a folder matching is not enough.",
                      f"exclude: {_yaml([glob[1]])}"]
    elif text:
        problem = _expr_problem(text, gate=False)
        if problem:
            o.fail_at(data, "match", problem)
        conds.append(text)
    deletions = data.get("deletions") or "skip"
    if deletions == "skip":
        conds.append('status != "D"')
    elif deletions == "only":
        conds.append('status == "D"')
    elif deletions != "include":
        o.fail_at(data, "deletions", f"deletions: {deletions!r} is not skip, include or only "
                  "(sloprail refuses it)")
    return lines, conds


def _file_guard(o: Converted) -> None:
    data = o.data
    _unknown_keys(o, _FILE_GUARD_KEYS)
    paths, conds = _file_match(o)
    on, tools = ["stop", "ci"], []
    preventive = data.get("preventive", False)
    if preventive is True:
        # Judged before the write lands too: the file tools' proposed edit.
        on.append("pre-tool")
        tools = list(CHANGE_TOOLS)
    elif preventive is not False:
        o.fail_at(data, "preventive", "preventive must be true or false")
    lines = _header(o, on)
    if tools:
        lines.append(f"tools: {_yaml(tools)}")
    lines += paths
    if conds:
        lines.append(f"match: {_yaml(_joined(conds, 'and'))}")
    lines += _convert_require(o)
    subjects = data.get("subjects")
    if subjects is not None:
        name = o.script(subjects, o.at(data, "subjects"), "subjects")
        if name is not None:
            lines.append(f"subjects: {_yaml(name)}")
    _finish(o, lines, each_file=subjects is None)


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
# What a gate event means under slopjudge that it did not under sloprail.
_GATE_NOTES = {
    "Stop": "Stop: slopjudge runs a stop rule when the session changed files; a turn that "
            "changed none ends",
    "PreFileDelete": "PreFileDelete: an apply_patch deletion is judged before it runs; a "
                     "shell `rm` when the turn stops",
}


def _gate(o: Converted) -> None:
    data = o.data
    _unknown_keys(o, _GATE_KEYS)
    on: list[str] = []
    tools: list[str] | None = []
    parts: list[str] = []
    file_only = True
    triggers = data.get("on") or []
    if not isinstance(triggers, list) or not triggers:
        o.fail_at(data, None, "a gate needs `on: [{event, match}]`")
        triggers = []
    for n, trig in enumerate(triggers):
        where = o.at(triggers, n)
        if not isinstance(trig, dict) or not trig.get("event"):
            o.fail(where, "a trigger needs `event`")
            continue
        event = str(trig["event"])
        if event not in _GATE_EVENTS:
            o.fail(where, f"event {event}: not a sloprail gate event ("
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
                o.fail_at(trig, "match", problem)
            test = f"{test} and ({match})"
        parts.append(test)
        if event in _GATE_NOTES:
            o.note(where, _GATE_NOTES[event])
    lines = _header(o, on)
    if tools and "pre-tool" in on:
        lines.append(f"tools: {_yaml(tools)}")
    if parts:
        lines.append(f"match: {_yaml(_joined(parts, 'or'))}")
    lines += _convert_require(o)
    _finish(o, lines, each_file=file_only and bool(on))


def _config_lists(root: str, shown_root: str) -> dict[str, dict[str, str]]:
    """``disabled:`` and ``enabled:`` of ``config.yaml``: qualified name -> where listed."""
    path = os.path.join(root, "config.yaml")
    out: dict[str, dict[str, str]] = {"disabled": {}, "enabled": {}}
    if not os.path.isfile(path):
        return out
    shown = f"{shown_root}/config.yaml"
    data, problem = _read_yaml(path)
    if problem is not None:
        print(f"{shown}:1: cannot read ({problem}); its `disabled:` list is not applied",
              file=sys.stderr)
        return out
    for key in out:
        items = data.get(key) if isinstance(data, dict) else None
        if isinstance(items, list):
            out[key] = {str(v): _at(shown, items, n) for n, v in enumerate(items)}
    return out


def _not_converted(source: str, where: str, why: str, off: bool = False) -> Converted:
    conv = Converted(source, fatal=True, off=off)
    conv.note(where, why)
    return conv


def _declaration(root: str, shown_root: str, nature: str, name: str,
                 config: dict[str, dict[str, str]]) -> Converted:
    """One rule folder converted, or why it is not."""
    folder = os.path.join(root, nature, name)
    source, where = f"{nature}/{name}", f"{shown_root}/{nature}/{name}:1"
    yaml_path = os.path.join(folder, f"{nature}.yaml")
    if not inside(folder, root) or (os.path.lexists(yaml_path)
                                     and not inside(yaml_path, folder)):
        return _not_converted(source, where, "a symlink leading out of the sloprail folder: "
                              "not followed")
    if not os.path.isfile(yaml_path):
        return _not_converted(source, where, f"no {nature}.yaml in this folder")
    if source in config["disabled"]:
        return _not_converted(source, config["disabled"][source],
                              "disabled in config.yaml: off in sloprail, so not converted",
                              off=True)
    conv = convert(nature, folder, name, shown_root)
    if nature == "gate" and not conv.fatal and not conv.enabled \
            and source not in config["enabled"]:
        return _not_converted(source, where, "enabled: false and not listed in config.yaml "
                              "`enabled:`: off in sloprail, so not converted", off=True)
    return conv


def discover(root: str, shown_root: str) -> list[Converted]:
    """Every sloprail declaration under ``root``, converted or named as not convertible."""
    out: list[Converted] = []
    config = _config_lists(root, shown_root)
    for nature in ("file-guard", "gate"):
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
    """Copy the rule folder (its scripts' sourced siblings and data, its ``tests/``) but
    ``skip``; a symlink is copied as the file it names when that stays inside the rule
    folder, and left out (returned) when it leads out of it or names a folder."""
    left_out: list[str] = []

    def ignored(folder: str, names: list[str]) -> set[str]:
        out = set()
        for name in names:
            path = os.path.join(folder, name)
            shown = os.path.relpath(path, src_dir)
            if shown != skip and (os.path.isfile(path) and inside(path, src_dir)
                                  or os.path.isdir(path) and not os.path.islink(path)):
                continue
            out.add(name)
            if shown != skip:
                left_out.append(shown)
        return out

    shutil.copytree(src_dir, dest_dir, ignore=ignored, dirs_exist_ok=True)  # copy2: keeps +x
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
        write_atomic(os.path.join(dest, name), text, mode=0o755)
    for name in skipped:
        conv.note(f"{conv.source}/{name}", "not copied: a symlink leading out of the rule "
                  "folder")
    write_atomic(os.path.join(dest, "rule.yaml"), conv.yaml)
    return None


def run(args: argparse.Namespace) -> int:
    root = os.path.abspath(args.folder)
    if not os.path.isdir(root):
        return fail(f"no sloprail folder at {args.folder}")
    settings = settings_of(args)
    rules_dir = settings.rules_dir
    found = discover(root, os.path.relpath(root))
    if not found:
        return fail(f"{args.folder} holds no file-guard/ or gate/ rule folders")
    taken: set[str] = set()
    written: list[str] = []
    invalid: list[str] = []
    os.makedirs(rules_dir, exist_ok=True)
    for conv in found:
        if conv.fatal:
            print(f"{conv.source}: " + ("off, not converted" if conv.off else "NOT converted"))
        else:
            rid = _rule_id(conv.source.split("/", 1)[1])
            conv.rule_id = rid if rid not in taken else _rule_id(conv.source.replace("/", "-"))
            taken.add(conv.rule_id)
            problem = write_rule(conv, rules_dir, os.path.join(root, conv.source))
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
