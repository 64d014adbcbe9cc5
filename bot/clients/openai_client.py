"""The OpenAI-compatible backend of :class:`~bot.chat.ChatModel`, over the ``openai`` client.

One non-streaming ``POST {base_url}/chat/completions`` a call; what it sends and reads is in
docs/model-servers.md. A server that refuses the strict ``json_schema`` form gets the
``json_object`` form from then on. Replies are read through this module's pydantic shapes,
never the client's lenient parse (docs/design.md). The API key goes only into the
``Authorization`` header and is redacted from error text. Transient faults are retried here
(the client's own retries are off), each request under a wall-clock deadline of ``timeout_s``.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Sequence
from typing import Any, TypeVar

import openai
from pydantic import BaseModel, ConfigDict

from bot.chat import ChatMessage, ChatResult, RoleOptions, check_prompt_fits
from bot.clients.model_http import (
    ReplyShapeError,
    TokenCount,
    httpx2_client,
    read_reply,
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
from bot.retry import (
    DeadlineExceeded,
    RetryPolicy,
    call_with_deadline,
    call_with_retries,
    retry_after_s,
)
from bot.urls import read_url, redact, redacted_excerpt, shown_url

__all__ = [
    "NO_API_KEY",
    "CompletionReply",
    "ModelsReply",
    "OpenAIChatModel",
    "is_transient_openai_error",
    "openai_models",
    "openai_one_token",
    "openai_options",
    "rejects_schema_form",
    "response_formats",
    "server_wait_s",
    "translate_openai_error",
]

NO_API_KEY = "no-key"
"""What the client sends as the key when none is set: the ``openai`` client refuses to run
without one, and a server without keys ignores it."""

SCHEMA_NAME = "reply"
"""The ``json_schema.name`` of every structured-output request."""

_M = TypeVar("_M", bound=BaseModel)

DETAIL_MAX_CHARS = 200
"""How much of a server's error text a message keeps."""

_RETRIED_STATUSES = (408, 429)

_ONE_TOKEN = RoleOptions(temperature=0.0, num_predict=1, num_ctx=4096)
_NO_RETRY = RetryPolicy(attempts=1)


class _Shape(BaseModel):
    """Fields the bot reads; servers add others, which are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class ReplyMessage(_Shape):
    content: str | None = None
    """The reply's text; ``None`` when the server sent none."""


class ReplyChoice(_Shape):
    message: ReplyMessage
    finish_reason: str | None = None
    """Why generation stopped: ``stop``, ``length`` (cut at ``max_tokens``) …"""


class PromptTokensDetails(_Shape):
    cached_tokens: TokenCount | None = None
    """Of the prompt, the tokens taken from the server's prompt cache."""


class ReplyUsage(_Shape):
    prompt_tokens: TokenCount = 0
    completion_tokens: TokenCount = 0
    prompt_tokens_details: PromptTokensDetails | None = None


class CompletionReply(_Shape):
    """A 2xx body of ``POST /chat/completions``."""

    choices: list[ReplyChoice]
    usage: ReplyUsage | None = None


class ServedModel(_Shape):
    id: str


class ModelsReply(_Shape):
    """A 2xx body of ``GET /models``."""

    data: list[ServedModel]


def openai_options(options: RoleOptions) -> dict[str, Any]:
    return {
        "temperature": options.temperature,
        "max_tokens": options.num_predict,
        "seed": options.seed,
    }


def response_formats(schema: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The strict ``json_schema`` form, then the ``json_object`` form llama.cpp's servers read."""
    strict = {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "schema": schema, "strict": True},
    }
    return strict, {"type": "json_object", "schema": schema}


def _status(exc: BaseException) -> int | None:
    return exc.status_code if isinstance(exc, openai.APIStatusError) else None


def is_transient_openai_error(exc: BaseException) -> bool:
    """Worth another try: unreachable, a timeout, 408, 429 or 5xx."""
    if isinstance(exc, openai.APIConnectionError | DeadlineExceeded):
        return True
    status = _status(exc)
    return status is not None and (status in _RETRIED_STATUSES or status >= 500)


def server_wait_s(exc: BaseException, *, max_s: float, now_s: float | None = None) -> float | None:
    """The wait ``Retry-After`` asks for (seconds, at most ``max_s``), or ``None``."""
    if not isinstance(exc, openai.APIStatusError):
        return None
    return retry_after_s(exc.response.headers.get("retry-after"), max_s=max_s, now_s=now_s)


def rejects_schema_form(exc: BaseException) -> bool:
    """A 400, 422 or 500 whose text names the response format (llama-cpp-python's 500s)."""
    if _status(exc) not in (400, 422, 500):
        return False
    text = str(exc).lower()
    return "response_format" in text or "json_schema" in text


def translate_openai_error(
    exc: BaseException, *, model: str, base_url: str, api_key: str | None = None
) -> ModelError:
    """Map an ``openai`` error into :mod:`bot.errors` (the choke point).

    The message holds no piece of ``api_key`` or the URL's secrets: text is redacted, then cut.
    """
    view = read_url(base_url)
    secrets = [*([api_key] if api_key else []), *view.secrets]
    mapped = _translated(exc, model=model, where=view.text, secrets=secrets)
    if secrets:
        mapped.args = (redact(str(mapped), secrets),)
    return mapped


def _translated(
    exc: BaseException, *, model: str, where: str, secrets: Sequence[str]
) -> ModelError:
    if isinstance(exc, ModelError):
        return exc
    fault = transport_fault(
        exc, server=f"the server at {where}", fix="set the base URL to the server's own"
    )
    if fault is not None:
        return fault
    if isinstance(exc, ReplyShapeError):
        if not exc.api_json:
            shown = log_value(exc.content_type[:60]) if exc.content_type else "no content type"
            return ModelOutputError(
                f"the server at {where} answered 200 with {shown} that is not the API's JSON: "
                "is the base URL the API's own, up to and including /v1?"
            )
        return ModelOutputError(
            f"the server at {where} sent a reply of another shape than the API's "
            f"({log_value(exc.detail[:200])})"
        )
    if isinstance(exc, openai.APITimeoutError):
        return ModelUnavailable(f"the server at {where} timed out")
    if isinstance(exc, openai.APIConnectionError):
        cause = type(exc.__cause__).__name__ if exc.__cause__ else "connection failed"
        return ModelUnavailable(f"the server at {where} is unreachable: {cause}")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = redacted_excerpt(str(exc.message), secrets, max_chars=DETAIL_MAX_CHARS)
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return ModelRequestRejected(
                f"the server at {where} refused the API key ({status}): set "
                f"TRIAGE_OPENAI_API_KEY to a key it accepts: {detail}"
            )
        if isinstance(exc, openai.NotFoundError):
            return ModelNotFound(
                f"the server at {where} has no model {model!r} or no chat-completions endpoint "
                f"(404; the base URL usually ends in /v1): {detail}"
            )
        if status == 429 or status >= 500:
            return ModelUnavailable(f"the server at {where} answered {status}: {detail}")
        return ModelRequestRejected(f"the server at {where} rejected the request ({status}): "
                                    f"{detail}")  # fmt: skip
    if isinstance(exc, openai.APIResponseValidationError):
        return ModelOutputError(f"the server at {where} sent a response of another shape")
    if isinstance(exc, openai.LengthFinishReasonError):
        return ModelTruncated(f"{model} stopped at its output token limit")
    if isinstance(exc, openai.ContentFilterFinishReasonError):
        return ModelOutputError(f"the server at {where} withheld the reply (content filter)")
    if isinstance(exc, openai.OpenAIError):
        return ModelError(f"the openai client failed: {type(exc).__name__}: {exc}")
    return ModelError(f"unexpected model failure: {type(exc).__name__}: {exc}")


class OpenAIChatModel:
    """:class:`~bot.chat.ChatModel` over an OpenAI-compatible server.

    Args:
        base_url: up to and including ``/v1``; its query goes with every request.
        model: the id the server serves the model under.
        api_key: ``None`` when the server has none.
        timeout_s: seconds, per network operation and for the whole request.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float,
        retry: RetryPolicy | None = None,
    ) -> None:
        self._base_url = base_url
        self._model = model
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._retry = retry or RetryPolicy()
        self._schema_form = 0  # index into response_formats(): 1 once the server refused 0
        address, query = server_address(base_url)
        self._client = openai.OpenAI(
            base_url=address,
            api_key=api_key or NO_API_KEY,
            default_query=query or None,
            timeout=timeout_s,
            max_retries=0,
            http_client=httpx2_client(address, timeout_s=timeout_s),
        )
        weakref.finalize(self, self._client.close)  # its connections close with the model

    @property
    def name(self) -> str:
        return self._model

    def models(self) -> list[str]:
        """The ids the server serves (``GET /models``): one request, no retry; raises ModelError."""
        try:
            raw = call_with_deadline(self._client.models.with_raw_response.list, self._timeout_s)
            return [m.id for m in _read(raw, ModelsReply).data]
        except Exception as exc:  # the translator sorts them
            raise self._translate(exc) from exc

    def _translate(self, exc: BaseException) -> ModelError:
        return translate_openai_error(
            exc, model=self._model, base_url=self._base_url, api_key=self._api_key
        )

    def _create(
        self, wire: Any, options: RoleOptions, fmt: Any, *, strict: bool
    ) -> CompletionReply:
        """One request with retries and deadline; a refused ``strict`` form is not retried."""
        fields = openai_options(options)

        def transient(exc: BaseException) -> bool:
            return is_transient_openai_error(exc) and not (strict and rejects_schema_form(exc))

        response = call_with_retries(
            lambda: call_with_deadline(
                lambda: self._client.chat.completions.with_raw_response.create(
                    model=self._model,
                    messages=wire,
                    stream=False,
                    temperature=fields["temperature"],
                    max_tokens=fields["max_tokens"],
                    seed=fields["seed"],
                    response_format=openai.omit if fmt is None else fmt,
                ),
                self._timeout_s,
            ),
            policy=self._retry,
            transient=transient,
            server_wait_s=lambda exc: server_wait_s(exc, max_s=self._retry.wait_max_s),
        )
        return _read(response, CompletionReply)

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        options: RoleOptions,
        schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        """One chat completion, plus transient retries and the schema fallback once.

        Raises:
            ModelPromptTooLong: prompt plus ``num_predict`` exceeds ``num_ctx`` (checked first).
            ModelTruncated: ``finish_reason == "length"``.
            ModelOutputError: no choice; a body not the API's JSON shape, too large or compressed.
            ModelError: any other fault.
        """
        wire = [{"role": m.role, "content": m.content} for m in messages]
        forms = response_formats(schema) if schema is not None else None
        started = time.perf_counter()
        try:
            with reply_limit(reply_max_bytes(options.num_predict)):
                strict = forms is not None and self._schema_form == 0
                try:
                    fmt = forms[self._schema_form] if forms else None
                    response = self._create(wire, options, fmt, strict=strict)
                except openai.APIStatusError as exc:
                    if not (forms and strict and rejects_schema_form(exc)):
                        raise
                    self._schema_form = 1
                    response = self._create(wire, options, forms[1], strict=False)
        except Exception as exc:
            raise self._translate(exc) from exc
        return self._result(response, options, (time.perf_counter() - started) * 1000)

    def _result(
        self, response: CompletionReply, options: RoleOptions, wall_ms: float
    ) -> ChatResult:
        usage = response.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        output_tokens = usage.completion_tokens if usage else 0
        details = usage.prompt_tokens_details if usage else None
        cached = details.cached_tokens if details else None
        evaluated = None if cached is None else max(0, prompt_tokens - cached)
        check_prompt_fits(
            options,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            duration_ms=wall_ms,
            prompt_eval_tokens=evaluated,
        )
        if not response.choices:
            raise ModelOutputError(
                f"the server at {shown_url(self._base_url)} sent no choice",
                prompt_tokens=prompt_tokens,
                output_tokens=output_tokens,
                duration_ms=wall_ms,
            )
        choice = response.choices[0]
        if choice.finish_reason == "length":
            raise ModelTruncated(
                f"{self._model} stopped at max_tokens={options.num_predict} tokens",
                prompt_tokens=prompt_tokens,
                output_tokens=output_tokens,
                duration_ms=wall_ms,
                prompt_eval_tokens=evaluated,
            )
        return ChatResult(
            text=choice.message.content or "",
            done_reason=choice.finish_reason or "stop",
            model=self._model,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            duration_ms=wall_ms,
            prompt_eval_tokens=evaluated,
        )


def _read(raw: Any, shape: type[_M]) -> _M:
    """A raw 2xx answer's body read as ``shape``; raises :class:`ReplyShapeError`."""
    reply = raw.http_response
    return read_reply(reply.content, reply.headers.get("content-type", ""), shape)


def openai_models(base_url: str, api_key: str | None, *, timeout_s: float = 10.0) -> list[str]:
    """The ids a server serves: one request, no retry; raises ModelError."""
    server = OpenAIChatModel(base_url=base_url, model="(list)", api_key=api_key,
                             timeout_s=timeout_s, retry=_NO_RETRY)  # fmt: skip
    return server.models()


def openai_one_token(
    base_url: str, api_key: str | None, model: str, *, timeout_s: float = 60.0
) -> float:
    """Ask ``model`` for one token, no retry; returns the wall time in ms.

    Raises:
        ModelError: the model is not served, or the server errs or times out.
    """
    server = OpenAIChatModel(base_url=base_url, model=model, api_key=api_key,
                             timeout_s=timeout_s, retry=_NO_RETRY)  # fmt: skip
    started = time.perf_counter()
    with contextlib.suppress(ModelTruncated):
        server.chat([ChatMessage("user", "Say OK.")], options=_ONE_TOKEN)
    return (time.perf_counter() - started) * 1000
