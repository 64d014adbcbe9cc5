"""Every upstream error class is translated into the BotError tree at its client's choke point.

A library upgrade that adds an exception class fails `test_*_classes_are_all_known` until the
class is mapped here and in the client.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from urllib.parse import quote

import httpx
import httpx2
import ollama
import openai
import pytest
import requests
from github import GithubException
from hypothesis import given, settings
from hypothesis import strategies as st
from openai import _exceptions as openai_exceptions
from openai.types.chat import ChatCompletion

from bot.clients import model_http
from bot.clients.github_client import translate_github_error
from bot.clients.model_http import (
    RedirectRefused,
    ReplyCompressed,
    ReplyShapeError,
    ReplyTooLarge,
)
from bot.clients.ollama_client import is_transient_ollama_error, translate_ollama_error
from bot.clients.openai_client import is_transient_openai_error, translate_openai_error
from bot.errors import (
    BotError,
    GitHubAuthError,
    GitHubError,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubUnavailable,
    ModelError,
    ModelNotFound,
    ModelOutputError,
    ModelRequestRejected,
    ModelTruncated,
    ModelUnavailable,
)

GH = sys.modules["github.GithubException"]

GITHUB_CLASSES: dict[str, tuple[int, type[GitHubError]]] = {
    "GithubException": (500, GitHubUnavailable),
    "BadCredentialsException": (401, GitHubAuthError),
    "BadUserAgentException": (403, GitHubAuthError),
    "TwoFactorException": (401, GitHubAuthError),
    "UnknownObjectException": (404, GitHubNotFound),
    "RateLimitExceededException": (403, GitHubRateLimited),
    "RateLimitExceededExceedsMaxWait": (429, GitHubRateLimited),
    "IncompletableObject": (400, GitHubError),
}


def test_github_exception_classes_are_all_known() -> None:
    found = {
        name
        for name, cls in inspect.getmembers(GH, inspect.isclass)
        if issubclass(cls, GithubException)
    }
    assert found == set(GITHUB_CLASSES)


@pytest.mark.parametrize(("name", "case"), GITHUB_CLASSES.items())
def test_github_classes_map(name: str, case: tuple[int, type[GitHubError]]) -> None:
    status, expected = case
    exc = getattr(GH, name)(status, {"message": "m"}, {})
    mapped = translate_github_error(exc, what="op")
    assert type(mapped) is expected
    assert mapped.status == status
    assert mapped.exit_code == 4


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (401, GitHubAuthError),
        (403, GitHubAuthError),
        (404, GitHubError),
        (409, GitHubError),
        (422, GitHubError),
        (500, GitHubUnavailable),
        (502, GitHubUnavailable),
        (503, GitHubUnavailable),
    ],
)
def test_plain_github_statuses(status: int, expected: type[GitHubError]) -> None:
    mapped = translate_github_error(GithubException(status, {"message": "x"}, {}), what="op")
    assert type(mapped) is expected


@pytest.mark.parametrize(
    "exc",
    [requests.ConnectionError("reset"), requests.Timeout("slow"), requests.exceptions.RetryError()],
)
def test_requests_transport_errors_are_unavailable(exc: Exception) -> None:
    assert type(translate_github_error(exc, what="op")) is GitHubUnavailable


OLLAMA_REQUEST = httpx.Request("POST", "http://h/api/chat")


def _ollama_status(status: int, body: bytes = b'{"error": "refused"}') -> httpx.HTTPStatusError:
    reply = httpx.Response(status, content=body, request=OLLAMA_REQUEST)
    return httpx.HTTPStatusError("status", request=OLLAMA_REQUEST, response=reply)


HTTPX_CLASSES: dict[str, tuple[Callable[[], BaseException], type[ModelError], bool]] = {
    "HTTPError": (lambda: httpx.HTTPError("x"), ModelError, False),
    "RequestError": (lambda: httpx.RequestError("x"), ModelError, False),
    "TransportError": (lambda: httpx.TransportError("x"), ModelUnavailable, True),
    "TimeoutException": (lambda: httpx.TimeoutException("slow"), ModelUnavailable, True),
    "ConnectTimeout": (lambda: httpx.ConnectTimeout("slow"), ModelUnavailable, True),
    "ReadTimeout": (lambda: httpx.ReadTimeout("slow"), ModelUnavailable, True),
    "WriteTimeout": (lambda: httpx.WriteTimeout("slow"), ModelUnavailable, True),
    "PoolTimeout": (lambda: httpx.PoolTimeout("slow"), ModelUnavailable, True),
    "NetworkError": (lambda: httpx.NetworkError("x"), ModelUnavailable, True),
    "ConnectError": (lambda: httpx.ConnectError("refused"), ModelUnavailable, True),
    "ReadError": (lambda: httpx.ReadError("reset"), ModelUnavailable, True),
    "WriteError": (lambda: httpx.WriteError("reset"), ModelUnavailable, True),
    "CloseError": (lambda: httpx.CloseError("reset"), ModelUnavailable, True),
    "ProtocolError": (lambda: httpx.ProtocolError("x"), ModelUnavailable, True),
    "LocalProtocolError": (lambda: httpx.LocalProtocolError("x"), ModelUnavailable, True),
    "RemoteProtocolError": (lambda: httpx.RemoteProtocolError("eof"), ModelUnavailable, True),
    "ProxyError": (lambda: httpx.ProxyError("x"), ModelUnavailable, True),
    "UnsupportedProtocol": (lambda: httpx.UnsupportedProtocol("x"), ModelUnavailable, True),
    "DecodingError": (lambda: httpx.DecodingError("x"), ModelOutputError, False),
    "TooManyRedirects": (lambda: httpx.TooManyRedirects("x"), ModelRequestRejected, False),
    "HTTPStatusError": (lambda: _ollama_status(400), ModelRequestRejected, False),
    "InvalidURL": (lambda: httpx.InvalidURL("x"), ModelRequestRejected, False),
    "CookieConflict": (lambda: httpx.CookieConflict("x"), ModelError, False),
    "StreamError": (lambda: httpx.StreamError("x"), ModelError, False),
    "StreamConsumed": (lambda: httpx.StreamConsumed(), ModelError, False),
    "StreamClosed": (lambda: httpx.StreamClosed(), ModelError, False),
    "ResponseNotRead": (lambda: httpx.ResponseNotRead(), ModelError, False),
    "RequestNotRead": (lambda: httpx.RequestNotRead(), ModelError, False),
}  # fmt: skip
"""Every httpx exception class (the Ollama backend's HTTP client): what it maps to, and
whether it is retried."""


def test_httpx_exception_classes_are_all_known() -> None:
    found = {
        name
        for name, cls in inspect.getmembers(httpx._exceptions, inspect.isclass)
        if issubclass(cls, Exception)
    }
    assert found == set(HTTPX_CLASSES)


@pytest.mark.parametrize(("name", "case"), HTTPX_CLASSES.items())
def test_httpx_classes_map(
    name: str, case: tuple[Callable[[], BaseException], type[ModelError], bool]
) -> None:
    make, expected, transient = case
    exc = make()
    assert type(exc).__name__ == name
    mapped = translate_ollama_error(exc, model="m", host="http://h")
    assert type(mapped) is expected
    assert is_transient_ollama_error(exc) is transient


@pytest.mark.parametrize(
    ("exc", "expected", "transient"),
    [
        (_ollama_status(404, b'{"error": "model not found"}'), ModelNotFound, False),
        (_ollama_status(400, b'{"error": "bad option"}'), ModelRequestRejected, False),
        (_ollama_status(500, b"crashed"), ModelUnavailable, True),
        (_ollama_status(503, b'{"error": ["busy"]}'), ModelUnavailable, True),
        (_ollama_status(502, b"[1]"), ModelUnavailable, True),
        (ConnectionError("refused"), ModelUnavailable, True),
        (RuntimeError("surprise"), ModelError, False),
    ],
)
def test_ollama_errors_map(exc: Exception, expected: type[ModelError], transient: bool) -> None:
    mapped = translate_ollama_error(exc, model="m", host="http://h")
    assert type(mapped) is expected
    assert isinstance(mapped, BotError)
    assert is_transient_ollama_error(exc) is transient


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b'{"error": "model \'m\' not found"}', "model 'm' not found"),
        (b"no such model", "no such model"),
        (b'{"error": 7}', '{"error": 7}'),
        (b"[1]", "[1]"),
    ],
)
def test_what_an_ollama_error_reply_says(body: bytes, said: str) -> None:
    """Ollama's ``{"error": …}``, else the reply's text as it is."""
    mapped = translate_ollama_error(_ollama_status(404, body), model="m", host="http://h")
    assert str(mapped).endswith(f"(404): {said}")


OLLAMA_CLASSES: dict[str, tuple[Callable[[], BaseException], type[ModelError], bool]] = {
    "RequestError": (lambda: ollama.RequestError("must provide a model"), ModelRequestRejected,
                     False),
    "ResponseError": (lambda: ollama.ResponseError("busy", 503), ModelUnavailable, True),
}  # fmt: skip
"""Every exception class of the ``ollama`` package (the Ollama backend's client), alone (as the
package raises it mid-stream, with no status error under it): what it maps to, and whether it
is retried."""


def test_ollama_exception_classes_are_all_known() -> None:
    found = {
        name
        for name, cls in inspect.getmembers(ollama._types, inspect.isclass)
        if issubclass(cls, Exception)
    }
    assert found == set(OLLAMA_CLASSES)


@pytest.mark.parametrize(("name", "case"), OLLAMA_CLASSES.items())
def test_ollama_classes_map(
    name: str, case: tuple[Callable[[], BaseException], type[ModelError], bool]
) -> None:
    make, expected, transient = case
    exc = make()
    assert type(exc).__name__ == name
    mapped = translate_ollama_error(exc, model="m", host="http://h")
    assert type(mapped) is expected
    assert is_transient_ollama_error(exc) is transient


def _raised_by_ollama(status: int, body: bytes, call: str = "chat") -> Exception:
    """What the ``ollama`` package's client raises for a reply of ``status`` and ``body``."""
    reply = httpx.Response(status, content=body, headers={"content-type": "application/json"})
    client = ollama.Client(host="http://h", transport=httpx.MockTransport(lambda _r: reply))
    try:
        client.chat(model="m") if call == "chat" else client.list()
    except Exception as exc:
        return exc
    raise AssertionError("the client raised nothing")


OLLAMA_RAISED = [
    (404, b'{"error": "no model m"}', ModelNotFound, False, "(404): no model m"),
    (400, b'{"error": "bad option"}', ModelRequestRejected, False, "(400): bad option"),
    (503, b'{"error": ["busy"]}', ModelUnavailable, True, '503: {"error": ["busy"]}'),
    (500, b"crashed", ModelUnavailable, True, "500: crashed"),
    (502, b"[1]", ModelUnavailable, True, "502: [1]"),  # the package fails on .get of a list
    (400, b'"refused"', ModelRequestRejected, False, '(400): "refused"'),
    (500, b"null", ModelUnavailable, True, "500: null"),
    (200, b"[1]", ModelOutputError, False, "not Ollama's JSON (not a JSON object)"),
    (200, b'"text"', ModelOutputError, False, "not Ollama's JSON (not a JSON object)"),
    (200, b"null", ModelOutputError, False, "not Ollama's JSON (not a JSON object)"),
    (200, b"<html>", ModelOutputError, False, "not Ollama's JSON (not JSON)"),
    (200, b"\xff\xfe\xfa", ModelOutputError, False, "not Ollama's JSON (not JSON)"),
    (200, b"[" * 100_000, ModelOutputError, False, "not Ollama's JSON (not JSON)"),
    (200, b'{"eval_count": ' + b"7" * 5000 + b"}", ModelOutputError, False, "(not JSON)"),
]  # fmt: skip
"""Replies and what the package raises for them, mapped: the kind, whether it is retried, and
words of the message."""


@pytest.mark.parametrize("call", ["chat", "list"])
@pytest.mark.parametrize(("status", "body", "expected", "transient", "said"), OLLAMA_RAISED)
def test_what_the_ollama_package_raises_maps(
    call: str, status: int, body: bytes, expected: type[ModelError], transient: bool, said: str
) -> None:
    exc = _raised_by_ollama(status, body, call)
    mapped = translate_ollama_error(exc, model="m", host="http://h")
    assert type(mapped) is expected, (exc, mapped)
    assert said in str(mapped)
    assert is_transient_ollama_error(exc) is transient


OLLAMA_SHAPES = [
    ("chat", b'{"message": null}', "another shape than Ollama's (message:"),
    ("chat", b'{"message": {"content": 3}}', "message.content:"),
    ("chat", b'{"message": {"role": "a"}, "done_reason": 1}', "done_reason:"),
    ("list", b'{"models": "x"}', "another shape than Ollama's (models:"),
    ("list", b'{"models": [{"model": 1}]}', "models.0.model:"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "body", "said"), OLLAMA_SHAPES)
def test_a_reply_ollamas_models_refuse_names_the_field(call: str, body: bytes, said: str) -> None:
    exc = _raised_by_ollama(200, body, call)
    mapped = translate_ollama_error(exc, model="m", host="http://h")
    assert type(mapped) is ModelOutputError
    assert said in str(mapped)
    assert not is_transient_ollama_error(exc)


MODEL_HTTP_CLASSES: dict[str, tuple[Callable[[], BaseException], type[ModelError], str]] = {
    "ReplyShapeError": (
        lambda: ReplyShapeError(api_json=True, content_type="application/json", detail="x: y"),
        ModelOutputError, "another shape"),
    "ReplyTooLarge": (lambda: ReplyTooLarge(1234), ModelOutputError, "more than 1234 bytes"),
    "ReplyCompressed": (lambda: ReplyCompressed(), ModelOutputError, "compressed"),
    "RedirectRefused": (lambda: RedirectRefused(), ModelRequestRejected, "another origin"),
}  # fmt: skip
"""The replies the model servers' HTTP (bot/clients/model_http.py) refuses: what each maps to
on either backend, and words of the message."""


def test_model_http_exception_classes_are_all_known() -> None:
    found = {
        name
        for name, cls in inspect.getmembers(model_http, inspect.isclass)
        if issubclass(cls, Exception) and cls.__module__ == model_http.__name__
    }
    assert found == set(MODEL_HTTP_CLASSES)


@pytest.mark.parametrize(("name", "case"), MODEL_HTTP_CLASSES.items())
def test_a_refused_reply_maps_alike_on_both_backends_and_is_not_retried(
    name: str, case: tuple[Callable[[], BaseException], type[ModelError], str]
) -> None:
    """The same server answers the same: not retried."""
    make, expected, words = case
    exc = make()
    openai_mapped = translate_openai_error(exc, model="m", base_url="http://h/v1")
    ollama_mapped = translate_ollama_error(exc, model="m", host="http://h")
    assert type(openai_mapped) is type(ollama_mapped) is expected
    assert words in str(openai_mapped)
    assert words in str(ollama_mapped)
    assert not is_transient_openai_error(exc)
    assert not is_transient_ollama_error(exc)


def test_a_reply_that_is_not_json_says_to_check_the_address() -> None:
    exc = ReplyShapeError(api_json=False, content_type="text/html")
    assert "not the API's JSON" in str(translate_openai_error(exc, model="m", base_url="http://h"))
    assert "not Ollama's JSON" in str(translate_ollama_error(exc, model="m", host="http://h"))


_PASSWORD = st.text(
    st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=4, max_size=30
).map(lambda tail: f"Pw7x{tail}")


@given(
    password=_PASSWORD,
    before=st.integers(min_value=0, max_value=260),
    status=st.sampled_from([400, 404, 500, 503]),
)
@settings(max_examples=200, deadline=None)
def test_ollama_text_echoing_the_hosts_password_leaves_no_piece_of_it(
    password: str, before: int, status: int
) -> None:
    """A proxy in front of Ollama that repeats the host URL's password anywhere in its error
    text (inside the kept part, straddling the cut, past it): no piece of 4 characters or more
    reaches the message."""
    host = f"http://user:{quote(password, safe='')}@ollama.internal:11434"
    text = "." * before + password + " is wrong" + "." * 300
    mapped = translate_ollama_error(_ollama_status(status, text.encode()), model="m", host=host)
    assert "Pw7x" not in str(mapped)
    assert "ollama.internal" in str(mapped)


OPENAI_REQUEST = httpx2.Request("POST", "http://h/v1/chat/completions")


def _reply(status: int) -> httpx2.Response:
    return httpx2.Response(status, request=OPENAI_REQUEST)


def _completion(finish: str) -> ChatCompletion:
    return ChatCompletion.model_validate({
        "id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": finish,
                     "message": {"role": "assistant", "content": ""}}],
    })  # fmt: skip


def _status_error(cls: type[openai.APIStatusError], status: int) -> openai.APIStatusError:
    return cls("refused", response=_reply(status), body=None)


OPENAI_CLASSES: dict[str, tuple[Callable[[], BaseException], type[ModelError], bool]] = {
    "OpenAIError": (lambda: openai.OpenAIError("missing"), ModelError, False),
    "SubjectTokenProviderError": (
        lambda: openai_exceptions.SubjectTokenProviderError("no token"), ModelError, False),
    "APIError": (lambda: openai.APIError("x", OPENAI_REQUEST, body=None), ModelError, False),
    "APIResponseValidationError": (
        lambda: openai.APIResponseValidationError(_reply(200), body=None), ModelOutputError, False),
    "APIStatusError": (lambda: _status_error(openai.APIStatusError, 418), ModelRequestRejected,
                       False),
    "APIConnectionError": (lambda: openai.APIConnectionError(request=OPENAI_REQUEST),
                           ModelUnavailable, True),
    "APITimeoutError": (lambda: openai.APITimeoutError(OPENAI_REQUEST), ModelUnavailable, True),
    "BadRequestError": (lambda: _status_error(openai.BadRequestError, 400),
                        ModelRequestRejected, False),
    "AuthenticationError": (lambda: _status_error(openai.AuthenticationError, 401),
                            ModelRequestRejected, False),
    "OAuthError": (lambda: openai.OAuthError(response=_reply(401), body=None),
                   ModelRequestRejected, False),
    "PermissionDeniedError": (lambda: _status_error(openai.PermissionDeniedError, 403),
                              ModelRequestRejected, False),
    "NotFoundError": (lambda: _status_error(openai.NotFoundError, 404), ModelNotFound, False),
    "ConflictError": (lambda: _status_error(openai.ConflictError, 409),
                      ModelRequestRejected, False),
    "UnprocessableEntityError": (lambda: _status_error(openai.UnprocessableEntityError, 422),
                                 ModelRequestRejected, False),
    "RateLimitError": (lambda: _status_error(openai.RateLimitError, 429), ModelUnavailable, True),
    "InternalServerError": (lambda: _status_error(openai.InternalServerError, 503),
                            ModelUnavailable, True),
    "LengthFinishReasonError": (
        lambda: openai.LengthFinishReasonError(completion=_completion("length")),
        ModelTruncated, False),
    "ContentFilterFinishReasonError": (
        lambda: openai.ContentFilterFinishReasonError(), ModelOutputError, False),
    "InvalidWebhookSignatureError": (
        lambda: openai.InvalidWebhookSignatureError("bad"), ModelError, False),
    "WebSocketConnectionClosedError": (
        lambda: openai_exceptions.WebSocketConnectionClosedError("closed", unsent_messages=[]),
        ModelError, False),
    "WebSocketQueueFullError": (
        lambda: openai_exceptions.WebSocketQueueFullError("full"), ModelError, False),
}  # fmt: skip


def test_openai_exception_classes_are_all_known() -> None:
    found = {
        name
        for name, cls in inspect.getmembers(openai_exceptions, inspect.isclass)
        if issubclass(cls, Exception)
    }
    assert found == set(OPENAI_CLASSES)


@pytest.mark.parametrize(("name", "case"), OPENAI_CLASSES.items())
def test_openai_classes_map(
    name: str, case: tuple[Callable[[], BaseException], type[ModelError], bool]
) -> None:
    make, expected, transient = case
    exc = make()
    assert type(exc).__name__ == name
    mapped = translate_openai_error(exc, model="m", base_url="http://h/v1")
    assert type(mapped) is expected
    assert isinstance(mapped, BotError)
    assert is_transient_openai_error(exc) is transient


@pytest.mark.parametrize(
    ("status", "expected", "transient"),
    [
        (400, ModelRequestRejected, False),
        (408, ModelRequestRejected, True),
        (413, ModelRequestRejected, False),
        (429, ModelUnavailable, True),
        (500, ModelUnavailable, True),
        (502, ModelUnavailable, True),
        (503, ModelUnavailable, True),
    ],
)
def test_plain_openai_statuses(status: int, expected: type[ModelError], transient: bool) -> None:
    exc = _status_error(openai.APIStatusError, status)
    assert type(translate_openai_error(exc, model="m", base_url="http://h/v1")) is expected
    assert is_transient_openai_error(exc) is transient
