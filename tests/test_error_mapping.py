"""Every upstream error class is translated into the BotError tree at its client's choke point.

A library upgrade that adds an exception class fails `test_*_classes_are_all_known` until the
class is mapped here and in the client.
"""

from __future__ import annotations

import inspect
import sys

import httpx
import ollama
import pytest
import requests
from github import GithubException

from bot.clients.github_client import translate_github_error
from bot.clients.ollama_client import is_transient_ollama_error, translate_ollama_error
from bot.errors import (
    BotError,
    GitHubAuthError,
    GitHubError,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubUnavailable,
    ModelError,
    ModelNotFound,
    ModelRequestRejected,
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


def test_ollama_exception_classes_are_all_known() -> None:
    found = {
        name
        for name, cls in inspect.getmembers(ollama._types, inspect.isclass)
        if issubclass(cls, Exception)
    }
    assert found == {"RequestError", "ResponseError"}


@pytest.mark.parametrize(
    ("exc", "expected", "transient"),
    [
        (ollama.ResponseError("model not found", 404), ModelNotFound, False),
        (ollama.ResponseError("bad option", 400), ModelRequestRejected, False),
        (ollama.ResponseError("crashed", 500), ModelUnavailable, True),
        (ollama.ResponseError("busy", 503), ModelUnavailable, True),
        (ollama.RequestError("must provide a model"), ModelRequestRejected, False),
        (ConnectionError("refused"), ModelUnavailable, True),
        (httpx.ConnectError("refused"), ModelUnavailable, True),
        (httpx.ReadTimeout("slow"), ModelUnavailable, True),
        (httpx.ConnectTimeout("slow"), ModelUnavailable, True),
        (httpx.RemoteProtocolError("eof"), ModelUnavailable, True),
        (RuntimeError("surprise"), ModelError, False),
    ],
)
def test_ollama_errors_map(exc: Exception, expected: type[ModelError], transient: bool) -> None:
    mapped = translate_ollama_error(exc, model="m", host="http://h")
    assert type(mapped) is expected
    assert isinstance(mapped, BotError)
    assert is_transient_ollama_error(exc) is transient
