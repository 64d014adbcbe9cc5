"""GitHub error classification: PyGithub/requests exceptions → :mod:`bot.errors`, which of
them are worth another try, and how long GitHub asks us to wait.

Per docs.github.com, "Rate limits for the REST API" (a rate-limited request was not acted on;
``Retry-After`` wins over ``X-RateLimit-Reset``) and "Troubleshooting the REST API". The retry
policy that uses these lives in :mod:`bot.clients.github_client`.
"""

from __future__ import annotations

import math
import re
import time

import requests
from github import GithubException
from github.GithubException import (
    BadCredentialsException,
    RateLimitExceededExceedsMaxWait,
    RateLimitExceededException,
    UnknownObjectException,
)

from bot.errors import (
    GitHubAuthError,
    GitHubError,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubUnavailable,
)
from bot.retry import retry_after_s

__all__ = [
    "is_already_exists",
    "rate_limit_answer",
    "rate_limit_wait_s",
    "rate_limited",
    "transient",
    "translate_github_error",
]


def is_already_exists(exc: GithubException) -> bool:
    """A 422 whose errors say ``already_exists`` (e.g. creating a label another run created)."""
    data = exc.data if isinstance(exc.data, dict) else {}
    errors = data.get("errors") or []
    return exc.status == 422 and any(
        isinstance(e, dict) and e.get("code") == "already_exists" for e in errors
    )


def translate_github_error(exc: Exception, *, what: str) -> GitHubError:
    """Map a PyGithub/requests exception to the :mod:`bot.errors` tree (the choke point).

    Args:
        exc: the upstream exception.
        what: the operation, for the message (e.g. ``"add labels to o/r#3"``).
    """
    if isinstance(exc, GitHubError):
        return exc
    if isinstance(exc, RateLimitExceededException):
        return GitHubRateLimited(f"{what}: rate limited ({exc.status})", exc.status)
    if isinstance(exc, BadCredentialsException):
        return GitHubAuthError(f"{what}: bad credentials (401)", exc.status)
    if isinstance(exc, UnknownObjectException):
        return GitHubNotFound(f"{what}: not found (404)", exc.status)
    if isinstance(exc, GithubException):
        message = exc.message or (exc.data.get("message") if isinstance(exc.data, dict) else "")
        detail = f"{what}: GitHub answered {exc.status}: {message}"
        if exc.status in (401, 403):
            return GitHubAuthError(detail, exc.status)
        if exc.status >= 500:
            return GitHubUnavailable(detail, exc.status)
        return GitHubError(detail, exc.status)
    if isinstance(exc, requests.RequestException):
        return GitHubUnavailable(f"{what}: {type(exc).__name__} talking to GitHub", None)
    return GitHubError(f"{what}: unexpected {type(exc).__name__}: {exc}", None)


def rate_limited(exc: BaseException) -> bool:
    """A rate-limit answer GitHub did not act on, with a wait we are willing to make."""
    return isinstance(exc, RateLimitExceededException) and not isinstance(
        exc, RateLimitExceededExceedsMaxWait
    )


def rate_limit_answer(exc: BaseException) -> bool:
    """Any rate-limit answer, however long its wait: PyGithub's rate-limit error (a 403 whose
    message says so) or a 429, which PyGithub leaves a plain error."""
    if isinstance(exc, RateLimitExceededException):
        return True
    return isinstance(exc, GithubException) and exc.status == 429


def transient(exc: BaseException) -> bool:
    """Worth another try when the request is safe to repeat: a rate limit we may wait for, a
    5xx, or a connection error or timeout."""
    if rate_limited(exc):
        return True
    if isinstance(exc, GithubException):
        return exc.status >= 500
    return isinstance(exc, requests.ConnectionError | requests.Timeout)


_EPOCH_SECONDS = re.compile(r"[0-9]+")


def rate_limit_wait_s(
    exc: BaseException, *, now_s: float | None = None, max_s: float = math.inf
) -> float | None:
    """Seconds (at most ``max_s``) GitHub asks us to wait before repeating a rate-limited
    request, or ``None``.

    ``Retry-After`` wins (:func:`bot.retry.retry_after_s`: seconds or an HTTP date); else
    ``X-RateLimit-Reset`` (epoch seconds, ASCII digits) minus now, plus one second as PyGithub
    does (docs.github.com, "Rate limits for the REST API"). Left infinite, ``max_s`` lets a
    caller see a wait longer than it will make (``inf`` for one too long for a float).
    """
    headers = {k.lower(): v for k, v in (getattr(exc, "headers", None) or {}).items()}
    now = time.time() if now_s is None else now_s
    after = headers.get("retry-after")
    asked = retry_after_s(None if after is None else str(after), max_s=max_s, now_s=now)
    if asked is not None:
        return asked
    reset = str(headers.get("x-ratelimit-reset", "")).strip()
    if _EPOCH_SECONDS.fullmatch(reset):
        return min(max(0.0, float(reset) - now + 1.0), max_s)
    return None
