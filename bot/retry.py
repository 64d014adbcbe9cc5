"""Retries of transient, safe-to-repeat errors (tenacity), and a request's wall-clock deadline."""

from __future__ import annotations

import contextvars
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

__all__ = [
    "DeadlineExceeded",
    "RetryPolicy",
    "call_with_deadline",
    "call_with_retries",
    "past_deadline",
    "retry_after_s",
]

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often to retry: total tries (≥ 1), back-off in seconds doubling up to a cap."""

    attempts: int = 3
    wait_initial_s: float = 0.5
    wait_max_s: float = 8.0


def call_with_retries(
    fn: Callable[[], T],
    *,
    policy: RetryPolicy,
    transient: Callable[[BaseException], bool],
    server_wait_s: Callable[[BaseException], float | None] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> T:
    """Call ``fn``, retrying while it raises an error ``transient`` accepts.

    ``server_wait_s`` gives the wait (seconds) a server asked for, used instead of the back-off
    when not ``None``. The last error is re-raised unchanged.
    """
    backoff = wait_exponential(multiplier=policy.wait_initial_s, max=policy.wait_max_s)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        asked = server_wait_s(exc) if server_wait_s and exc is not None else None
        return float(backoff(state)) if asked is None else asked

    retrying = Retrying(
        stop=stop_after_attempt(max(1, policy.attempts)),
        wait=wait,
        retry=retry_if_exception(transient),
        reraise=True,
        sleep=time.sleep if sleep is None else sleep,
    )
    return retrying(fn)


_DELTA_SECONDS = re.compile(r"[0-9]+")


def retry_after_s(
    value: str | None, *, max_s: float = math.inf, now_s: float | None = None
) -> float | None:
    """The wait in seconds (``0 ≤ wait ≤ max_s``) a ``Retry-After`` value asks for.

    Delta-seconds or an HTTP-date (RFC 9110 10.2.3; a zoneless date is UTC); ``now_s`` is epoch
    seconds. ``None`` when the value is neither (``1e3``, ``-1``): the caller's back-off applies.
    """
    text = (value or "").strip()
    if _DELTA_SECONDS.fullmatch(text):
        asked = float(text)  # a number too long for a float reads as inf, never raises
    else:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        now = time.time() if now_s is None else now_s
        asked = max(0.0, when.timestamp() - now)
    return min(asked, max_s)


class DeadlineExceeded(Exception):
    """A request did not end within its wall-clock deadline; transient."""


# The time.monotonic() by which the request this context runs must end.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "request_deadline", default=None
)


def past_deadline() -> bool:
    """Whether this context's request (:func:`call_with_deadline`) is past its deadline."""
    deadline = _DEADLINE.get()
    return deadline is not None and time.monotonic() > deadline


def call_with_deadline(fn: Callable[[], T], deadline_s: float) -> T:
    """Run ``fn`` in a daemon thread; :exc:`DeadlineExceeded` after ``deadline_s`` seconds.

    The thread cannot be stopped: it runs in a copy of the caller's context, where
    :func:`past_deadline` turns true at the deadline so ``fn`` can stop reading.
    """
    box: dict[str, Any] = {}
    context = contextvars.copy_context()
    deadline = time.monotonic() + deadline_s

    def work() -> None:
        _DEADLINE.set(deadline)
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=context.run, args=(work,), name="model-request", daemon=True)
    worker.start()
    worker.join(deadline_s)
    if worker.is_alive():
        raise DeadlineExceeded(f"no complete reply within {deadline_s:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
