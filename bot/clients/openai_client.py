"""The OpenAI-compatible backend of :class:`~bot.chat.ChatModel`: any server that speaks the
chat-completions API (llama.cpp's ``llama-server``, llama-cpp-python's server, vLLM, LM Studio,
LocalAI, Ollama's ``/v1``), over the official ``openai`` client.

Every call is one non-streaming ``POST {base_url}/chat/completions`` with the role's options as
that API names them (``temperature``, ``max_tokens`` = ``num_predict``, ``seed``). The context
window is the server's, set where the server starts; the role's ``num_ctx`` still bounds what
the bot sends (:func:`bot.chat.check_prompt_fits`, one rule for every backend).

Structured output goes as ``response_format`` ``{"type": "json_schema", "json_schema":
{"name", "schema", "strict": true}}``, the API's own form. A server that refuses that form
(:func:`rejects_schema_form`) gets the same schema in the form llama.cpp's servers read,
``{"type": "json_object", "schema": …}``, at once and for the rest of the model object's life:
llama-cpp-python's ``llama_cpp.server`` accepts only that one (its request model allows
``text`` and ``json_object``; it answers ``json_schema`` with a 500 naming the field), while
``llama-server``, vLLM, LM Studio and Ollama take the strict form.

Every reply is read through this module's own pydantic shape (:class:`CompletionReply`,
:class:`ModelsReply`, :func:`bot.clients.model_http.read_reply`), never the client's lenient
parse: a reply of another shape is a :class:`~bot.errors.ModelOutputError` that says where it
departs from the shape. ``finish_reason == "length"`` raises
:class:`~bot.errors.ModelTruncated`: a truncated reply is an error, never a result. The usage
the server reports (``prompt_tokens``, ``completion_tokens``, and
``prompt_tokens_details.cached_tokens`` where it says what came from its prompt cache) travels
with the result; the API reports no model time, so a call's time is the request's wall time.

The API key is optional (a local server usually has none; the client then sends the placeholder
:data:`NO_API_KEY`, as these servers' documentation does). It goes only into the
``Authorization`` header: never into a message, and an error text that echoes it has it
replaced (:func:`bot.urls.redact`). Messages name the server as
:func:`bot.urls.shown_url` shows it.

The client talks through :func:`bot.clients.model_http.httpx2_client`: it sends nothing to
another origin than the base URL's (a redirect there is refused); a reply may hold
:func:`~bot.clients.model_http.reply_max_bytes` of the role's ``num_predict`` and is read no
further than that, nor past the request's deadline; a compressed one is not read.

This module is the one place where ``openai`` errors become :mod:`bot.errors` classes
(:func:`translate_openai_error`). Transient faults (unreachable, timeouts, 408, 429, 5xx) are
retried with tenacity (:mod:`bot.retry`), waiting what a ``Retry-After`` header asks (bounded
by the policy's longest wait); the client's own retries are off. Each request also runs against
a wall-clock deadline of ``timeout_s`` (:func:`bot.retry.call_with_deadline`).
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
    """A reply's shape: the fields the bot reads; servers add others, which are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class ReplyMessage(_Shape):
    """A choice's message."""

    content: str | None = None
    """The reply's text; ``None`` when the server sent none."""


class ReplyChoice(_Shape):
    """One choice of a chat completion."""

    message: ReplyMessage
    finish_reason: str | None = None
    """Why generation stopped: ``stop``, ``length`` (cut at ``max_tokens``) …"""


class PromptTokensDetails(_Shape):
    """What the server says of the prompt's tokens."""

    cached_tokens: TokenCount | None = None
    """Of the prompt, the tokens taken from the server's prompt cache."""


class ReplyUsage(_Shape):
    """The tokens a call cost, as the server reports them."""

    prompt_tokens: TokenCount = 0
    completion_tokens: TokenCount = 0
    prompt_tokens_details: PromptTokensDetails | None = None


class CompletionReply(_Shape):
    """The body of a 2xx answer to ``POST /chat/completions``."""

    choices: list[ReplyChoice]
    usage: ReplyUsage | None = None


class ServedModel(_Shape):
    """One entry of ``GET /models``."""

    id: str


class ModelsReply(_Shape):
    """The body of a 2xx answer to ``GET /models``."""

    data: list[ServedModel]


def openai_options(options: RoleOptions) -> dict[str, Any]:
    """The role's options as chat-completions request fields."""
    return {
        "temperature": options.temperature,
        "max_tokens": options.num_predict,
        "seed": options.seed,
    }


def response_formats(schema: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``response_format`` for a JSON schema: the strict ``json_schema`` form first, and the
    ``json_object`` form with the schema that llama.cpp's servers read (the fallback)."""
    strict = {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "schema": schema, "strict": True},
    }
    return strict, {"type": "json_object", "schema": schema}


def _status(exc: BaseException) -> int | None:
    return exc.status_code if isinstance(exc, openai.APIStatusError) else None


def is_transient_openai_error(exc: BaseException) -> bool:
    """Whether an error is worth another try: unreachable, a timeout, 408, 429 or 5xx."""
    if isinstance(exc, openai.APIConnectionError | DeadlineExceeded):
        return True
    status = _status(exc)
    return status is not None and (status in _RETRIED_STATUSES or status >= 500)


def server_wait_s(exc: BaseException, *, max_s: float, now_s: float | None = None) -> float | None:
    """The wait (seconds, at most ``max_s``) the ``Retry-After`` header of the error's
    response asks for (:func:`bot.retry.retry_after_s`, ``now_s`` for a date); ``None`` when
    the error has no response or the header is neither form (the back-off applies)."""
    if not isinstance(exc, openai.APIStatusError):
        return None
    return retry_after_s(exc.response.headers.get("retry-after"), max_s=max_s, now_s=now_s)


def rejects_schema_form(exc: BaseException) -> bool:
    """Whether an answer to a request in the strict ``json_schema`` form refuses that form: a
    400, 422 or 500 (llama-cpp-python's server turns its request validation errors into 500)
    whose text names the response format."""
    if _status(exc) not in (400, 422, 500):
        return False
    text = str(exc).lower()
    return "response_format" in text or "json_schema" in text


def translate_openai_error(
    exc: BaseException, *, model: str, base_url: str, api_key: str | None = None
) -> ModelError:
    """Map an ``openai`` exception to the :mod:`bot.errors` tree (the choke point); the
    message names the server as :func:`~bot.urls.shown_url` shows it and holds no form
    of ``api_key`` nor of the base URL's secrets (nor a piece of one: the server's text is
    redacted before it is cut to :data:`DETAIL_MAX_CHARS`)."""
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
    """:class:`~bot.chat.ChatModel` over an OpenAI-compatible server (``openai.OpenAI``).

    Args:
        base_url: the API's base URL, up to and including ``/v1``
            (``http://127.0.0.1:8080/v1``); its query, if any, goes with every request, and
            user information in it is never sent (the settings refuse it).
        model: the model name the server serves (its ``/v1/models`` id).
        api_key: the server's API key, or ``None`` when it has none.
        timeout_s: limit for one request (seconds): the client's timeout and a wall-clock
            deadline for the whole request.
        retry: transient-error retry policy.
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
        """The model name as the server serves it."""
        return self._model

    def models(self) -> list[str]:
        """``GET {base_url}/models``: the ids of the models the server serves (one request, no
        retry: the doctor reports what it finds now).

        Raises:
            ModelError: the server is unreachable or answered an error.
        """
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
        """One request (``fmt``: a ``response_format`` or ``None``) with retries and deadline;
        a refusal of the ``strict`` form is not retried."""
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
        """One chat completion (plus transient retries, and the schema fallback once). See
        :class:`~bot.chat.ChatModel`.

        Raises:
            ModelPromptTooLong: the reported prompt tokens plus ``num_predict`` exceed
                ``num_ctx`` (checked before ``finish_reason``).
            ModelTruncated: ``finish_reason == "length"``.
            ModelOutputError: the server sent no choice, a 2xx body that is not the API's
                JSON (the base URL points at a web page), one of another shape than
                :class:`CompletionReply`, a reply larger than any of ``num_predict`` tokens
                (:func:`~bot.clients.model_http.reply_max_bytes`) or a compressed one.
            ModelError: the other faults (:func:`translate_openai_error`).
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
    """A 2xx ``with_raw_response`` answer (the client's ``LegacyAPIResponse``, which it does not
    export) with its body read as ``shape``.

    Raises:
        ReplyShapeError: the body is not the API's JSON of that shape.
    """
    reply = raw.http_response
    return read_reply(reply.content, reply.headers.get("content-type", ""), shape)


def openai_models(base_url: str, api_key: str | None, *, timeout_s: float = 10.0) -> list[str]:
    """``GET {base_url}/models``: the ids of the models an OpenAI-compatible server serves. One
    request, no retry: ``triage-bot doctor`` reports what it finds now.

    Raises:
        ModelError: the server is unreachable, refuses the key or answered an error.
    """
    server = OpenAIChatModel(base_url=base_url, model="(list)", api_key=api_key,
                             timeout_s=timeout_s, retry=_NO_RETRY)  # fmt: skip
    return server.models()


def openai_one_token(
    base_url: str, api_key: str | None, model: str, *, timeout_s: float = 60.0
) -> float:
    """One chat call that asks ``model`` for one token (the server loads it and generates),
    no retry; a reply cut at that token is the expected outcome.

    Returns:
        The call's wall time in ms.

    Raises:
        ModelError: the call failed (the model is not served, the server errs or times out).
    """
    server = OpenAIChatModel(base_url=base_url, model=model, api_key=api_key,
                             timeout_s=timeout_s, retry=_NO_RETRY)  # fmt: skip
    started = time.perf_counter()
    with contextlib.suppress(ModelTruncated):
        server.chat([ChatMessage("user", "Say OK.")], options=_ONE_TOKEN)
    return (time.perf_counter() - started) * 1000
