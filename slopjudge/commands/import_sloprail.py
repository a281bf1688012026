"""`slopjudge import sloprail [.sloprail]`: sloprail's ``file-guard/<name>/`` and
``gate/<name>/`` folders as ``rules/<name>/`` (docs/sloprail.md has every form and promise).
A rule that would behave differently is refused with the file and line of each reason."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass, field
from typing import Any

from slopjudge.changes.tools import CHANGE_TOOLS
from slopjudge.commands._shared import add_rules_argument, fail, settings_of
from slopjudge.fsutil import inside, read_or, write_atomic
from slopjudge.loading.config import Settings
from slopjudge.loading.loader import _pos, load_rules, read_yaml
from slopjudge.loading.matchexpr import MatchError, _tokens, compile_match
from slopjudge.loading.schemas import load_schema
from slopjudge.payload import SCHEMA


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", choices=["sloprail"], help="the tool to import from")
    parser.add_argument("folder", nargs="?", default=".sloprail",
                        help="the .sloprail folder (default: .sloprail)")
    add_rules_argument(parser)


@dataclass
class Converted:
    """A declaration's conversion; while converting, its YAML file as shown and its mapping."""

    source: str  # "file-guard/<name>"
    shown: str = ""
    data: Any = None
    folder: str = ""
    requirements_only: bool = False  # no check converted: the rule needs _PASS_SCRIPT
    yaml: str = ""
    notes: list[str] = field(default_factory=list)  # "file:line: what did not convert"
    fatal: bool = False  # the rule itself could not be converted
    off: bool = False  # off in sloprail (disabled, or enabled: false): not converted, rightly

    def note(self, where: str, text: str) -> None:
        self.notes.append(f"{where}: {text}")

    def fail(self, where: str, message: str) -> Converted:
        self.note(where, message)
        self.fatal = True
        return self

    def at(self, node: Any, *key: Any) -> str:
        """``file:line`` of ``node`` (of its item or key ``key``)."""
        return f"{self.shown}:{_pos(node, *key, of_key=True)[0]}"

    def script(self, value: Any, where: str, what: str, *, scan: bool = True) -> str | None:
        """``value`` relative to the rule folder when it names a file inside it (resolved:
        neither `..` nor a symlink brings one in); its lines that would not work noted."""
        full = os.path.normpath(os.path.join(self.folder, str(value)))
        if os.path.isabs(str(value)) or not inside(full, self.folder) \
                or not os.path.isfile(full):
            self.fail(where, f"{what} `{value}` is not a file inside the rule folder")
            return None
        name = os.path.relpath(full, self.folder)
        body = read_or(full, b"").decode("utf-8", "replace") if scan else ""
        for n, text in enumerate(map(str.strip, body.splitlines()), 1):
            for rx, why in [] if text.startswith("#") else _SCRIPT_PROBLEMS:
                if m := rx.search(text):
                    self.fail(f"{os.path.dirname(self.shown)}/{name}:{n}",
                              why.format(*m.groups(), line=text[:80]))
                    break
        return name


# The event fields slopjudge gives a match (payload.event_matches).
_EVENT_FIELDS = frozenset({*load_schema(SCHEMA)["$defs"]["event"]["properties"], "tool"})


def _expr_problem(text: str, *, gate: bool) -> str | None:
    """Why a sloprail match cannot be a slopjudge ``match`` that means the same, or None."""
    try:
        toks = _tokens(text)
    except MatchError as exc:
        return f"match `{text}` does not parse at column {exc.offset + 1}: {exc}"
    names = [(n, v) for n, (k, v, _) in enumerate(toks) if k == "name"]
    after_dot = {n for n, _ in names if n and toks[n - 1][0] == "op"
                 and toks[n - 1][1] in (".", "?.")}
    # Names not read as a field nor called (a name is never last: the tokens end with "end").
    bare = {v for n, v in names if n not in after_dot and toks[n + 1][1] != "("}
    if "context" in bare:
        return f"match `{text}` reads contexts (`context[...]`): slopjudge has no contexts"
    if "trailers" in bare:
        return f"match `{text}` reads commit trailers, which slopjudge's match does not give"
    if gate and bare & {"path", "status", "markers", "oldMarkers"}:
        return f"match `{text}`: a gate reads `event.<field>`; sloprail refuses a bare name"
    for n, value in names:
        if value == "event" and n not in after_dot and n + 2 < len(toks) \
                and toks[n + 1][1] in (".", "?.") and toks[n + 2][1] not in _EVENT_FIELDS:
            return (f"match `{text}` reads `event.{toks[n + 2][1]}`, a field slopjudge's "
                    "events do not carry")
    try:
        compile_match(text)
    except MatchError as exc:
        return f"match `{text}` at column {exc.offset + 1}: {exc}"
    return None


def _glob(pattern: str) -> list[str] | None:
    """A sloprail bare glob (whole path, anchored) as slopjudge's paths and exclude."""
    if "\\" in pattern or any("**" in seg and seg != "**" for seg in pattern.split("/")):
        return None  # sloprail's mid-segment ** crosses folders; slopjudge's does not
    anchored = pattern if "/" in pattern.strip("/") or pattern.startswith("/") else "/" + pattern
    paths = [f"paths: {_yaml([anchored])}"]
    return paths if pattern.endswith("**") else [
        *paths, "# sloprail matched whole file paths: a folder matching is not enough.",
        f"exclude: {_yaml([anchored.rstrip('/') + '/**'])}"]


def _rule_id(name: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-") or "r"


# A script line that would not work under slopjudge, and why; the first match is noted.
_SCRIPT_PROBLEMS = (
    (re.compile(r"(?:^|[\s;&|(`$'\"])(sr|sr-[a-z]+|sloprail)(?:\s|$)"),
     "calls sloprail's own `{0}` (`{line}`), which slopjudge does not provide"),
    (re.compile(r"(^|[\s\"'=(:/])\.\./"),
     "reads a file outside its rule folder (`{line}`), which is not copied"),
    (re.compile(r"[\"']Changeset[\"']"), "expects sloprail's changeset event "
     "(`event.kind == \"Changeset\"`); slopjudge gives each file's event"),
    (re.compile(r"\bSR_(AGENT_ID|TREE)\b|SLOPRAIL_"),
     "reads an environment variable slopjudge does not set (`{line}`)"),
)


def _yaml(value: Any) -> str:
    """A value in YAML's flow form (JSON's)."""
    return json.dumps(value, ensure_ascii=False)


def _convert_checks(o: Converted, *, each_file: bool) -> list[str]:
    """The ``checks:`` lines of rule.yaml; what does not convert is noted on ``o``."""
    checks = o.data.get("checks") or []
    if not isinstance(checks, list):
        o.fail(o.at(o.data, "checks"), "checks is not a list")
        return []
    out: list[str] = []
    used: set[str] = set()
    gate: str | None = None  # the check before, when it is a script
    for n, item in enumerate(checks):
        if not isinstance(item, dict):
            o.fail(o.at(checks, n), f"check {n + 1} is not a mapping")
            continue
        kinds = [k for k in ("script", "judge") if item.get(k)]
        if len(kinds) != 1:
            o.fail(o.at(checks, n), f"check {n + 1} needs exactly one of script, judge")
            continue
        kind = kinds[0]
        if (name := o.script(item[kind], o.at(item, kind), kind, scan=kind == "script")) is None:
            continue
        base = _rule_id(os.path.basename(str(item[kind])).split(".")[0] or "check")
        cid, n = base, 2
        while cid in used:
            cid, n = f"{base}-{n}", n + 1
        used.add(cid)
        out += [f"  - id: {cid}", f"    {kind}: {_yaml(name)}"]
        if gate:
            # sloprail stops at the first refusal: a script before this check gates it.
            out.append(f"    needs: [{gate}]")
        out += _check_fields(o, item, kind)
        if each_file:
            out.append("    each: file")
        gate = cid if kind == "script" else None
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
            if (name := o.script(value, at, "prepare")) is not None:
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


def _convert_require(o: Converted) -> list[str]:
    """``require:`` as slopjudge's (checks/require.py), its ``when`` scripts copied."""
    if (req := o.data.get("require")) is None:
        return []
    if not isinstance(req, list):
        o.fail(o.at(o.data, "require"), "require is not a list")
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
            elif key == "citation" and isinstance(value, dict) and list(value) == [
                    "source_types"] and isinstance(value["source_types"], list) and all(
                    t in ("user", "tool_result") for t in value["source_types"]):
                entry["citation"] = {"source_types": [str(t) for t in value["source_types"]]}
            elif key == "when":
                entry["when"] = o.script(value, where, "when")
            else:
                o.fail(where, f"require field `{key}`: {value!r} has no slopjudge form")
        out.append(f"  - {_yaml(entry)}")
    return out


# A rule of requirements alone still needs a check: one that always passes.
_REQUIRE_ONLY = ["  - id: requirements-met", "    script: requirements-met.sh"]
_PASS_SCRIPT = ("#!/bin/sh\n# sloprail's rule is its requirements: once they hold, it passes.\n"
                "exit 0\n")
_FIELDS = {"file-guard": ("match", "deletions", "require", "subjects", "checks", "preventive"),
           "gate": ("on", "require", "checks", "enabled")}


def convert(nature: str, folder: str, name: str, shown_root: str) -> Converted:
    """One file-guard's or gate's conversion; unreadable or not convertible: noted, fatal."""
    o = Converted(f"{nature}/{name}", f"{shown_root}/{nature}/{name}/{nature}.yaml",
                  folder=folder)
    o.data, (line, _), problem = read_yaml(os.path.join(folder, f"{nature}.yaml"))
    if problem is not None or not isinstance(o.data, dict):
        return o.fail(f"{o.shown}:{line}", "not a YAML mapping" if problem is None
                      else f"cannot read: {problem}")
    for key in o.data:
        if key not in _FIELDS[nature]:
            o.fail(o.at(o.data, key), f"field `{key}` has no slopjudge form"
                   + (" (slopjudge has no contexts)" if key == "context" else ""))
    on, fields, each_file = (_file_guard if nature == "file-guard" else _gate)(o)
    checks = _convert_checks(o, each_file=each_file)
    if not checks and "require" not in o.data:
        o.fail(o.at(o.data), "no check converted")
    o.requirements_only = not checks
    o.yaml = "\n".join([
        f"# Converted from sloprail's .sloprail/{o.source}/{nature}.yaml by "
        "`slopjudge import sloprail`.",
        f"description: {_yaml(f'sloprail {nature} {name}')}",
        f"on: {_yaml(on)}", *fields, *_convert_require(o), "checks:",
        *(checks or _REQUIRE_ONLY)]) + "\n"
    return o


def _joined(parts: list[str], op: str) -> str:
    return parts[0] if len(parts) == 1 else f" {op} ".join(f"({p})" for p in parts)


def _file_guard(o: Converted) -> tuple[list[str], list[str], bool]:
    """A file-guard's ``on``, fields but description, require and checks; checks per file."""
    data = o.data
    lines: list[str] = []
    conds: list[str] = []
    text = str(data.get("match") or "").strip()
    if text and not re.search(r"[\s\"']", text):
        if (paths := _glob(text)) is None:
            o.fail(o.at(data, "match"), f"match glob `{text}` uses `**` inside a name or a "
                   "backslash, which slopjudge globs read differently")
        lines += paths or []
    elif text:
        if problem := _expr_problem(text, gate=False):
            o.fail(o.at(data, "match"), problem)
        conds.append(text)
    deletions = data.get("deletions") or "skip"
    if deletions in ("skip", "only"):
        conds.append('status != "D"' if deletions == "skip" else 'status == "D"')
    elif deletions != "include":
        o.fail(o.at(data, "deletions"), f"deletions: {deletions!r} is not skip, include or "
               "only (sloprail refuses it)")
    on = ["stop", "ci"]
    preventive = data.get("preventive", False)
    if preventive is True:
        # Judged before the write lands too: the file tools' proposed edit.
        on.append("pre-tool")
        lines.insert(0, f"tools: {_yaml(list(CHANGE_TOOLS))}")
    elif preventive is not False:
        o.fail(o.at(data, "preventive"), "preventive must be true or false")
    if conds:
        lines.append(f"match: {_yaml(_joined(conds, 'and'))}")
    subjects = data.get("subjects")
    name = None if subjects is None else o.script(subjects, o.at(data, "subjects"), "subjects")
    if name is not None:
        lines.append(f"subjects: {_yaml(name)}")
    return on, lines, subjects is None


# Each gate event: its test in a match, its `on`, its tools (None: every tool), and a note.
_GATE_EVENTS: dict[str, tuple[str, list[str], tuple[str, ...] | None, str]] = {
    "PreFileCreate": ('event.kind == "PreFileCreate"', ["pre-tool"], CHANGE_TOOLS, ""),
    "PreFileUpdate": ('event.kind == "PreFileUpdate"', ["pre-tool"], CHANGE_TOOLS, ""),
    "PreFileWrite": ('event.kind in ["PreFileCreate", "PreFileUpdate"]', ["pre-tool"],
                     CHANGE_TOOLS, ""),
    # A shell `rm` is seen when the turn stops: the same gate judges it there.
    "PreFileDelete": ('event.kind in ["PreFileDelete", "PostFileDelete"]', ["pre-tool", "stop"],
                      CHANGE_TOOLS, "PreFileDelete: an apply_patch deletion is judged before "
                      "it runs; a shell `rm` when the turn stops"),
    "PreCommandInvoke": ('event.kind == "PreCommandInvoke"', ["pre-tool"], ("Bash",), ""),
    "PreToolUse": ('event.on == "pre-tool"', ["pre-tool"], None, ""),
    "Stop": ('event.on == "stop"', ["stop"], (), "Stop: slopjudge runs a stop rule when the "
             "session changed files; a turn that changed none ends"),
}


def _gate(o: Converted) -> tuple[list[str], list[str], bool]:
    """A gate's ``on``, fields but description, require and checks; checks per file."""
    parts: list[str] = []
    specs = []
    triggers = o.data.get("on") or []
    if not isinstance(triggers, list) or not triggers:
        o.fail(o.at(o.data), "a gate needs `on: [{event, match}]`")
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
        specs.append(_GATE_EVENTS[event])
        test, _, _, note = specs[-1]
        match = str(trig.get("match") or "").strip()
        if match and (problem := _expr_problem(match, gate=True)):
            o.fail(o.at(trig, "match"), problem)
        parts.append(f"{test} and ({match})" if match else test)
        if note:
            o.note(where, note)
    on = list(dict.fromkeys(x for _, its_on, *_ in specs for x in its_on))
    tools = [its_tools for _, _, its_tools, _ in specs]
    lines = []
    if "pre-tool" in on and None not in tools:
        lines.append(f"tools: {_yaml(list(dict.fromkeys(t for ts in tools for t in ts or ())))}")
    if parts:
        lines.append(f"match: {_yaml(_joined(parts, 'or'))}")
    return on, lines, bool(specs) and all(ts == CHANGE_TOOLS for ts in tools)


def _config_lists(root: str, shown_root: str) -> dict[str, dict[str, str]]:
    """``disabled:`` and ``enabled:`` of ``config.yaml``: qualified name -> where listed."""
    path, shown = os.path.join(root, "config.yaml"), f"{shown_root}/config.yaml"
    data, (line, _), problem = read_yaml(path) if os.path.isfile(path) else ({}, (1, 1), None)
    if problem is not None:
        print(f"{shown}:{line}: cannot read ({problem}); its `disabled:` list is not applied",
              file=sys.stderr)
    data = data if isinstance(data, dict) else {}
    return {key: {str(v): f"{shown}:{_pos(items, n)[0]}" for n, v in enumerate(items)}
            if isinstance(items := data.get(key), list) else {} for key in ("disabled", "enabled")}


# What slopjudge has no form for, by the folder it is in.
_REFUSED = {"context": "a context (a scope a session enters and leaves): slopjudge has no "
                       "contexts",
            "guardrails": "a legacy GUARDRAIL.md rule: convert it by hand"}


def _declaration(root: str, shown_root: str, nature: str, name: str,
                 config: dict[str, dict[str, str]]) -> Converted:
    """One rule folder converted, or why it is not."""
    folder = os.path.join(root, nature, name)
    source, where = f"{nature}/{name}", f"{shown_root}/{nature}/{name}:1"
    yaml_path = os.path.join(folder, f"{nature}.yaml")
    if nature in _REFUSED:
        return Converted(source).fail(where, _REFUSED[nature])
    if not inside(folder, root) or (os.path.lexists(yaml_path)
                                     and not inside(yaml_path, folder)):
        return Converted(source).fail(where, "a symlink leading out of the sloprail folder: "
                                      "not followed")
    if not os.path.isfile(yaml_path):
        return Converted(source).fail(where, f"no {nature}.yaml in this folder")
    if source in config["disabled"]:
        return Converted(source, off=True).fail(config["disabled"][source], "disabled in "
                                                "config.yaml: off in sloprail, so not converted")
    conv = convert(nature, folder, name, shown_root)
    if not conv.fatal and conv.data.get("enabled") is False \
            and source not in config["enabled"]:
        return Converted(source, off=True).fail(where, "enabled: false and not listed in "
                                                "config.yaml `enabled:`: off in sloprail, so "
                                                "not converted")
    return conv


def discover(root: str, shown_root: str) -> list[Converted]:
    """Every sloprail declaration under ``root``, converted or named as not convertible."""
    out: list[Converted] = []
    config = _config_lists(root, shown_root)
    if os.path.isfile(os.path.join(root, "file-guard", "structure.yaml")):
        out.append(Converted("file-guard/structure.yaml").fail(
            f"{shown_root}/file-guard/structure.yaml:1",
            "a structure rule (path allowlist): slopjudge has none; write a script "
            "check over changeset.files instead"))
    for nature in ("file-guard", "gate", *_REFUSED):
        base = os.path.join(root, nature)
        out += [_declaration(root, shown_root, nature, name, config)
                for name in (sorted(os.listdir(base)) if os.path.isdir(base) else [])
                if not name.startswith(".") and os.path.isdir(os.path.join(base, name))
                and not (name.endswith(".tests") and nature not in _REFUSED)]
    return out


def write_rule(conv: Converted, dest: str, src_dir: str) -> str | None:
    """Write ``dest``, the rule folder copied (a symlink as the file it names when that is
    inside it, else left out and noted); a one-line reason instead when one is in the way."""
    if taken := next((p for p in (dest, dest + ".yaml") if os.path.lexists(p)), None):
        return f"{os.path.relpath(taken)} already exists; nothing written (never overwritten)"
    skip = conv.source.split("/")[0] + ".yaml"

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
                conv.note(f"{conv.source}/{shown}", "not copied: a symlink leading out of "
                          "the rule folder")
        return out

    shutil.copytree(src_dir, dest, ignore=ignored)  # copy2: keeps +x
    if conv.requirements_only:
        write_atomic(os.path.join(dest, "requirements-met.sh"), _PASS_SCRIPT, mode=0o755)
    write_atomic(os.path.join(dest, "rule.yaml"), conv.yaml)
    return None


def run(args: argparse.Namespace) -> int:
    root = os.path.abspath(args.folder)
    if not os.path.isdir(root):
        return fail(f"no sloprail folder at {args.folder}")
    settings = settings_of(args)
    found = discover(root, os.path.relpath(root))
    if not found:
        return fail(f"{args.folder} holds no file-guard/ or gate/ rule folders")
    taken: set[str] = set()
    written: list[str] = []
    os.makedirs(settings.rules_dir, exist_ok=True)
    for conv in found:
        if conv.fatal:
            print(f"{conv.source}: " + ("off, not converted" if conv.off else "NOT converted"))
        else:
            rid = _rule_id(conv.source.split("/", 1)[1])
            rid = rid if rid not in taken else _rule_id(conv.source.replace("/", "-"))
            taken.add(rid)
            dest = os.path.join(settings.rules_dir, rid)
            problem = write_rule(conv, dest, os.path.join(root, conv.source))
            conv.fatal = problem is not None
            print(f"{conv.source}: NOT converted: {problem}" if problem
                  else f"{conv.source} -> {os.path.relpath(dest)}/")
            if not problem:
                written.append(rid)
        for note in conv.notes:
            print(f"  {'why' if conv.fatal else 'note'}: {note}")
    invalid = _validate(written, settings) if written else 0
    bad = sum(c.fatal and not c.off for c in found)
    off = sum(c.off for c in found)
    print(f"slopjudge: {len(written)} rule(s) converted ({invalid} of them do not "
          f"validate), {bad} not converted" + (f", {off} off in sloprail" if off else ""),
          file=sys.stderr)
    return 1 if bad or invalid else 0


def _validate(written: list[str], settings: Settings) -> int:
    """Whether each new rule passes `slopjudge validate`, said; how many do not."""
    result = load_rules(settings.rules_dir, workspace=settings.workspace,
                        template_dirs=settings.template_dirs)
    loaded = {r.id for r in result.rules}
    invalid = 0
    for rid in written:
        folder = os.path.join(settings.rules_dir, rid) + os.sep
        problems = [e for e in result.errors if e.rule == rid
                    or os.path.abspath(e.path).startswith(folder)]
        if rid in loaded and not problems:
            print(f"{rid}: passes slopjudge validate")
        else:
            invalid += 1
            print(f"{rid}: does NOT pass slopjudge validate:")
            for e in problems or result.errors:
                print(f"  {e}")
    return invalid
