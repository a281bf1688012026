"""Citations (``slopjudge cite``, docs/sloprail.md): what the agent says it relies on, from the
session's transcript, which is the only record. Each quote resolves as sloprail's does:
word for word (only whitespace may differ) in exactly one entry of the pools it names; a
cite command's own output never counts. One that does not resolve keeps its problem, so
a ``require: citation`` can say why. Standard library only: a PreToolUse hook builds
payloads with these.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not typing's: the PreToolUse path imports this module
if TYPE_CHECKING:
    from typing import Any

    Cite = tuple[list[tuple[str, list[str]]], list[str]]  # ((quote, pools) ..., paths)

POOLS = ("user", "tool_result")
_FLAGS = {"--user": ["user"], "--tool-result": ["tool_result"], "--any": list(POOLS)}
_MAX_MESSAGE = 16 << 10
# `user` entries that are not the person's words: Claude Code's own injected text, its
# model-written compaction summary, and what only the transcript view shows.
_NOT_SAID = ("isMeta", "isCompactSummary", "isVisibleInTranscriptOnly")
_CACHE: dict[tuple[str, int, int], list[dict[str, Any]]] = {}


def parse_cite(argv: list[str]) -> Cite | None:
    """``slopjudge cite`` arguments as ((quote, pools) ..., paths); None if ``argv`` is
    not a cite command. Raises ValueError on a malformed one."""
    if len(argv) < 2 or os.path.basename(argv[0]) != "slopjudge" or argv[1] != "cite":
        return None
    quotes: list[tuple[str, list[str]]] = []
    paths: list[str] = []
    rest = argv[2:]
    while rest:
        flag = rest.pop(0)
        if flag not in _FLAGS and flag != "--path":
            raise ValueError(f"unknown argument {flag!r} (--user, --tool-result, --any "
                             "QUOTE; --path FILE)")
        if not rest or not rest[0]:
            raise ValueError(f"{flag} needs a value")
        value = rest.pop(0)
        if flag == "--path":
            paths.append(value)
        else:
            quotes.append((value, _FLAGS[flag]))
    if not quotes:
        raise ValueError("nothing cited: give --user, --tool-result or --any QUOTE")
    return quotes, paths


def _norm(text: str) -> str:
    return " ".join(text.split())


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [str(block.get("text") or "") for block in content if isinstance(block, dict)
            and block.get("type") == "text"] if isinstance(content, list) else []


class _Record:
    """One transcript read into the two pools and the cite calls in it."""

    def __init__(self, path: str) -> None:
        import json

        self.path = path
        self.entries: list[tuple[str, int, str, str]] = []  # (pool, line, text, call)
        self.cites: list[tuple[Cite, str, int]] = []  # (parsed call, tool_use id, line)
        self.failed: set[str] = set()  # tool_use ids whose result is an error
        self.calls: dict[str, str] = {}  # tool_use id -> the call, as a citation shows it
        self.cite_ids: set[str] = set()  # a call's result comes after it in the transcript
        with open(path, encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh, 1):
                try:
                    entry = json.loads(line) if line.strip() else None
                except ValueError:
                    continue
                if isinstance(entry, dict):
                    self._entry(entry, n)
        self.normed = [_norm(text) for _, _, text, _ in self.entries]  # once, not per quote

    def _entry(self, entry: dict[str, Any], n: int) -> None:
        import json

        from slopjudge.changes.shell import argv_list

        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if entry.get("type") == "assistant":
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict) or block.get("type") != "tool_use":
                    continue
                given = block.get("input")
                data: dict[str, Any] = given if isinstance(given, dict) else {}
                command = data.get("command")
                tid = str(block.get("id") or "")
                self.calls[tid] = (f"Bash: {command}" if isinstance(command, str)
                                   else f"{block.get('name')}: {json.dumps(data)[:2048]}")
                if isinstance(command, str) and "slopjudge" in command:
                    for argv in argv_list(command):
                        if (parsed := parse_cite_quiet(argv)) is not None:
                            self.cites.append((parsed, tid, n))
                            self.cite_ids.add(tid)
        elif entry.get("type") == "user" and not any(entry.get(k) for k in _NOT_SAID):
            results = [b for b in content if isinstance(b, dict)
                       and b.get("type") == "tool_result"] if isinstance(content, list) else []
            for block in results:
                tid = str(block.get("tool_use_id") or "")
                if block.get("is_error"):
                    self.failed.add(tid)
                if tid not in self.cite_ids:  # a cite command's own output never counts
                    text = "\n".join(_texts(block.get("content")))
                    self.entries.append(("tool_result", n, text, self.calls.get(tid, "")))
            if not results:
                text = "\n".join(_texts(content))
                if text.strip():
                    self.entries.append(("user", n, text, ""))

    def resolve(self, quote: str, pools: list[str], before: int | None) -> dict[str, Any]:
        """One quote as a citation; ``problem`` set when it does not resolve."""
        needle = _norm(quote)
        hits: dict[int, tuple[list[str], str, str]] = {}
        for (pool, n, text, call), normed in zip(self.entries, self.normed, strict=True):
            if pool in pools and (before is None or n < before) and needle \
                    and needle in normed:
                found = hits.setdefault(n, ([], text, call))
                if pool not in found[0]:
                    found[0].append(pool)
        out: dict[str, Any] = {"quote": quote, "sourceTypes": pools, "path": self.path,
                               "line": 0, "message": ""}
        if len(hits) != 1:
            # Never the quote itself: a refusal saying it would become a tool result.
            out["problem"] = ("is not in the session word for word (only whitespace may "
                              "differ)" if not hits else
                              f"matches {len(hits)} entries (transcript lines "
                              f"{', '.join(map(str, sorted(hits)))}): quote more of it")
            return out
        line, (found_pools, text, call) = next(iter(hits.items()))
        out.update(sourceTypes=found_pools, line=line, message=text[:_MAX_MESSAGE])
        if call:
            out["call"] = call[:2048]
        return out


def parse_cite_quiet(argv: list[str]) -> Cite | None:
    try:
        return parse_cite(argv)
    except ValueError:
        return None


def _workspace_path(path: str, cwd: str, workspace: str) -> str:
    full = os.path.normpath(os.path.join(cwd, path))
    rel = os.path.relpath(full, workspace)
    return full if rel.startswith("..") else rel


def _cites(record: _Record, parsed: Cite, line: int | None, cwd: str,
           workspace: str) -> list[dict[str, Any]]:
    quotes, paths = parsed
    files = [_workspace_path(p, cwd, workspace) for p in paths]
    return [dict(record.resolve(q, pools, line), files=files) for q, pools in quotes]


def session(transcript: str | None, workspace: str) -> list[dict[str, Any]]:
    """Every citation the session made (resolved or not), in transcript order."""
    if not transcript:
        return []
    try:
        st = os.stat(transcript)
    except OSError:
        return []
    key = (transcript, st.st_size, st.st_mtime_ns)
    if key not in _CACHE:
        try:
            with open(transcript, "rb") as fh:
                record = _Record(transcript) if b"slopjudge" in fh.read() else None
        except OSError:
            record = None
        _CACHE.clear()
        _CACHE[key] = [] if record is None else [
            c for parsed, tid, line in record.cites if tid not in record.failed
            for c in _cites(record, parsed, line, workspace, workspace)]
    return _CACHE[key]


def for_command(command: str, transcript: str | None, workspace: str) -> list[dict[str, Any]]:
    """The citations a shell command carries: its own ``slopjudge cite ... &&`` parts."""
    if "slopjudge" not in command or not transcript or not os.path.isfile(transcript):
        return []
    from slopjudge.changes.shell import split

    record = _Record(transcript)
    return [c for simple in split(command, workspace)
            if (parsed := parse_cite_quiet(simple.argv)) is not None
            for c in _cites(record, parsed, None, simple.cwd, workspace)]


def resolved(citations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [c for c in citations if "problem" not in c]
