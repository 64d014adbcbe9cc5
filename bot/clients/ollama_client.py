"""The Ollama backend of :class:`~bot.chat.ChatModel`.

:class:`OllamaChatModel` is the production backend, over Ollama's native ``/api/chat``; it is
chosen when an Ollama host is configured (:data:`bot.factory.BACKENDS`). It talks to Ollama
with httpx (the HTTP client the ``ollama`` package wraps) and reads every reply through this
module's own pydantic shapes (:class:`OllamaChatReply`, :class:`OllamaTagsReply`,
:func:`bot.clients.model_http.read_reply`): the ``ollama`` package builds its reply objects
from whatever JSON arrives and hands out no reply body to read otherwise.

Every call sends ``stream=False``, ``think=False``, the role's ``options`` (``temperature``,
``num_predict``, ``num_ctx``, ``seed``) and, when given, a JSON schema as ``format`` (structured
output). ``done_reason == "length"`` raises :class:`~bot.errors.ModelTruncated`: a truncated reply
is an error, never a result. Ollama cuts a prompt longer than ``num_ctx`` without saying so
(only its ``prompt_eval_count``, then equal to ``num_ctx``, shows it): a reply whose prompt plus
``num_predict`` does not fit raises :class:`~bot.errors.ModelPromptTooLong`
(:func:`bot.chat.check_prompt_fits` gives the rule and why).

The client is :func:`bot.clients.model_http.httpx_client`: it sends nothing to another origin
than the host's (a redirect there is refused); a reply may hold
:func:`~bot.clients.model_http.reply_max_bytes` of the role's ``num_predict`` and is read no
further than that, nor past the request's deadline; a compressed one is not read.

This module is the one place where httpx errors and Ollama's error replies become
:mod:`bot.errors` classes (:func:`translate_ollama_error`). Messages name the host as
:func:`bot.neutralise.shown_url` shows it (no user information, no secret query value).

httpx's timeout applies per network operation, so a server that drips one byte a second never
times out; each request therefore also runs against a wall-clock deadline of ``timeout_s``
(:func:`bot.retry.call_with_deadline`: the caller stops waiting at the deadline).

Transient faults (connection refused, timeouts, 5xx such as 503 "server busy") are retried
with tenacity (:mod:`bot.retry`) before they are translated.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.chat import ChatMessage, ChatResult, RoleOptions, check_prompt_fits
from bot.clients.model_http import (
    RedirectRefused,
    ReplyCompressed,
    ReplyShapeError,
    ReplyTooLarge,
    TokenCount,
    httpx_client,
    read_reply,
    reply_limit,
    reply_max_bytes,
    server_address,
)
from bot.errors import (
    ModelError,
    ModelNotFound,
    ModelOutputError,
    ModelRequestRejected,
    ModelTruncated,
    ModelUnavailable,
)
from bot.neutralise import log_value, read_url, redact, redacted_excerpt
from bot.retry import DeadlineExceeded, RetryPolicy, call_with_deadline, call_with_retries

M = TypeVar("M", bound=BaseModel)

__all__ = [
    "OllamaChatModel",
    "OllamaChatReply",
    "OllamaChatRequest",
    "OllamaTagsReply",
    "is_transient_ollama_error",
    "ollama_models",
    "ollama_options",
    "translate_ollama_error",
]


class _Shape(BaseModel):
    """A wire shape: the fields the bot reads; Ollama adds others, which are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class OllamaChatRequest(_Shape):
    """The body of ``POST /api/chat``."""

    model: str
    messages: list[dict[str, str]]
    """``{"role", "content"}`` per message."""
    format: dict[str, Any] | None = None
    """The JSON schema the reply must follow (structured output); left out when ``None``."""
    options: dict[str, Any]
    stream: bool = False
    think: bool = False
    keep_alive: str


class OllamaMessage(_Shape):
    """The reply's message."""

    content: str | None = None


class OllamaChatReply(_Shape):
    """The body of a 2xx answer to ``POST /api/chat`` (``stream=False``)."""

    message: OllamaMessage
    done_reason: str | None = None
    """Why generation stopped: ``stop``, ``length`` (cut at ``num_predict``) …"""
    prompt_eval_count: TokenCount | None = None
    eval_count: TokenCount | None = None
    total_duration: int | None = Field(None, ge=0, le=2**63 - 1)
    """The call's time in ns (a Go ``int64``)."""


class OllamaTag(_Shape):
    """One pulled model of ``GET /api/tags``."""

    model: str | None = None


class OllamaTagsReply(_Shape):
    """The body of a 2xx answer to ``GET /api/tags``."""

    models: list[OllamaTag]


class OllamaErrorReply(_Shape):
    """Ollama's error body (4xx, 5xx)."""

    error: str


def ollama_options(options: RoleOptions) -> dict[str, Any]:
    """The ``options`` object of Ollama's ``/api/chat`` for a role (names as Ollama spells them)."""
    return {
        "temperature": options.temperature,
        "num_predict": options.num_predict,
        "num_ctx": options.num_ctx,
        "seed": options.seed,
    }


def is_transient_ollama_error(exc: BaseException) -> bool:
    """Whether an httpx error is worth retrying: unreachable, timeout, 5xx."""
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code >= 500
    return isinstance(exc, ConnectionError | httpx.TransportError | DeadlineExceeded)


DETAIL_MAX_CHARS = 200
"""How much of Ollama's error text a message keeps."""


def translate_ollama_error(exc: BaseException, *, model: str, host: str) -> ModelError:
    """Map an httpx exception, or a reply the bot does not read, to the :mod:`bot.errors` tree
    (the choke point). The message holds no form of the host URL's secrets (its password,
    secret query values), nor a piece of one: Ollama's text is redacted before it is cut to
    :data:`DETAIL_MAX_CHARS`."""
    view = read_url(host)
    mapped = _translated(exc, model=model, host=view.text, secrets=view.secrets)
    if view.secrets:
        mapped.args = (redact(str(mapped), view.secrets),)
    return mapped


def _error_text(response: httpx.Response) -> str:
    """What an error reply says: its ``error`` field, else its text."""
    try:
        return OllamaErrorReply.model_validate_json(response.content).error
    except ValidationError:
        return response.text


def _translated(exc: BaseException, *, model: str, host: str, secrets: Sequence[str]) -> ModelError:
    if isinstance(exc, ModelError):
        return exc
    if isinstance(exc, DeadlineExceeded):
        return ModelUnavailable(f"Ollama at {host} timed out: {exc}")
    if isinstance(exc, ReplyShapeError):
        if not exc.api_json:
            shown = log_value(exc.content_type[:60]) if exc.content_type else "no content type"
            return ModelOutputError(
                f"Ollama at {host} answered with {shown} that is not Ollama's JSON: is the "
                "host Ollama's own address?"
            )
        return ModelOutputError(
            f"Ollama at {host} sent a reply of another shape than Ollama's "
            f"({log_value(exc.detail[:200])})"
        )
    if isinstance(exc, RedirectRefused):
        return ModelRequestRejected(
            f"Ollama at {host} redirected the request to another origin (scheme, host or "
            "port), where the bot sends nothing: set the host to Ollama's own address"
        )
    if isinstance(exc, ReplyTooLarge):
        return ModelOutputError(
            f"Ollama at {host} sent a reply of more than {exc.max_bytes} bytes, more than the "
            "call asked for could hold: not read further"
        )
    if isinstance(exc, ReplyCompressed):
        return ModelOutputError(
            f"Ollama at {host} sent a compressed reply though asked for none: not read (its "
            "size once decoded is unknown)"
        )
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        detail = redacted_excerpt(_error_text(exc.response), secrets, max_chars=DETAIL_MAX_CHARS)
        if status == 404:
            return ModelNotFound(f"Ollama at {host} has no model {model!r} (404): {detail}")
        if status >= 500:
            return ModelUnavailable(f"Ollama at {host} answered {status}: {detail}")
        return ModelRequestRejected(f"Ollama at {host} rejected the request ({status}): {detail}")
    if isinstance(exc, httpx.TimeoutException):
        return ModelUnavailable(f"Ollama at {host} timed out: {type(exc).__name__}")
    if isinstance(exc, ConnectionError | httpx.TransportError):
        return ModelUnavailable(f"Ollama at {host} is unreachable: {type(exc).__name__}")
    if isinstance(exc, httpx.DecodingError):
        return ModelOutputError(f"Ollama at {host} sent a reply that cannot be decoded")
    if isinstance(exc, httpx.TooManyRedirects):
        return ModelRequestRejected(f"Ollama at {host} answered with redirects without end")
    if isinstance(exc, httpx.InvalidURL):
        return ModelRequestRejected(f"Ollama's address {host} is not a URL httpx can use")
    return ModelError(f"unexpected model failure: {type(exc).__name__}: {exc}")


class OllamaChatModel:
    """:class:`~bot.chat.ChatModel` over an Ollama server (native ``/api/chat``, over httpx).

    Args:
        host: Ollama base URL, e.g. ``http://127.0.0.1:11434``.
        model: model tag, e.g. ``qwen2.5-coder:1.5b``.
        timeout_s: limit for one request (seconds): httpx's per-operation timeout and a
            wall-clock deadline for the whole request.
        keep_alive: how long Ollama keeps the model loaded after the call (e.g. ``"30m"``).
        retry: transient-error retry policy.
    """

    def __init__(
        self,
        *,
        host: str,
        model: str,
        timeout_s: float,
        keep_alive: str = "30m",
        retry: RetryPolicy | None = None,
    ) -> None:
        self._host = host
        self._timeout_s = timeout_s
        self._model = model
        self._keep_alive = keep_alive
        self._retry = retry or RetryPolicy()
        self._http = _client(host, timeout_s)
        weakref.finalize(self, self._http.close)  # its connections close with the model

    @property
    def name(self) -> str:
        """The Ollama model tag."""
        return self._model

    def _post(self, request: OllamaChatRequest) -> OllamaChatReply:
        """One ``POST /api/chat``; an error status raises httpx's ``HTTPStatusError``."""
        response = self._http.post("/api/chat", json=request.model_dump(exclude_none=True))
        response.raise_for_status()
        return _read(response, OllamaChatReply)

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        options: RoleOptions,
        schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        """Call ``/api/chat`` once (plus transient retries). See :class:`~bot.chat.ChatModel`.

        Raises:
            ModelPromptTooLong: the reply's ``prompt_eval_count`` plus ``num_predict`` exceeds
                ``num_ctx`` (checked before ``done_reason``: a cut prompt explains a cut reply).
            ModelTruncated: ``done_reason == "length"``.
            ModelOutputError: the reply is not of :class:`OllamaChatReply`'s shape, is larger
                than any reply of ``num_predict`` tokens
                (:func:`~bot.clients.model_http.reply_max_bytes`) or came compressed.
            ModelError: the other faults (:func:`translate_ollama_error`).
        """
        request = OllamaChatRequest(
            model=self._model,
            messages=[{"role": m.role, "content": m.content} for m in messages],
            format=schema,
            options=ollama_options(options),
            keep_alive=self._keep_alive,
        )
        started = time.perf_counter()
        try:
            with reply_limit(reply_max_bytes(options.num_predict)):
                response = call_with_retries(
                    lambda: call_with_deadline(lambda: self._post(request), self._timeout_s),
                    policy=self._retry,
                    transient=is_transient_ollama_error,
                )
        except Exception as exc:
            raise translate_ollama_error(exc, model=self._model, host=self._host) from exc
        wall_ms = (time.perf_counter() - started) * 1000
        done_reason = response.done_reason or "stop"
        total_ns = response.total_duration
        prompt_tokens = response.prompt_eval_count or 0
        output_tokens = response.eval_count or 0
        duration_ms = total_ns / 1e6 if total_ns else wall_ms
        cut = prompt_tokens >= options.num_ctx
        check_prompt_fits(
            options,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            duration_ms=duration_ms,
            detail=f"Ollama cut the prompt to num_ctx={options.num_ctx} without saying so"
            if cut
            else "Ollama would shift the context during the reply",
        )
        if done_reason == "length":
            raise ModelTruncated(
                f"{self._model} stopped at num_predict={options.num_predict} tokens",
                prompt_tokens=prompt_tokens,
                output_tokens=output_tokens,
                duration_ms=duration_ms,
            )
        return ChatResult(
            text=response.message.content or "",
            done_reason=done_reason,
            model=self._model,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            duration_ms=duration_ms,
        )


def _client(host: str, timeout_s: float) -> httpx.Client:
    """The client of an Ollama host (its query goes with every request; user information in
    it is never sent: the settings refuse it)."""
    address, query = server_address(host)
    return httpx_client(address, params=query, timeout_s=timeout_s)


def _read(response: httpx.Response, shape: type[M]) -> M:
    """A 2xx reply's body read as ``shape``.

    Raises:
        ReplyShapeError: the body is not Ollama's JSON of that shape.
    """
    return read_reply(response.content, response.headers.get("content-type", ""), shape)


def ollama_models(host: str, *, timeout_s: float = 10.0) -> list[str]:
    """``GET {host}/api/tags``: the tags of the models pulled there (``qwen2.5-coder:1.5b``).
    One request, no retry: ``triage-bot doctor`` reports what it finds now.

    Raises:
        ModelError: Ollama is unreachable, answered an error
            (:class:`~bot.errors.ModelUnavailable` when it is down) or a reply of another
            shape than :class:`OllamaTagsReply`.
    """

    def tags() -> OllamaTagsReply:
        with _client(host, timeout_s) as client:
            response = client.get("/api/tags")
            response.raise_for_status()
            return _read(response, OllamaTagsReply)

    try:
        reply = call_with_deadline(tags, timeout_s)
    except Exception as exc:  # httpx raises many kinds; the translator sorts them
        raise translate_ollama_error(exc, model="(list)", host=host) from exc
    return [m.model for m in reply.models if m.model]
