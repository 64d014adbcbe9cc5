"""A fake OpenAI-compatible server on loopback: real HTTP (the standard library's threading
server), answers chosen by the test, an optional fixed delay per request, and a count of the
requests in flight at once. For the secrets tests (a server that echoes the API key back) and
the concurrency benchmark (a server that answers after a fixed delay, so throughput does not
depend on this machine's cores).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.replies import NEEDS_REPLY

__all__ = ["Answer", "FakeOpenAI", "Received", "completion", "fake_openai_server"]


@dataclass(frozen=True)
class Received:
    """One request as the server read it: method, path, headers (names lower-cased), body
    (JSON, or ``None`` for a ``GET``)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


@dataclass(frozen=True)
class Answer:
    """What the server sends: status, a JSON body (or text), headers."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


def completion(content: str, *, finish_reason: str = "stop", model: str = "fake") -> Answer:
    """A chat completion whose one choice says ``content``, with usage."""
    return Answer(200, {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    })  # fmt: skip


def _default(request: Received) -> Answer:
    if request.path.endswith("/models"):
        return Answer(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
    return completion(NEEDS_REPLY)


@dataclass
class FakeOpenAI:
    """A running fake server: its base URL (up to ``/v1``), the requests it read, and the most
    requests it held at once."""

    url: str
    received: list[Received] = field(default_factory=list)
    most_in_flight: int = 0
    _in_flight: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def enter(self, request: Received) -> None:
        with self._lock:
            self.received.append(request)
            self._in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self._in_flight)

    def leave(self) -> None:
        with self._lock:
            self._in_flight -= 1


@contextmanager
def fake_openai_server(
    answer: Callable[[Received], Answer] = _default, *, delay_s: float = 0.0
) -> Iterator[FakeOpenAI]:
    """Serve ``answer`` on a free loopback port, each reply after ``delay_s`` seconds; yields
    the running :class:`FakeOpenAI` and stops the server on exit."""
    state: list[FakeOpenAI] = []

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as the client pools connections
        disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms wait

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            request = Received(
                self.command,
                self.path,
                {k.lower(): v for k, v in self.headers.items()},
                json.loads(raw) if raw else None,
            )
            server = state[0]
            server.enter(request)
            try:
                time.sleep(delay_s)
                reply = answer(request)
            finally:
                server.leave()
            data = (reply.body if isinstance(reply.body, str) else json.dumps(reply.body)).encode()
            self.send_response(reply.status)
            if "content-type" not in {name.lower() for name in reply.headers}:
                self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _serve

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.append(FakeOpenAI(f"http://127.0.0.1:{httpd.server_address[1]}/v1"))
    thread = threading.Thread(target=httpd.serve_forever, name="fake-openai", daemon=True)
    thread.start()
    try:
        yield state[0]
    finally:
        httpd.shutdown()
        httpd.server_close()
