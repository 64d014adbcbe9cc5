"""What the model-server backends (:mod:`bot.clients.ollama_client`,
:mod:`bot.clients.openai_client`) share on the wire: the guards on the HTTP client each talks
through, and a reply read through its pydantic shape.

**The clients.** :func:`httpx_guards` (the ``ollama`` package's httpx client) and
:func:`httpx2_client` (the ``openai`` client, httpx2) give an ordinary client of its library two
hooks. The request hook runs on every request the client is about to send, a redirect's
included, and raises :class:`RedirectRefused` for one to another origin (scheme, host, port)
than the base URL's: nothing is sent there. A redirect within the origin is followed. The
response hook runs on every response before its body is read:

- a reply that says it is compressed (``Content-Encoding``) raises :class:`ReplyCompressed`:
  the clients ask for none (``Accept-Encoding: identity``), and the bytes of a compressed body
  bound nothing of what it decodes to;
- the reply's byte stream is wrapped so that reading raises :class:`ReplyTooLarge` once the
  body passes the request's byte limit, and :class:`~bot.retry.DeadlineExceeded` once the
  request is past its deadline (:func:`bot.retry.past_deadline`): a request its caller
  abandoned stops reading at the next chunk. httpx closes a response whose reading raises,
  which releases its connection.

The byte limit travels in a context variable: :func:`reply_limit` sets it around a call
(:func:`reply_max_bytes` of the role's ``num_predict``), and
:func:`bot.retry.call_with_deadline` runs the request in a copy of the caller's context.
Without one, a reply may hold :data:`LISTING_MAX_BYTES` (the model listings ``doctor`` reads).
The hooks leave the client's own transport in place, so its proxy settings from the
environment, and the test cassettes' patch of it, still apply.

**The replies.** :func:`read_reply` reads a reply body into the backend's pydantic model
(``model_validate_json``) before the bot looks at a field of it; a body of another shape raises
:class:`ReplyShapeError`. Each backend's error translator turns these exceptions into
:mod:`bot.errors` classes naming its server. A token count is a :data:`TokenCount`: what a
server reports is stored with the decision, in a column that holds 32-bit integers.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, TypedDict, TypeVar
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import httpx
import httpx2
from pydantic import BaseModel, Field, ValidationError

from bot.errors import ModelError, ModelOutputError, ModelRequestRejected, ModelUnavailable
from bot.retry import DeadlineExceeded, past_deadline

__all__ = [
    "LISTING_MAX_BYTES",
    "REPLY_BYTES_PER_TOKEN",
    "REPLY_FLOOR_BYTES",
    "TOKEN_COUNT_MAX",
    "HttpxGuards",
    "RedirectRefused",
    "ReplyCompressed",
    "ReplyShapeError",
    "ReplyTooLarge",
    "TokenCount",
    "httpx2_client",
    "httpx_guards",
    "read_reply",
    "reply_limit",
    "reply_max_bytes",
    "server_address",
    "transport_fault",
]

REPLY_FLOOR_BYTES = 1 << 20
"""What any chat reply may hold (bytes), whatever its token budget: the envelope, the usage,
fields a server adds."""

REPLY_BYTES_PER_TOKEN = 256
"""What a chat reply may hold per token of its budget (bytes). A token is a few characters,
which JSON may write as ``\\uXXXX`` escapes of 6 bytes each: far more than a real reply uses."""

LISTING_MAX_BYTES = 8 << 20
"""What a reply may hold (bytes) when no limit was set: the model listings (``/v1/models``,
``/api/tags``), error replies outside a chat call."""

_MAX_BYTES: contextvars.ContextVar[int] = contextvars.ContextVar(
    "reply_max_bytes", default=LISTING_MAX_BYTES
)

TOKEN_COUNT_MAX = 2**31 - 1
"""The largest token count a reply may report (a PostgreSQL ``integer``)."""

TokenCount = Annotated[int, Field(ge=0, le=TOKEN_COUNT_MAX)]
"""A token count as a reply reports it."""

M = TypeVar("M", bound=BaseModel)


def server_address(url: str) -> tuple[str, dict[str, str]]:
    """A model server's base URL as its client takes it: the address requests go to (scheme,
    host, port and path; no user information, query or fragment), and the URL's query, which
    every request carries (a gateway's ``?api-version=``), name to value."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    address = urlunsplit((parts.scheme, host, parts.path, "", ""))
    return address, dict(parse_qsl(parts.query, keep_blank_values=True))


def reply_max_bytes(num_predict: int) -> int:
    """The most bytes a chat reply of ``num_predict`` tokens may hold."""
    return REPLY_FLOOR_BYTES + REPLY_BYTES_PER_TOKEN * max(0, num_predict)


@contextmanager
def reply_limit(max_bytes: int) -> Iterator[None]:
    """Within the block, a reply (each one: a redirect, an error, the answer) may hold at
    most ``max_bytes`` bytes; requests made in a copy of this context
    (:func:`bot.retry.call_with_deadline`) keep the limit."""
    token = _MAX_BYTES.set(max_bytes)
    try:
        yield
    finally:
        _MAX_BYTES.reset(token)


class ReplyTooLarge(Exception):
    """A reply's body passed the request's byte limit; it was not read further."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(f"a reply of more than {max_bytes} bytes")
        self.max_bytes = max_bytes


class ReplyCompressed(Exception):
    """A reply came compressed (``Content-Encoding``) though the client asked for none."""


class RedirectRefused(Exception):
    """A reply redirected the request to another origin than the base URL's; nothing was sent
    there. The message holds nothing of where it pointed."""


def _bounded(chunks: Iterable[bytes], max_bytes: int) -> Iterator[bytes]:
    """``chunks`` as they come, until they pass ``max_bytes`` or the request its deadline.

    Raises:
        ReplyTooLarge: the chunks passed ``max_bytes`` bytes.
        DeadlineExceeded: the request is past its deadline (its caller stopped waiting).
    """
    read = 0
    for chunk in chunks:
        read += len(chunk)
        if read > max_bytes:
            raise ReplyTooLarge(max_bytes)
        if past_deadline():
            raise DeadlineExceeded("stopped reading a reply past its deadline")
        yield chunk


class _BoundedBody:
    """A response's byte stream, bounded (:func:`_bounded`)."""

    def __init__(self, stream: Any, max_bytes: int) -> None:
        self._stream = stream
        self._max_bytes = max_bytes

    def __iter__(self) -> Iterator[bytes]:
        return _bounded(self._stream, self._max_bytes)

    def close(self) -> None:
        self._stream.close()


class _HttpxBody(_BoundedBody, httpx.SyncByteStream):
    pass


class _Httpx2Body(_BoundedBody, httpx2.SyncByteStream):
    pass


def transport_fault(exc: BaseException, *, server: str, fix: str) -> ModelError | None:
    """The model error for a fault of this module's clients (deadline, redirect, size,
    compression), ``None`` for any other. ``server`` names the server ("Ollama at URL"),
    ``fix`` says what to set right after a redirect."""
    if isinstance(exc, DeadlineExceeded):
        return ModelUnavailable(f"{server} timed out: {exc}")
    if isinstance(exc, RedirectRefused):
        return ModelRequestRejected(
            f"{server} redirected the request to another origin (scheme, host or port), "
            f"where the bot sends nothing: {fix}"
        )
    if isinstance(exc, ReplyTooLarge):
        return ModelOutputError(
            f"{server} sent a reply of more than {exc.max_bytes} bytes, more than the call "
            "asked for could hold: not read further"
        )
    if isinstance(exc, ReplyCompressed):
        return ModelOutputError(
            f"{server} sent a compressed reply though asked for none: not read (its size once "
            "decoded is unknown)"
        )
    return None


_IDENTITY = {"accept-encoding": "identity"}


def _check_encoding(encoding: str | None) -> None:
    """Raises :class:`ReplyCompressed` unless ``encoding`` (the ``Content-Encoding`` header)
    says the body is as sent."""
    if encoding is not None and encoding.strip().lower() not in ("", "identity"):
        raise ReplyCompressed("a compressed reply")


Origin = tuple[str, str, int | None]
"""A URL's scheme, host and port (``None``: the scheme's default), as httpx normalises them."""


def _origin(url: httpx.URL | httpx2.URL) -> Origin:
    return (url.scheme, url.host, url.port)


def _staying_at(origin: Origin) -> Callable[[httpx.Request | httpx2.Request], None]:
    """A request hook that raises :class:`RedirectRefused` for a request to another origin."""

    def hook(request: httpx.Request | httpx2.Request) -> None:
        if _origin(request.url) != origin:
            raise RedirectRefused("a redirect to another origin")

    return hook


def _guard_httpx(response: httpx.Response) -> None:
    _check_encoding(response.headers.get("content-encoding"))
    assert isinstance(response.stream, httpx.SyncByteStream)  # a sync client's
    response.stream = _HttpxBody(response.stream, _MAX_BYTES.get())


def _guard_httpx2(response: httpx2.Response) -> None:
    _check_encoding(response.headers.get("content-encoding"))
    assert isinstance(response.stream, httpx2.SyncByteStream)  # a sync client's
    response.stream = _Httpx2Body(response.stream, _MAX_BYTES.get())


class HttpxGuards(TypedDict):
    """Keyword arguments of ``httpx.Client`` (``ollama.Client`` passes them on)."""

    headers: dict[str, str]
    follow_redirects: bool
    event_hooks: dict[str, list[Callable[..., Any]]]


def httpx_guards(base_url: str) -> HttpxGuards:
    """What keeps an httpx client's requests to ``base_url``'s origin and guards every reply
    (see the module doc): its ``headers``, ``follow_redirects`` and ``event_hooks``, fresh
    lists a caller may add hooks to."""
    return {
        "headers": dict(_IDENTITY),
        "follow_redirects": True,
        "event_hooks": {
            "request": [_staying_at(_origin(httpx.URL(base_url)))],
            "response": [_guard_httpx],
        },
    }


def httpx2_client(base_url: str, *, timeout_s: float) -> httpx2.Client:
    """An httpx2 client for the ``openai`` client at ``base_url`` (which builds every URL
    itself), its requests kept to that origin and every reply guarded (see the module doc);
    ``timeout_s`` per network operation."""
    return httpx2.Client(
        timeout=timeout_s,
        headers=_IDENTITY,
        follow_redirects=True,
        event_hooks={
            "request": [_staying_at(_origin(httpx2.URL(base_url)))],
            "response": [_guard_httpx2],
        },
    )


class ReplyShapeError(Exception):
    """A model server's reply body is not of the shape the backend reads.

    Attributes:
        api_json: whether the body is a JSON object at all (``False``: a web page, text, a
            JSON list: the base URL points elsewhere than the API).
        content_type: the reply's media type as sent (untrusted text).
        detail: where the body first departs from the shape and how, in pydantic's words
            (field names and list positions, never the body's values); empty when
            ``api_json`` is ``False``.
    """

    def __init__(self, *, api_json: bool, content_type: str, detail: str = "") -> None:
        super().__init__(detail or "not a JSON object")
        self.api_json = api_json
        self.content_type = content_type
        self.detail = detail


def read_reply(body: bytes, content_type: str, shape: type[M]) -> M:
    """``body`` (a reply whose ``Content-Type`` header is ``content_type``) read as ``shape``.

    Raises:
        ReplyShapeError: the content type is not JSON, or the body is not JSON, not an object,
            or not of the shape.
    """
    media = content_type.partition(";")[0].strip()
    if "json" not in media.lower():
        raise ReplyShapeError(api_json=False, content_type=media)
    try:
        return shape.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False, include_context=False)[0]
        if not first["loc"]:  # not JSON, or JSON that is not an object
            raise ReplyShapeError(api_json=False, content_type=media) from None
        where = ".".join(str(part) for part in first["loc"])
        # not chained: pydantic's error quotes the body, which is untrusted
        raise ReplyShapeError(
            api_json=True, content_type=media, detail=f"{where}: {first['msg']}"
        ) from None
