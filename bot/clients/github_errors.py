"""PyGithub and requests errors mapped to :mod:`bot.errors`, with retry and wait rules."""

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
    """A 422 whose errors say ``already_exists`` (a label another run created)."""
    data = exc.data if isinstance(exc.data, dict) else {}
    errors = data.get("errors") or []
    return exc.status == 422 and any(
        isinstance(e, dict) and e.get("code") == "already_exists" for e in errors
    )


def translate_github_error(exc: Exception, *, what: str) -> GitHubError:
    """Map a PyGithub or requests error into the :mod:`bot.errors` tree; ``what`` names the call."""
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
    """A rate-limit answer (not acted on by GitHub) whose wait PyGithub accepts."""
    return isinstance(exc, RateLimitExceededException) and not isinstance(
        exc, RateLimitExceededExceedsMaxWait
    )


def rate_limit_answer(exc: BaseException) -> bool:
    """Any rate-limit answer, however long its wait: PyGithub's error or a 429."""
    if isinstance(exc, RateLimitExceededException):
        return True
    return isinstance(exc, GithubException) and exc.status == 429


def transient(exc: BaseException) -> bool:
    """A rate limit, a 5xx, a connection error or a timeout: safe requests retry."""
    if rate_limited(exc):
        return True
    if isinstance(exc, GithubException):
        return exc.status >= 500
    return isinstance(exc, requests.ConnectionError | requests.Timeout)


_EPOCH_SECONDS = re.compile(r"[0-9]+")


def rate_limit_wait_s(
    exc: BaseException, *, now_s: float | None = None, max_s: float = math.inf
) -> float | None:
    """Seconds GitHub asks to wait, at most ``max_s``, or ``None``.

    ``Retry-After`` wins; else ``X-RateLimit-Reset`` minus now, plus one second as PyGithub does.
    The default ``max_s`` lets a caller see a wait longer than it will make.
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
