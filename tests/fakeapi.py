"""A local fake of the Anthropic Messages API that plays the model from a script.

The real Claude Code CLI honours ``ANTHROPIC_BASE_URL``, so pointing it at this
server lets a test decide, turn by turn, what "the model" says and then read
what the CLI sent back (tool results, hook feedback, system prompt). Nothing
leaves 127.0.0.1.

Usage::

    from tests.fakeapi import FakeMessagesAPI, claude_env, tool_results

    def script(request: dict, turn: int) -> list[dict]:
        if turn == 0:
            return [{"type": "tool_use", "name": "Write",
                     "input": {"file_path": "/tmp/x", "content": "hi"}}]
        return [{"type": "text", "text": "done"}]

    with FakeMessagesAPI(script) as api:
        env = claude_env(api.url, home=str(tmp_path / "home"))
        subprocess.run([claude, "-p", "go"], env=env, ...)
        assert tool_results(api.requests[1])[0]["is_error"] is False

API
---
``FakeMessagesAPI(script, *, log=None, usage=None)``
    Context manager. Entering starts a ``ThreadingHTTPServer`` on
    ``127.0.0.1:0`` in a daemon thread; leaving shuts it down.

    ``script(request_json, turn) -> list[dict]`` is called once per *real
    turn*: a POST to ``/v1/messages`` that carries ``tools`` and does not ask
    for ``max_tokens: 1``. ``turn`` counts real turns from 0. The returned
    content blocks become the assistant message:

    - ``{"type": "text", "text": "..."}``
    - ``{"type": "tool_use", "name": "Write", "input": {...}}`` (an ``id`` of
      the form ``toolu_fake_<n>`` is added when missing)

    ``stop_reason`` is ``tool_use`` when any block is a tool_use, else
    ``end_turn``. Every answer reports ``usage`` (default ``{"input_tokens":
    10, "output_tokens": 5}``; may add ``cache_creation_input_tokens`` and
    ``cache_read_input_tokens``): streamed, the input and cache figures go in
    ``message_start`` and ``output_tokens`` in ``message_delta``, as the real
    API sends them. If the script raises, the exception is kept in ``.errors``
    and the turn answers with a text block ``fake API script error: ...`` so
    the CLI ends instead of hanging; tests should assert ``not api.errors``.

    Attributes:

    - ``url``: ``http://127.0.0.1:<port>`` (give it as ANTHROPIC_BASE_URL).
    - ``requests``: JSON bodies of the real turns, in order (what the script saw).
    - ``side_requests``: JSON bodies of side requests (see below).
    - ``log``: every HTTP request as ``(method, path, body_or_None)``.
    - ``errors``: exceptions raised by the script.

Side requests do not consume the script. Claude Code makes some besides the
conversation itself; a POST to ``/v1/messages`` with no ``tools`` (title or
topic generation, summaries) or with ``max_tokens: 1`` (a quota probe) gets a
short text answer; ``/v1/messages/count_tokens`` gets ``{"input_tokens": N}``
estimated from the body size; HEAD/GET/other paths get a ``200 {}``.

Observed with CLI 2.1.332 under ``claude_env``: a ``claude -p`` run sends only
real turns, ``POST /v1/messages?beta=true`` with ``"stream": true``, the full
tool list (``Bash``, ``Edit``, ``Read``, ``Write``, ...) in ``tools`` and
``max_tokens`` well above 1; the first turn's last user message holds
``<system-reminder>`` text blocks followed by the prompt. No side request was
seen, but the rules above keep the script safe if a build adds one. A refused
tool comes back as a ``tool_result`` with ``is_error: true``, e.g.
``Permission to use Bash with command touch pwned has been denied.`` or
``File is in a directory that is denied by your permission settings.``

Answers are streamed as server-sent events when the request has
``"stream": true`` (``message_start``, ``content_block_start``,
``content_block_delta`` with ``text_delta`` / ``input_json_delta``,
``content_block_stop``, ``message_delta`` with ``stop_reason`` and ``usage``,
``message_stop``), and otherwise as one JSON message.

Helpers (module functions, take a request JSON body):

- ``tool_results(request) -> list[dict]``: the ``tool_result`` blocks of the
  last user message, each ``{"tool_use_id", "is_error", "content"}`` with
  ``content`` flattened to text.
- ``system_text(request) -> str``: the system prompt as one string.
- ``last_user_text(request) -> str``: the text blocks of the last user
  message joined by newlines (tool results not included).
- ``all_text(request) -> str``: every text in the request (system, every
  message, tool results), for "did X reach the model at all" assertions.
- ``claude_env(url, home, base=None) -> dict[str, str]``: the environment for
  running the real CLI against this server, described next.

Environment for the CLI (``claude_env``) and why:

- ``ANTHROPIC_BASE_URL=<url>``, ``ANTHROPIC_API_KEY=test-key``: talk to the
  fake, authenticate with a key (no OAuth, no login prompt).
- ``HOME=<temp dir>`` plus ``XDG_CONFIG_HOME``/``XDG_CACHE_HOME``/
  ``XDG_DATA_HOME``/``XDG_STATE_HOME`` under it and ``CLAUDE_CONFIG_DIR``
  unset: nothing from the real home (settings, hooks, credentials, plugins)
  leaks in, and nothing is written there.
- ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1``, ``DISABLE_AUTOUPDATER=1``,
  ``DISABLE_TELEMETRY=1``, ``DISABLE_ERROR_REPORTING=1``: no update checks,
  telemetry or error reports (nothing leaves the machine).
- ``CLAUDE_CODE_SKIP_FAST_MODE_ORG_CHECK=1`` ``DISABLE_PROMPT_CACHING=1``:
  avoid optional side calls.
- Variables that would make the CLI think it runs inside another Claude Code
  session (``CLAUDECODE``, ``CLAUDE_CODE_*`` session/socket variables,
  ``CLAUDE_CODE_EXECPATH``, ``CLAUDE_CODE_ENTRYPOINT``) and any inherited
  ``ANTHROPIC_*`` credentials are removed.
- ``SLOPJUDGE_*``/``SLOPRAIL_*`` variables (the re-entry guards among them)
  are removed so hooks under test really run; add back what a test needs
  after calling ``claude_env``.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Script = Callable[[dict[str, Any], int], list[dict[str, Any]]]

__all__ = [
    "FakeMessagesAPI",
    "Script",
    "all_text",
    "claude_env",
    "last_user_text",
    "system_text",
    "tool_results",
]


def _flatten(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text", "")))
                elif block.get("type") == "tool_result":
                    parts.append(_flatten(block.get("content")))
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    return str(content)


def _last_user(request: dict[str, Any]) -> dict[str, Any] | None:
    for msg in reversed(request.get("messages") or []):
        if msg.get("role") == "user":
            return msg
    return None


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool_result blocks of the last user message, content as text."""
    msg = _last_user(request)
    if msg is None or not isinstance(msg.get("content"), list):
        return []
    return [
        {
            "tool_use_id": b.get("tool_use_id"),
            "is_error": bool(b.get("is_error", False)),
            "content": _flatten(b.get("content")),
        }
        for b in msg["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]


def system_text(request: dict[str, Any]) -> str:
    """The system prompt as one string."""
    return _flatten(request.get("system"))


def last_user_text(request: dict[str, Any]) -> str:
    """Text blocks of the last user message (tool results excluded)."""
    msg = _last_user(request)
    if msg is None:
        return ""
    content = msg.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        str(b.get("text", ""))
        for b in content or []
        if isinstance(b, dict) and b.get("type") == "text"
    )


def all_text(request: dict[str, Any]) -> str:
    """Every text the request carries: system prompt, messages, tool results."""
    parts = [system_text(request)]
    for msg in request.get("messages") or []:
        parts.append(_flatten(msg.get("content")))
    return "\n".join(parts)


_DROP_PREFIXES = ("ANTHROPIC_", "CLAUDE_CODE_", "CLAUDE_", "SLOPJUDGE_", "SLOPRAIL_", "XDG_")
_DROP = {"CLAUDECODE", "SR_GUARDRAIL"}


def claude_env(url: str, home: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment that runs the real CLI against ``url`` with a clean ``home``."""
    src = dict(os.environ if base is None else base)
    env = {
        k: v for k, v in src.items()
        if k not in _DROP and not k.startswith(_DROP_PREFIXES)
    }
    os.makedirs(home, exist_ok=True)
    env.update(
        {
            "HOME": home,
            "XDG_CONFIG_HOME": os.path.join(home, ".config"),
            "XDG_CACHE_HOME": os.path.join(home, ".cache"),
            "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
            "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "test-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_PROMPT_CACHING": "1",
            "CLAUDE_CODE_SKIP_FAST_MODE_ORG_CHECK": "1",
        }
    )
    return env


def _is_side_request(body: dict[str, Any]) -> bool:
    return not body.get("tools") or body.get("max_tokens") == 1


class FakeMessagesAPI:
    """Serve the Messages API on 127.0.0.1, answering real turns from ``script``."""

    def __init__(
        self,
        script: Script,
        *,
        log: Callable[[str], None] | None = None,
        usage: dict[str, int] | None = None,
    ) -> None:
        self.script = script
        self.usage = dict(usage or {"input_tokens": 10, "output_tokens": 5})
        self.requests: list[dict[str, Any]] = []
        self.side_requests: list[dict[str, Any]] = []
        self.log: list[tuple[str, str, Any]] = []
        self.errors: list[BaseException] = []
        self._trace = log
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # -- lifecycle ---------------------------------------------------------
    def __enter__(self) -> FakeMessagesAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt: str, *args: Any) -> None:  # quiet
                pass

            def _body(self) -> Any:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if not raw:
                    return None
                try:
                    return json.loads(raw)
                except ValueError:
                    return raw.decode("utf-8", "replace")

            def do_HEAD(self) -> None:
                api._record(self.command, self.path, None)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                api._record(self.command, self.path, None)
                self._json(200, {})

            def do_POST(self) -> None:
                body = self._body()
                api._record(self.command, self.path, body)
                path = self.path.split("?", 1)[0]
                if path.endswith("/v1/messages/count_tokens"):
                    size = len(json.dumps(body)) if body is not None else 0
                    self._json(200, {"input_tokens": max(1, size // 4)})
                    return
                if not path.endswith("/v1/messages") or not isinstance(body, dict):
                    self._json(200, {})
                    return
                blocks = api._answer(body)
                message = api._message(body, blocks)
                if body.get("stream"):
                    self._stream(message)
                else:
                    self._json(200, message)

            def _json(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, message: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for event, data in _sse_events(message):
                    self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- answering ---------------------------------------------------------
    def _record(self, method: str, path: str, body: Any) -> None:
        with self._lock:
            self.log.append((method, path, body))
        if self._trace is not None:
            summary = json.dumps(body)[:300] if body is not None else ""
            self._trace(f"{method} {path} {summary}")

    def _answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        if _is_side_request(body):
            with self._lock:
                self.side_requests.append(body)
            return [{"type": "text", "text": "ok"}]
        with self._lock:
            turn = len(self.requests)
            self.requests.append(body)
        try:
            blocks = list(self.script(body, turn))
        except BaseException as exc:  # the test reads .errors; the CLI must not hang
            with self._lock:
                self.errors.append(exc)
            return [{"type": "text", "text": f"fake API script error: {exc!r}"}]
        out: list[dict[str, Any]] = []
        for block in blocks:
            block = dict(block)
            if block.get("type") == "tool_use":
                block.setdefault("id", f"toolu_fake_{next(self._ids)}")
                block.setdefault("input", {})
            out.append(block)
        return out or [{"type": "text", "text": ""}]

    def _message(self, body: dict[str, Any], blocks: list[dict[str, Any]]) -> dict[str, Any]:
        stop = "tool_use" if any(b.get("type") == "tool_use" for b in blocks) else "end_turn"
        return {
            "id": f"msg_fake_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "claude-fake",
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": dict(self.usage),
        }


def _sse_events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    begin = {k: v for k, v in message["usage"].items() if k != "output_tokens"}
    start = dict(message, content=[], stop_reason=None, usage={**begin, "output_tokens": 1})
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for i, block in enumerate(message["content"]):
        if block.get("type") == "tool_use":
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input", {}))}
        else:
            head = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": str(block.get("text", ""))}
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": head},
            )
        )
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta})
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events
