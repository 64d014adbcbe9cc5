"""The Ollama backend of :class:`~bot.chat.ChatModel`, over the ``ollama`` package.

Calls ``/api/chat`` with ``stream=False``, ``think=False``, the role's options and the schema
as ``format``. The client carries :func:`~bot.clients.model_http.httpx_guards` and sends no
``Authorization``; why is in docs/design.md, "A model server is untrusted too". Each request
has a wall-clock deadline of ``timeout_s``, and transient faults are retried before
:func:`translate_ollama_error` maps them.
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
    """The ``ChatResponse`` numbers the bot stores, checked in range (the package takes any)."""

    model_config = ConfigDict(from_attributes=True)

    prompt_eval_count: TokenCount | None = None
    eval_count: TokenCount | None = None
    total_duration: int | None = Field(None, ge=0, le=2**63 - 1)
    """The call's time in ns (a Go ``int64``)."""


class OllamaErrorReply(BaseModel):
    error: str


def ollama_options(options: RoleOptions) -> dict[str, Any]:
    return {
        "temperature": options.temperature,
        "num_predict": options.num_predict,
        "num_ctx": options.num_ctx,
        "seed": options.seed,
    }


def _answered(exc: BaseException) -> BaseException:
    """The httpx status error under an ollama ``ResponseError`` or ``AttributeError``, if any."""
    if isinstance(exc, ollama.ResponseError | AttributeError) and isinstance(
        exc.__context__, httpx.HTTPStatusError
    ):
        return exc.__context__
    return exc


def is_transient_ollama_error(exc: BaseException) -> bool:
    """Worth retrying: unreachable, a timeout or a 5xx."""
    exc = _answered(exc)
    if isinstance(exc, httpx.HTTPStatusError):
        return exc.response.status_code >= 500
    if isinstance(exc, ollama.ResponseError):
        return exc.status_code >= 500
    return isinstance(exc, ConnectionError | httpx.TransportError | DeadlineExceeded)


DETAIL_MAX_CHARS = 200
"""How much of Ollama's error text a message keeps."""


def translate_ollama_error(exc: BaseException, *, model: str, host: str) -> ModelError:
    """Map an ollama, httpx or pydantic error into :mod:`bot.errors` (the choke point).

    The message holds no piece of the host URL's secrets: Ollama's text is redacted, then cut.
    """
    view = read_url(host)
    mapped = _translated(exc, model=model, host=view.text, secrets=view.secrets)
    if view.secrets:
        mapped.args = (redact(str(mapped), view.secrets),)
    return mapped


def _error_text(response: httpx.Response) -> str:
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
    """Up to three places a reply departs from its model, never its values."""
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
    request.headers.pop("authorization", None)


def _client(host: str, timeout_s: float) -> ollama.Client:
    """The guarded client of ``host``; the host's query goes with every request."""
    address, query = server_address(host)  # the scheme lower-cased, as the package reads it
    guards = httpx_guards(address)
    guards["event_hooks"]["request"].append(_no_credential)
    return ollama.Client(host=address, timeout=timeout_s, params=query, **guards)


class OllamaChatModel:
    """:class:`~bot.chat.ChatModel` over an Ollama server.

    Args:
        timeout_s: seconds, per network operation and for the whole request.
        keep_alive: how long Ollama keeps the model loaded after a call (``"30m"``).
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
        return self._model

    def _chat_once(
        self, messages: list[dict[str, str]], options: RoleOptions, schema: dict[str, Any] | None
    ) -> ollama.ChatResponse:
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
        """Call ``/api/chat`` once, plus transient retries.

        Raises:
            ModelPromptTooLong: prompt tokens plus ``num_predict`` exceed ``num_ctx`` (Ollama cuts
                such a prompt silently); checked first, since a cut prompt explains a cut reply.
            ModelTruncated: ``done_reason == "length"``.
            ModelOutputError: a reply not of Ollama's shape, out of range, too large or compressed.
            ModelError: any other fault.
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
    """The tags pulled at ``host`` (``GET /api/tags``): one request, no retry.

    Raises:
        ModelError: unreachable (``ModelUnavailable``), an error answer, or another shape.
    """

    def tags() -> ollama.ListResponse:
        with closing(_client(host, timeout_s)) as client:
            return client.list()

    try:
        reply = call_with_deadline(tags, timeout_s)
    except Exception as exc:  # ollama, httpx and pydantic raise many kinds; the translator sorts
        raise translate_ollama_error(exc, model="(list)", host=host) from exc
    return [m.model for m in reply.models if m.model]
