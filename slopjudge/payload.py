"""The one JSON object every script, prepare and template sees (SPEC §3), defined in
``schemas/payload.schema.json`` and built only by :func:`build_payload`; :func:`for_rule`
is the per-rule step the engine and ``slopjudge payload`` share.

Field names follow sloprail's so templates port unchanged. Every key is present (null
when unknown) so templates run with strict undefined, except in the per-file view of
``event`` (:func:`file_event`), where, as in sloprail, ``oldContent``/``newContent`` are
absent where the file has none (``is defined`` tells a delete from an emptied file).
"""

from __future__ import annotations

import os

from slopjudge.model import Changeset, Event, FileChange, Rule, asdict

TYPE_CHECKING = False  # not typing's: a PreToolUse hook running checks imports this module
if TYPE_CHECKING:
    from typing import Any

SCHEMA = "payload.schema.json"
CHECK_ENV = "SLOPJUDGE_CHECK_PAYLOADS"  # a folder keeping every payload for tests/payloadcheck.py

# sloprail's marker reader: a whole line ``<leader> sr:<kind> <fqn>`` with
# ``//``, ``#`` or ``--`` as the leader. Whitespace is RE2's ``\s`` exactly
# ([\t\n\f\r ]): a vertical tab or a no-break space is part of the fqn there,
# so it is here too (Python's ``\s`` would end it).
_WS = "[\t\n\f\r ]"
_NWS = "[^\t\n\f\r ]"
_MARKER = f"{_WS}*(?://|#|--){_WS}*sr:({_NWS}+){_WS}+({_NWS}+){_WS}*"  # compiled on use

# sloprail's event kinds for one file; it has no rename kind (its changeset
# calls a rename status R), so a rename gets the same pattern's name for it.
_KIND_WORD = {"A": "Create", "M": "Update", "D": "Delete", "R": "Rename"}
# Keys file_event adds: removed first so one file's view never leaks into another's.
FILE_EVENT_KEYS = ("path", "oldPath", "oldContent", "newContent", "oldMarkers", "newMarkers",
                   "newContentKnown", "resultKnown")


def scan_markers(text: str | None) -> list[dict[str, Any]]:
    """Every ``sr:`` marker in ``text`` as ``{kind, fqn, line}``, in line order; [] for none."""
    out: list[dict[str, Any]] = []
    text = text or ""
    # Only lines holding "sr:" can match: jump between them (str.find and
    # str.count run in C), so a large file without markers costs one scan.
    number, counted, at = 1, 0, text.find("sr:")
    if at != -1:
        import re  # here: a hook call with no marker does not import it
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        end = len(text) if end == -1 else end
        number += text.count("\n", counted, start)
        counted = start
        m = re.compile(_MARKER).fullmatch(text, start, end)  # re's cache holds it
        if m is not None:
            out.append({"kind": m.group(1), "fqn": m.group(2), "line": number})
        at = text.find("sr:", end)
    return out


def file_event(event: dict[str, Any], file: dict[str, Any],
               citations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``event`` as sloprail's event about ``file`` (a ``changeset.files`` entry), with the
    event's own kind in ``on`` and of ``citations`` those naming the file."""
    out = {k: v for k, v in event.items() if k not in FILE_EVENT_KEYS}
    status = str(file.get("status") or "M")
    out["on"] = on = event.get("on") or event.get("kind")  # a view's ``on`` keeps its kind
    when = "Pre" if on == "pre-tool" else "Post"  # Pre: the edit is not made yet
    out["kind"] = when + "File" + _KIND_WORD.get(status, "Update")
    out["path"] = file.get("path")
    if status == "R" and file.get("oldPath"):
        out["oldPath"] = file["oldPath"]
    for key in ("oldContent", "newContent"):
        if isinstance(file.get(key), str):
            out[key] = file[key]
    # Both of sloprail's names for it (newer builds say resultKnown).
    out["newContentKnown"] = out["resultKnown"] = isinstance(file.get("newContent"), str)
    out["oldMarkers"] = scan_markers(file.get("oldContent"))
    out["newMarkers"] = scan_markers(file.get("newContent"))
    if citations is not None:
        out["citations"] = [c for c in citations if out["path"] in (c.get("files") or [])]
    return out


def file_payload(f: FileChange) -> dict[str, Any]:
    """One changed file as the payload carries it; its hunks parsed on first use."""
    if f.hunks is None:
        from slopjudge.changes.diffparse import hunks_of  # loaded already, with a hunk_source

        f.hunks = f.hunk_source() if f.hunk_source is not None else hunks_of(f.diff)
    f.hunk_source = None  # the parse it holds is freed once read
    return {**_named(f), "diff": f.diff, "binary": f.binary, "hunks": f.hunks}


def _named(f: FileChange) -> dict[str, Any]:
    """What a file's entry says of it before its diff: all ``match`` reads of it."""
    return {"path": f.path, "status": f.status, "oldPath": f.old_path,
            "oldContent": f.old_content, "newContent": f.new_content}


def build_payload(
    *,
    event: Event,
    workspace: str,
    changeset: Changeset,
    files: list[FileChange],
    others: list[dict[str, Any]],
    change: str,
    rule: Rule | None = None,
    check_id: str | None = None,
    file_payloads: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The payload for ``rule`` seeing ``files`` (``file_payloads``: their entries, if built)."""
    if file_payloads is None:
        file_payloads = [file_payload(f) for f in files]
    event_data = event_payload(event, workspace)
    cited: list[dict[str, Any]] = []
    if event.transcript_path:  # the session's resolved citations (changes/citations.py)
        from slopjudge.changes.citations import resolved, session

        cited = resolved(session(event.transcript_path, workspace))
    if event.kind == "pre-tool" and len(file_payloads) == 1 and not others:
        # A tool call about one file: its event reads as sloprail's gate event for it.
        event_data = file_event(event_data, file_payloads[0], cited)
    payload = {
        "event": event_data,
        "rule": {k: getattr(rule, k, None) for k in ("id", "dir", "description")},
        "check": {"id": check_id},
        "workspace": workspace,
        "changeset": {
            "base": changeset.base,
            "head": changeset.head,
            "commits": [{"sha": c.sha, "subject": c.subject, "body": c.body}
                        for c in changeset.commits],
            "files": file_payloads,
            "others": others,
            "citations": cited,
        },
        "change": change,
        # Judge context only; present (empty) for scripts so every key exists.
        "additionalContext": {},
        "rubric": "",
    }
    if keep := os.environ.get(CHECK_ENV):
        keep_for_check(payload, keep)
    return payload


def keep_for_check(payload: dict[str, Any], folder: str) -> None:
    """Keep ``payload`` in ``folder`` as ``<sha256>.json``; the same payload twice is one file."""
    import hashlib
    import json

    from slopjudge.fsutil import write_atomic

    data = json.dumps(payload, sort_keys=True).encode("utf-8")
    path = os.path.join(folder, hashlib.sha256(data).hexdigest() + ".json")
    if not os.path.exists(path):
        write_atomic(path, data)


def for_rule(
    *,
    event: Event,
    workspace: str,
    changeset: Changeset,
    rule: Rule | None,
    carries_change: bool = True,
    check_id: str | None = None,
    memo: dict[Any, Any] | None = None,
    problems: list[str] | None = None,
) -> tuple[list[FileChange], dict[str, Any]]:
    """The files ``rule`` sees (no rule: all; an event carrying no change: none) and its payload.

    ``memo``, one dict per run and changeset: rules with the same ``paths``, ``exclude`` and
    ``match`` (most of a pack) split it once, and share each file's entry (never change one in
    place). A file ``match`` could not decide on is kept and named in ``problems``."""
    memo = {} if memo is None else memo
    key = (tuple(rule.paths), tuple(rule.exclude), rule.match) if rule is not None else None
    if not carries_change:  # no changeset code on a Bash call's hook
        split: tuple[Any, ...] = ([], [], "", [], [])
    elif key in memo:
        split = memo[key]
    else:
        split = memo[key] = _split(rule, changeset, event, workspace,
                                   memo.setdefault(_ENTRIES, {}))
    files, others, change, entries, found = split
    if problems is not None:
        problems.extend(found)
    payload = build_payload(
        event=event, workspace=workspace, changeset=changeset, files=files,
        others=[dict(o) for o in others], change=change, rule=rule, check_id=check_id,
        file_payloads=entries,
    )
    return list(files), payload


def _split(rule: Rule | None, changeset: Changeset, event: Event, workspace: str,
           built: dict[int, tuple[FileChange, dict[str, Any]]]) -> tuple[Any, ...]:
    """The files ``rule``'s ``paths``/``exclude`` and ``match`` admit, the others, their
    diff, their entries (from ``built``: id -> (file, entry)) and the undecided files."""
    from slopjudge.changes.rulefilter import split, unified_diff

    files, others, found = list(changeset.files), list[dict[str, str]](), list[str]()
    if rule is not None:
        files, others = split(changeset, rule.paths, rule.exclude)
        if rule.match:
            files, others, found = by_match(rule.match, files, others,
                                            event_payload(event, workspace))
    entries = []
    for f in files:
        hit = built.get(id(f))
        if hit is None or hit[0] is not f:  # the file kept with its entry: no id reused
            hit = built[id(f)] = (f, file_payload(f))
        entries.append(hit[1])
    return files, others, unified_diff(files) if files else "", entries, found


_ENTRIES = "file entries"  # for_rule's memo: id(FileChange) -> (it, its payload entry)


def encode(payload: dict[str, Any], ensure_ascii: bool = True,
           cache: dict[Any, Any] | None = None) -> bytes:
    """``json.dumps(payload)`` as UTF-8, byte for byte. ``cache``: one dict per run, in
    which ``changeset.files`` and ``change`` are encoded once for every rule whose payload
    holds the same ones (:func:`for_rule`: the same file entries, the same text)."""
    from slopjudge.jsonobject import dumps

    if cache is None or len(payload["changeset"]["files"]) < 2:
        return dumps(payload, ensure_ascii=ensure_ascii).encode("utf-8")
    changeset, files = payload["changeset"], payload["changeset"]["files"]
    import re

    token = os.urandom(16).hex()  # cannot occur in the payload's own text

    def encoded(key: Any, value: Any) -> bytes:
        # Keyed by identity; the value kept with its text, so no id in the key is reused.
        hit = cache.get((key, ensure_ascii))
        if hit is None:
            text = dumps(value, ensure_ascii=ensure_ascii).encode("utf-8")
            hit = cache[(key, ensure_ascii)] = (value, text)
        return bytes(hit[1])

    # Rules with other paths but the same files (all of a change in Python, say) have
    # lists of their own holding the same entries: one encoding serves them all.
    spliced = {token + "f": encoded(("files", *map(id, files)), files)}
    shown = dict(payload, changeset=dict(changeset, files=token + "f"))
    change = payload["change"]
    if len(change) > 4096:
        spliced[token + "c"] = encoded(("change", id(change)), change)
        shown["change"] = token + "c"
    pieces = re.split(f'"({token}[fc])"', dumps(shown, ensure_ascii=ensure_ascii))
    return b"".join(spliced[p] if i % 2 else p.encode("utf-8") for i, p in enumerate(pieces))


def dumps_readable(payload: dict[str, Any]) -> str:
    """``payload`` indented for a person, each ``hunks`` array on one line: indented by json's
    pure-Python encoder, a large diff's hunks cost seconds."""
    import json
    import re

    token = os.urandom(16).hex()  # cannot occur in the payload's own text
    compact: list[str] = []
    files = []
    for f in payload["changeset"]["files"]:
        if isinstance(f.get("hunks"), list):
            compact.append(json.dumps(f["hunks"], ensure_ascii=False))
            f = dict(f, hunks=f"{token}:{len(compact) - 1}")
        files.append(f)
    shown = dict(payload, changeset=dict(payload["changeset"], files=files))
    text = json.dumps(shown, indent=2, ensure_ascii=False)
    return re.sub(f'"{token}:(\\d+)"', lambda m: compact[int(m.group(1))], text)


def payload_keys() -> tuple[str, ...]:
    """The payload's top-level keys, in the schema's order."""
    from slopjudge.loading.schemas import load_schema

    return tuple(load_schema(SCHEMA)["required"])


def event_payload(event: Event, workspace: str) -> dict[str, Any]:
    """The event, plus for a Bash call ``argv`` (an argv list per simple command),
    sloprail's ``raw`` and ``invocations`` (null for other events), so scripts need not
    parse shell, and ``citations``: what the command cites (``slopjudge cite ... &&``)."""
    data = asdict(event)
    data.update(argv=None, raw=None, invocations=None, citations=[])
    command = (event.tool_input or {}).get("command")
    if event.tool_name == "Bash" and isinstance(command, str):
        from slopjudge.changes.shell import argv_list

        data.update(argv=argv_list(command), raw=command,
                    invocations=invocations(command, workspace))
        if "slopjudge" in command:
            from slopjudge.changes.citations import for_command, resolved

            data["citations"] = resolved(for_command(command, event.transcript_path, workspace))
    return data


def invocations(command: str, cwd: str) -> list[dict[str, Any]]:
    """sloprail's ``event.invocations``: each program a command runs, wrappers (``sudo``) too."""
    from slopjudge.changes.shell import _ASSIGNMENT, WRAPPERS, split

    out: list[dict[str, Any]] = []
    for simple in split(command, cwd):
        lead = 0  # the VAR=value words before the program (`dd if=x` has none)
        while lead < len(simple.words) and _ASSIGNMENT.match(simple.words[lead]):
            lead += 1
        env = dict(w.split("=", 1) for w in simple.words[:lead])
        words = simple.words[lead:]
        runs = [words] if words and os.path.basename(words[0]) in WRAPPERS else []
        for argv in [*runs, simple.argv] if simple.argv else runs:
            flags: dict[str, list[str]] = {}
            for arg in argv[1:]:
                if arg.startswith("-") and arg not in ("-", "--"):
                    name, _, value = arg.lstrip("-").partition("=")
                    flags.setdefault(name, []).append(value)
            out.append({"bin": os.path.basename(argv[0]), "argv": list(argv), "flags": flags,
                        "cwd": simple.cwd, "env": env})
    return out


def by_match(
    source: str, files: list[FileChange], others: list[dict[str, str]],
    event: dict[str, Any],
) -> tuple[list[FileChange], list[dict[str, str]], list[str]]:
    """The files a rule's ``match`` admits, evaluated on sloprail's file scope; one it
    cannot decide on is kept and named in the third list (the caller fails closed)."""
    from slopjudge.loading.matchexpr import MatchRuntimeError, compile_match
    match = compile_match(source)
    kept: list[FileChange] = []
    problems: list[str] = []
    for f in files:
        ev = file_event(event, _named(f))
        env = {"path": f.path, "status": f.status, "markers": ev["newMarkers"],
               "oldMarkers": ev["oldMarkers"], "event": ev, "tool": event.get("tool_name")}
        try:
            admitted = match.evaluate(env)
        except MatchRuntimeError as exc:
            problems.append(f"{f.path}: {exc}")
            admitted = True
        if admitted:
            kept.append(f)
        else:
            others.append({"path": f.path, "status": f.status})
    return kept, others, problems


def event_matches(source: str, event: dict[str, Any]) -> bool:
    """A rule's ``match`` on an event about no file, under sloprail's kind for the event."""
    from slopjudge.loading.matchexpr import compile_match

    kind = event.get("kind")
    if kind == "pre-tool":
        kind = "PreCommandInvoke" if event.get("raw") is not None else "PreToolUse"
    elif kind in ("stop", "subagent-stop"):
        kind = "Stop"
    ev = dict(event, kind=kind, on=event.get("kind"), tool=event.get("tool_name"))
    return compile_match(source).evaluate({"event": ev, "tool": event.get("tool_name")})
