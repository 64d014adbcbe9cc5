"""A model server's reply is read up to a size (a floor plus bytes per token of the call's
budget; a fixed size for the model listings), and no further once its request is past its
deadline; a compressed reply is not read at all. On both backends, for the chat call and the
listing ``doctor`` reads, whatever the framing (a length, chunks) and the status.

The server is a loopback socket that sends a head, then the same chunk again and again until the
client closes the connection or :data:`BUDGET` bytes went out (so that, without the bound, a
test ends instead of eating the machine's memory). Memory is measured with tracemalloc (the
peak of the Python allocations during the call) against that budget.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import socket
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest

from bot.chat import ChatMessage, RoleOptions
from bot.clients.model_http import LISTING_MAX_BYTES, reply_max_bytes
from bot.clients.ollama_client import OllamaChatModel, ollama_models
from bot.clients.openai_client import OpenAIChatModel, openai_models
from bot.config import AUDITOR_OPTIONS, VALIDATOR_OPTIONS
from bot.errors import ModelError, ModelOutputError, ModelUnavailable
from bot.retry import RetryPolicy

BUDGET = 64 << 20
"""The most a test server sends on one connection (bytes): far above every bound."""

CHUNK = b"a" * (64 << 10)
ONCE = RetryPolicy(attempts=1)


@dataclass
class Sent:
    """What the server sent on each connection, and when the client closed it."""

    bytes: list[int] = field(default_factory=list)
    closed_at: list[float] = field(default_factory=list)


@contextlib.contextmanager
def endless(
    head: bytes, *, chunked: bool, interval_s: float = 0.0, body: bytes = CHUNK
) -> Iterator[tuple[str, Sent]]:
    """A loopback server that answers every request with ``head`` (status line and headers,
    without the blank line), then ``body`` again and again (framed as chunks when
    ``chunked``), every ``interval_s`` seconds, until the client closes or :data:`BUDGET`
    bytes went out. Yields its base URL and what it sent."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    sent = Sent()
    stop = threading.Event()
    piece = b"%x\r\n%s\r\n" % (len(body), body) if chunked else body

    def serve(conn: socket.socket) -> None:
        with conn:
            conn.recv(1 << 20)
            conn.sendall(head + b"\r\n")
            total = 0
            try:
                while total < BUDGET and not stop.is_set():
                    conn.sendall(piece)
                    total += len(piece)
                    if interval_s:
                        time.sleep(interval_s)
                if chunked:
                    conn.sendall(b"0\r\n\r\n")
            except OSError:  # the client closed the connection
                sent.closed_at.append(time.monotonic())
            sent.bytes.append(total)

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", sent
    finally:
        stop.set()
        listener.close()


def _closed(sent: Sent, *, within_s: float = 5.0) -> bool:
    """Whether the server saw the client close a connection, waiting up to ``within_s``."""
    waited = time.monotonic()
    while not sent.closed_at and time.monotonic() - waited < within_s:
        time.sleep(0.01)
    return bool(sent.closed_at)


def _head(status: str, *, chunked: bool, extra: bytes = b"") -> bytes:
    framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: 10000000000"
    return b"HTTP/1.1 %s\r\nContent-Type: application/json\r\n%s\r\n%s" % (
        status.encode(),
        framing,
        extra,
    )


Call = Callable[[str], object]


def _openai_chat(options: RoleOptions) -> Call:
    def call(url: str) -> object:
        model = OpenAIChatModel(base_url=f"{url}/v1", model="m", timeout_s=30, retry=ONCE)
        return model.chat([ChatMessage("user", "x")], options=options)

    return call


def _ollama_chat(options: RoleOptions) -> Call:
    def call(url: str) -> object:
        model = OllamaChatModel(host=url, model="m", timeout_s=30, retry=ONCE)
        return model.chat([ChatMessage("user", "x")], options=options)

    return call


GATE_BOUND = reply_max_bytes(VALIDATOR_OPTIONS.num_predict)
AUDIT_BOUND = reply_max_bytes(AUDITOR_OPTIONS.num_predict)

CALLS: list[tuple[str, Call, int]] = [
    ("openai gate", _openai_chat(VALIDATOR_OPTIONS), GATE_BOUND),
    ("openai audit", _openai_chat(AUDITOR_OPTIONS), AUDIT_BOUND),
    ("openai models", lambda url: openai_models(f"{url}/v1", None, timeout_s=30),
     LISTING_MAX_BYTES),
    ("ollama gate", _ollama_chat(VALIDATOR_OPTIONS), GATE_BOUND),
    ("ollama audit", _ollama_chat(AUDITOR_OPTIONS), AUDIT_BOUND),
    ("ollama tags", lambda url: ollama_models(url, timeout_s=30), LISTING_MAX_BYTES),
]  # fmt: skip
"""Each backend's calls: (name, the call against a server URL, the bound it must keep)."""

REPLIES = [
    ("200, chunked", "200 OK", True, CHUNK),
    ("200, a length", "200 OK", False, CHUNK),
    ("200, JSON whose text never ends", "200 OK", True,
     b'{"choices": [{"message": {"content": "' + CHUNK),
    ("500, chunked", "500 Internal Server Error", True, CHUNK),
    ("404, a length", "404 Not Found", False, CHUNK),
    ("307 to itself, chunked", "307 Temporary Redirect", True, CHUNK),
]  # fmt: skip


def _measured(call: Call, url: str) -> tuple[BaseException | None, int, float]:
    """The error ``call`` raised (or ``None``), its peak Python allocation (bytes) and time."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        call(url)
    except Exception as exc:
        error: BaseException | None = exc
    else:
        error = None
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return error, peak, elapsed


@pytest.mark.parametrize(("reply", "status", "chunked", "body"), REPLIES,
                         ids=[r[0] for r in REPLIES])  # fmt: skip
@pytest.mark.parametrize(("what", "call", "bound"), CALLS, ids=[c[0] for c in CALLS])
def test_a_reply_without_end_is_read_up_to_its_bound(
    what: str, call: Call, bound: int, reply: str, status: str, chunked: bool, body: bytes
) -> None:
    extra = b"Location: /elsewhere\r\n" if status.startswith("307") else b""
    head = _head(status, chunked=chunked, extra=extra)
    with endless(head, chunked=chunked, body=body) as (url, sent):
        error, peak, elapsed = _measured(call, url)
        assert _closed(sent), "the client kept the connection"
    assert isinstance(error, ModelOutputError), error
    assert f"more than {bound} bytes" in str(error)
    assert peak < bound + (8 << 20), f"peak {peak} bytes for a bound of {bound}"
    assert elapsed < 10
    assert max(sent.bytes) < BUDGET


@pytest.mark.parametrize(("what", "call", "bound"), CALLS[:2] + CALLS[3:5],
                         ids=[c[0] for c in CALLS[:2] + CALLS[3:5]])  # fmt: skip
@pytest.mark.parametrize("over", [0, 1])
def test_the_bound_is_the_last_byte_read(what: str, call: Call, bound: int, over: int) -> None:
    """A reply of exactly the bound is read (it then fails as the shape it is not); one byte
    more is refused as too large."""
    body = b" " * (bound + over)
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n" % len(
        body
    )
    with endless(head, chunked=False, body=body) as (url, _sent):
        error, _peak, _elapsed = _measured(call, url)
    assert isinstance(error, ModelOutputError)
    assert ("more than" in str(error)) is bool(over)


@pytest.mark.parametrize("num_predict", [0, 1, 160, 512, 1024, 8192])
def test_the_bound_leaves_room_for_any_real_reply(num_predict: int) -> None:
    """Generous: every token written as six-byte escapes, three characters a token, in an
    envelope of 64 KiB, still fits."""
    assert reply_max_bytes(num_predict) >= (64 << 10) + num_predict * 3 * 6
    assert reply_max_bytes(num_predict) < reply_max_bytes(num_predict + 1)


@functools.cache
def _bomb() -> bytes:
    return gzip.compress(b"\0" * BUDGET, compresslevel=9)


@pytest.mark.parametrize(("what", "call", "bound"), CALLS, ids=[c[0] for c in CALLS])
def test_a_compressed_reply_is_not_read(what: str, call: Call, bound: int) -> None:
    """A gzip bomb: a few KiB on the wire, far more than the bound once decoded."""
    bomb = _bomb()
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        b"Content-Length: %d\r\n" % len(bomb)
    )
    with endless(head, chunked=False, body=bomb) as (url, _sent):
        error, peak, _elapsed = _measured(call, url)
    assert isinstance(error, ModelOutputError), error
    assert "compressed" in str(error)
    assert peak < bound + (8 << 20)


@pytest.mark.parametrize(("what", "call"), [(c[0], c[1]) for c in CALLS], ids=[c[0] for c in CALLS])
def test_the_client_asks_for_no_compression(what: str, call: Call) -> None:
    seen: list[bytes] = []
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            seen.append(conn.recv(1 << 20))
            conn.sendall(b"HTTP/1.1 503 Busy\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    with pytest.raises(ModelError):
        call(f"http://127.0.0.1:{listener.getsockname()[1]}")
    thread.join(5)
    listener.close()
    headers = seen[0].split(b"\r\n\r\n")[0].lower().split(b"\r\n")
    assert b"accept-encoding: identity" in headers


@pytest.mark.parametrize(
    "call",
    [
        lambda url: OpenAIChatModel(base_url=f"{url}/v1", model="m", timeout_s=0.4, retry=ONCE),
        lambda url: OllamaChatModel(host=url, model="m", timeout_s=0.4, retry=ONCE),
    ],
    ids=["openai", "ollama"],
)
@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "a length"])
def test_a_request_past_its_deadline_stops_reading_and_lets_go_of_its_connection(
    call: Callable[[str], OpenAIChatModel | OllamaChatModel], chunked: bool
) -> None:
    """A server that drips: 1 KiB every 20 ms, far below any bound for as long as the test
    runs. The caller gives up at the deadline, and the request it left behind closes its
    connection within a few chunks, instead of reading on while retries start new ones."""
    with endless(_head("200 OK", chunked=chunked), chunked=chunked, interval_s=0.02,
                 body=b"a" * 1024) as (url, sent):  # fmt: skip
        model = call(url)
        started = time.monotonic()
        with pytest.raises(ModelUnavailable, match="timed out"):
            model.chat([ChatMessage("user", "x")], options=VALIDATOR_OPTIONS)
        assert _closed(sent, within_s=3), "the abandoned request kept reading"
        assert sent.closed_at[0] - (started + 0.4) < 1.0
