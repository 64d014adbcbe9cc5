"""What the model-server backends share on the wire: guarded HTTP clients and typed replies.

Why each guard exists is in docs/design.md, "A model server is untrusted too". A client's
request hook raises :class:`RedirectRefused` before anything goes to another origin; its
response hook raises :class:`ReplyCompressed`, and its body raises :class:`ReplyTooLarge` or
:class:`~bot.retry.DeadlineExceeded` while read. Each backend maps them with
:func:`transport_fault`.
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
    """The URL without user info, query or fragment, and its query, which every request carries."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    address = urlunsplit((parts.scheme, host, parts.path, "", ""))
    return address, dict(parse_qsl(parts.query, keep_blank_values=True))


def reply_max_bytes(num_predict: int) -> int:
    return REPLY_FLOOR_BYTES + REPLY_BYTES_PER_TOKEN * max(0, num_predict)


@contextmanager
def reply_limit(max_bytes: int) -> Iterator[None]:
    """Bound every reply in the block, and in copies of its context, to ``max_bytes``."""
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
    """A redirect to another origin; nothing was sent there, and the message names none."""


def _bounded(chunks: Iterable[bytes], max_bytes: int) -> Iterator[bytes]:
    read = 0
    for chunk in chunks:
        read += len(chunk)
        if read > max_bytes:
            raise ReplyTooLarge(max_bytes)
        if past_deadline():
            raise DeadlineExceeded("stopped reading a reply past its deadline")
        yield chunk


class _BoundedBody:
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
    """The model error for a guard's fault, else ``None``; ``fix`` is told after a redirect."""
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
    if encoding is not None and encoding.strip().lower() not in ("", "identity"):
        raise ReplyCompressed("a compressed reply")


Origin = tuple[str, str, int | None]
"""A URL's scheme, host and port (``None``: the scheme's default), as httpx normalises them."""


def _origin(url: httpx.URL | httpx2.URL) -> Origin:
    return (url.scheme, url.host, url.port)


def _staying_at(origin: Origin) -> Callable[[httpx.Request | httpx2.Request], None]:
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
    """Keyword arguments of ``httpx.Client``; ``ollama.Client`` passes them on."""

    headers: dict[str, str]
    follow_redirects: bool
    event_hooks: dict[str, list[Callable[..., Any]]]


def httpx_guards(base_url: str) -> HttpxGuards:
    """An httpx client's guard arguments for ``base_url``; the hook lists are fresh."""
    return {
        "headers": dict(_IDENTITY),
        "follow_redirects": True,
        "event_hooks": {
            "request": [_staying_at(_origin(httpx.URL(base_url)))],
            "response": [_guard_httpx],
        },
    }


def httpx2_client(base_url: str, *, timeout_s: float) -> httpx2.Client:
    """A guarded httpx2 client for the ``openai`` client; ``timeout_s`` per network operation."""
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
    """A reply body not of the backend's shape.

    Attributes:
        api_json: ``False`` when the body is no JSON object (the URL points past the API).
        content_type: the reply's media type, untrusted.
        detail: where the body departs from the shape, in pydantic's words, never its values.
    """

    def __init__(self, *, api_json: bool, content_type: str, detail: str = "") -> None:
        super().__init__(detail or "not a JSON object")
        self.api_json = api_json
        self.content_type = content_type
        self.detail = detail


def read_reply(body: bytes, content_type: str, shape: type[M]) -> M:
    """``body`` read as ``shape``; :class:`ReplyShapeError` for anything else, JSON or not."""
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
