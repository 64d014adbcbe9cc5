"""The Ollama backend of :class:`~bot.chat.ChatModel`: the ``ollama`` package's client.

:class:`OllamaChatModel` talks to Ollama's native ``/api/chat``; it is chosen when an Ollama host
is configured (:data:`bot.factory.BACKENDS`). Every call sends ``stream=False``, ``think=False``,
the role's ``options`` (``temperature``, ``num_predict``, ``num_ctx``, ``seed``) and, when given,
a JSON schema as ``format`` (structured output). ``done_reason == "length"`` raises
:class:`~bot.errors.ModelTruncated`; a prompt plus ``num_predict`` over ``num_ctx`` raises
:class:`~bot.errors.ModelPromptTooLong` (Ollama cuts such a prompt without saying so:
:func:`bot.chat.check_prompt_fits`).

The package's httpx client carries :func:`bot.clients.model_http.httpx_guards`: no request to
another origin than the host's, a reply read no further than
:func:`~bot.clients.model_http.reply_max_bytes` of the role's ``num_predict`` nor past the
request's deadline, none read compressed; and no ``Authorization`` (the package adds one from
``OLLAMA_API_KEY``). A reply the package's models (``ChatResponse``, ``ListResponse``) refuse,
or whose token counts or duration are out of range (checked after the call), is a
:class:`~bot.errors.ModelOutputError` naming the field.

:func:`translate_ollama_error` is the one place where ollama, httpx and pydantic errors become
:mod:`bot.errors` classes; messages show the host as :func:`bot.urls.shown_url` does.
Each request also runs against a wall-clock deadline of ``timeout_s``
(:func:`bot.retry.call_with_deadline`; httpx's timeout is per network operation), and transient
faults (unreachable, timeouts, 5xx) are retried with tenacity (:mod:`bot.retry`) before they
are translated.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence
from contextlib import closing
from typing import Any

import httpx
import ollama
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.chat import ChatMessage, ChatResult, RoleOptions, check_prompt_fits
from bot.clients.model_http import (
    ReplyShapeError,
    TokenCount,
    httpx_guards,
    reply_limit,
    reply_max_bytes,
    server_address,
    transport_fault,
)
from bot.errors import (
    ModelError,
    ModelNotFound,
    ModelOutputError,
    ModelRequestRejected,
    ModelTruncated,
    ModelUnavailable,
)
from bot.neutralise import log_value
from bot.retry import DeadlineExceeded, RetryPolicy, call_with_deadline, call_with_retries
from bot.urls import read_url, redact, redacted_excerpt

__all__ = [
    "OllamaChatModel",
    "is_transient_ollama_error",
    "ollama_models",
    "ollama_options",
    "translate_ollama_error",
]


class _ReplyNumbers(BaseModel):
    """The numbers of a ``ChatResponse`` the bot stores, in range (the package takes any
    integer)."""

    model_config = ConfigDict(from_attributes=True)

    prompt_eval_count: TokenCount | None = None
    eval_count: TokenCount | None = None
    total_duration: int | None = Field(None, ge=0, le=2**63 - 1)
    """The call's time in ns (a Go ``int64``)."""


class OllamaErrorReply(BaseModel):
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


def _answered(exc: BaseException) -> BaseException:
    """httpx's status error under an ollama one, when there is one: the package raises
    ``ResponseError`` while handling it, and ``AttributeError`` when an error body is JSON but
    not an object (its ``ResponseError`` calls ``.get`` on it)."""
    if isinstance(exc, ollama.ResponseError | AttributeError) and isinstance(
        exc.__context__, httpx.HTTPStatusError
    ):
        return exc.__context__
    return exc


def is_transient_ollama_error(exc: BaseException) -> bool:
    """Whether an ollama/httpx error is worth retrying: unreachable, timeout, 5xx."""
    exc = _answered(exc)
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code >= 500
    if isinstance(exc, ollama.ResponseError):
        return exc.status_code >= 500
    return isinstance(exc, ConnectionError | httpx.TransportError | DeadlineExceeded)


DETAIL_MAX_CHARS = 200
"""How much of Ollama's error text a message keeps."""


def translate_ollama_error(exc: BaseException, *, model: str, host: str) -> ModelError:
    """Map an ollama, httpx or pydantic exception (a reply the bot does not read) to the
    :mod:`bot.errors` tree (the choke point). The message holds no form of the host URL's
    secrets (its password, secret query values), nor a piece of one: Ollama's text is redacted
    before it is cut to :data:`DETAIL_MAX_CHARS`."""
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


def _by_status(status: int, detail: str, *, model: str, host: str) -> ModelError:
    if status == 404:
        return ModelNotFound(f"Ollama at {host} has no model {model!r} (404): {detail}")
    if status >= 500:
        return ModelUnavailable(f"Ollama at {host} answered {status}: {detail}")
    return ModelRequestRejected(f"Ollama at {host} rejected the request ({status}): {detail}")


def _where(exc: ValidationError) -> str:
    """Where a reply departs from its model, in pydantic's words (field names and list
    positions, never the reply's values), up to three places."""
    errors = exc.errors(include_url=False, include_input=False, include_context=False)
    return "; ".join(
        f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}" for error in errors[:3]
    )


def _not_json(host: str, what: str) -> ModelOutputError:
    return ModelOutputError(
        f"Ollama at {host} sent a reply that is not Ollama's JSON ({what}): is the host "
        "Ollama's own address?"
    )


def _translated(exc: BaseException, *, model: str, host: str, secrets: Sequence[str]) -> ModelError:
    exc = _answered(exc)
    if isinstance(exc, ModelError):
        return exc
    fault = transport_fault(
        exc, server=f"Ollama at {host}", fix="set the host to Ollama's own address"
    )
    if fault is not None:
        return fault
    if isinstance(exc, ValidationError):
        return ModelOutputError(
            f"Ollama at {host} sent a reply of another shape than Ollama's "
            f"({log_value(_where(exc)[:300])})"
        )
    if isinstance(exc, TypeError):  # the package's cls(**body) of a list, a string, null …
        return _not_json(host, "not a JSON object")
    if isinstance(exc, ValueError | RecursionError):  # not JSON, not UTF-8, nested too deep
        return _not_json(host, "not JSON")
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
    if isinstance(exc, httpx.HTTPStatusError):
        detail = redacted_excerpt(_error_text(exc.response), secrets, max_chars=DETAIL_MAX_CHARS)
        return _by_status(exc.response.status_code, detail, model=model, host=host)
    if isinstance(exc, ollama.ResponseError):  # without a status error: an error in a stream
        detail = redacted_excerpt(str(exc.error), secrets, max_chars=DETAIL_MAX_CHARS)
        return _by_status(exc.status_code, detail, model=model, host=host)
    if isinstance(exc, ollama.RequestError):
        return ModelRequestRejected(f"Ollama's client refused the request: {exc.error}")
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


def _no_credential(request: httpx.Request) -> None:
    """A request hook: no ``Authorization`` (the package adds one from ``OLLAMA_API_KEY``)."""
    request.headers.pop("authorization", None)


def _client(host: str, timeout_s: float) -> ollama.Client:
    """The ``ollama`` client of a host, guarded (see the module doc); the host's query goes
    with every request (user information in it is never sent: the settings refuse it)."""
    address, query = server_address(host)  # the scheme lower-cased, as the package reads it
    guards = httpx_guards(address)
    guards["event_hooks"]["request"].append(_no_credential)
    return ollama.Client(host=address, timeout=timeout_s, params=query, **guards)


class OllamaChatModel:
    """:class:`~bot.chat.ChatModel` over an Ollama server (``ollama.Client``, native ``/api/chat``).

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
        self._client = _client(host, timeout_s)
        weakref.finalize(self, self._client.close)  # its connections close with the model

    @property
    def name(self) -> str:
        """The Ollama model tag."""
        return self._model

    def _chat_once(
        self, messages: list[dict[str, str]], options: RoleOptions, schema: dict[str, Any] | None
    ) -> ollama.ChatResponse:
        """One ``POST /api/chat``, its numbers checked (:class:`_ReplyNumbers`)."""
        response = self._client.chat(
            model=self._model,
            messages=messages,
            format=schema,
            options=ollama_options(options),
            stream=False,
            think=False,
            keep_alive=self._keep_alive,
        )
        _ReplyNumbers.model_validate(response)
        return response

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
            ModelOutputError: the reply is not of Ollama's shape, is larger than any reply of
                ``num_predict`` tokens (:func:`~bot.clients.model_http.reply_max_bytes`) or
                came compressed.
            ModelError: the other faults (:func:`translate_ollama_error`).
        """
        wire = [{"role": m.role, "content": m.content} for m in messages]
        started = time.perf_counter()
        try:
            with reply_limit(reply_max_bytes(options.num_predict)):
                response = call_with_retries(
                    lambda: call_with_deadline(
                        lambda: self._chat_once(wire, options, schema), self._timeout_s
                    ),
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


def ollama_models(host: str, *, timeout_s: float = 10.0) -> list[str]:
    """``GET {host}/api/tags``: the tags of the models pulled there (``qwen2.5-coder:1.5b``).
    One request, no retry: ``triage-bot doctor`` reports what it finds now.

    Raises:
        ModelError: Ollama is unreachable, answered an error
            (:class:`~bot.errors.ModelUnavailable` when it is down) or a reply of another
            shape than Ollama's.
    """

    def tags() -> ollama.ListResponse:
        with closing(_client(host, timeout_s)) as client:
            return client.list()

    try:
        reply = call_with_deadline(tags, timeout_s)
    except Exception as exc:  # ollama, httpx and pydantic raise many kinds; the translator sorts
        raise translate_ollama_error(exc, model="(list)", host=host) from exc
    return [m.model for m in reply.models if m.model]
