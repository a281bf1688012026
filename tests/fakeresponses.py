"""A local fake of the OpenAI Responses API that plays the model from a script.

The real Codex CLI talks to any provider declared in its ``config.toml``
(``[model_providers.<id>]`` with ``base_url`` and ``wire_api = "responses"``);
:func:`codex_home` writes one pointing at this server, so a test decides turn by
turn what "the model" says and then reads what the CLI sent back (tool outputs,
hook feedback). Nothing leaves 127.0.0.1.

Usage::

    def script(request: dict, turn: int) -> list[dict]:
        if turn == 0:
            return [shell("touch x")]
        return [say("done")]

    with FakeResponsesAPI(script) as api:
        env = codex_env(codex_home(tmp_path / "codex", api.url), home=str(tmp_path / "home"))
        subprocess.run([codex, "exec", "go"], env=env, ...)
        assert "denied" in call_output(api.requests[1], "call_1")

``script(request_json, turn)`` is called once per POST to ``/v1/responses``
(``turn`` counts from 0) and returns the output items of the answer:

- ``say(text)``: an assistant message;
- ``shell(command)``: an ``exec_command`` function call (``cmd``: the command string);
- ``patch(text)``: an ``apply_patch`` custom tool call carrying the patch text;
- any other item dict, sent as it is (a ``call_id`` is added when missing);
- or an :class:`HTTPError` to answer with that status and body instead.

Every answer is a server-sent event stream (``response.created``, one
``response.output_item.done`` per item, ``response.completed`` with ``usage``),
as ``codex exec`` reads it. ``usage`` defaults to 10 input / 5 output tokens and
can carry ``cached_tokens`` (sent as ``input_tokens_details.cached_tokens``,
included in ``input_tokens`` as the real API counts them). A script that raises
answers with an assistant message naming the error and keeps it in ``errors``.

Attributes: ``url`` (``http://127.0.0.1:<port>/v1``), ``requests`` (JSON bodies
in order), ``statuses`` (the HTTP status of each answer), ``errors``.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Script = Callable[[dict[str, Any], int], "list[dict[str, Any]] | HTTPError"]

PROVIDER = "fake"
MODEL = "gpt-5.5"


@dataclass
class HTTPError:
    """An answer that is an HTTP error rather than a stream."""

    status: int
    message: str = "error"


def say(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text}]}


def shell(command: str, workdir: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"cmd": command}
    if workdir:
        args["workdir"] = workdir
    return {"type": "function_call", "name": "exec_command", "arguments": json.dumps(args)}


def patch(text: str) -> dict[str, Any]:
    return {"type": "custom_tool_call", "name": "apply_patch", "input": text}


def call_outputs(request: dict[str, Any]) -> dict[str, str]:
    """Every tool output the request carries, by call id, as text."""
    out: dict[str, str] = {}
    for item in request.get("input") or []:
        if isinstance(item, dict) and str(item.get("type", "")).endswith("call_output"):
            value = item.get("output")
            if isinstance(value, list):
                value = "\n".join(str(p.get("text", "")) for p in value if isinstance(p, dict))
            elif isinstance(value, dict):
                value = str(value.get("content", value))
            out[str(item.get("call_id"))] = str(value)
    return out


def user_texts(request: dict[str, Any]) -> list[str]:
    """The text of every user and developer message in the request's input."""
    texts = []
    for item in request.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "message" \
                and item.get("role") in ("user", "developer"):
            for part in item.get("content") or []:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    texts.append(part["text"])
    return texts


def codex_home(path: Path, url: str, extra: str = "") -> str:
    """A CODEX_HOME whose config.toml sends every request to ``url``, with no retries."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.toml").write_text(
        f'model = "{MODEL}"\nmodel_provider = "{PROVIDER}"\n'
        'approval_policy = "never"\nsandbox_mode = "danger-full-access"\n'
        f"{extra}\n"
        f"[model_providers.{PROVIDER}]\n"
        f'name = "fake"\nbase_url = "{url}"\nwire_api = "responses"\n'
        'env_key = "FAKE_OPENAI_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n')
    return str(path)


_DROP_PREFIXES = ("OPENAI_", "CODEX_", "SLOPJUDGE_", "SLOPRAIL_", "XDG_", "CLAUDE")


def codex_env(home_dir: str, home: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """An environment that runs the real Codex CLI with ``home_dir`` as CODEX_HOME and a
    clean ``home``; nothing from the caller's Codex or slopjudge settings leaks in."""
    src = dict(os.environ if base is None else base)
    env = {k: v for k, v in src.items() if not k.startswith(_DROP_PREFIXES)}
    os.makedirs(home, exist_ok=True)
    env.update({
        "HOME": home, "CODEX_HOME": home_dir, "FAKE_OPENAI_KEY": "test-key",
        "XDG_CONFIG_HOME": os.path.join(home, ".config"),
        "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
        "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        "NO_COLOR": "1", "RUST_LOG": "error",
    })
    return env


class FakeResponsesAPI:
    """Serve the Responses API on 127.0.0.1, answering each request from ``script``."""

    def __init__(self, script: Script, *, usage: dict[str, int] | None = None) -> None:
        self.script = script
        self.usage = dict(usage or {"input_tokens": 10, "output_tokens": 5})
        self.requests: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    def __enter__(self) -> FakeResponsesAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, "application/json", b'{"models": [], "data": []}')

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {}
                if not self.path.split("?", 1)[0].endswith("/responses") \
                        or not isinstance(body, dict):
                    self._send(404, "application/json", b'{"error": {"message": "no"}}')
                    return
                status, ctype, data = api._answer(body)
                self._send(status, ctype, data)

            def _send(self, status: int, ctype: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _answer(self, body: dict[str, Any]) -> tuple[int, str, bytes]:
        with self._lock:
            turn = len(self.requests)
            self.requests.append(body)
        try:
            answer = self.script(body, turn)
        except BaseException as exc:  # the test reads .errors; the CLI must not hang
            with self._lock:
                self.errors.append(exc)
            answer = [say(f"fake API script error: {exc!r}")]
        if isinstance(answer, HTTPError):
            with self._lock:
                self.statuses.append(answer.status)
            error = {"error": {"message": answer.message, "type": "fake", "code": None}}
            return answer.status, "application/json", json.dumps(error).encode()
        with self._lock:
            self.statuses.append(200)
        return 200, "text/event-stream", self._stream(list(answer) or [say("")])

    def _stream(self, items: list[dict[str, Any]]) -> bytes:
        rid = f"resp_fake_{next(self._ids)}"
        events: list[dict[str, Any]] = [{"type": "response.created", "response": {"id": rid}}]
        for item in items:
            item = dict(item)
            item.setdefault("id", f"item_fake_{next(self._ids)}")
            if item.get("type") in ("function_call", "custom_tool_call"):
                item.setdefault("call_id", f"call_{next(self._ids)}")
            events.append({"type": "response.output_item.done", "item": item})
        u = self.usage
        cached = u.get("cached_tokens", 0)
        usage = {"input_tokens": u["input_tokens"],
                 "input_tokens_details": {"cached_tokens": cached},
                 "output_tokens": u["output_tokens"],
                 "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": u["input_tokens"] + u["output_tokens"]}
        events.append({"type": "response.completed", "response": {"id": rid, "usage": usage}})
        return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
