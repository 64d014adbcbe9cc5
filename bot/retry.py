"""Transient-error retries, built on tenacity (never a hand-written loop), and a request's
wall-clock deadline.

Only transport-level faults that are safe to repeat are retried: a model call has no side effect,
and GitHub writes get PyGithub's own retry policy limited to idempotent methods
(:mod:`bot.clients.github_client`). The contract's "repair once" in the audit is pipeline logic,
not a transport retry, and does not live here.

:func:`call_with_deadline` stops waiting for a request at its deadline but cannot stop the
thread that makes it; that thread runs in a copy of the caller's context, where
:func:`past_deadline` tells the code reading the reply (:mod:`bot.clients.model_http`) to stop.
"""

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
    """How often and how long to retry a transient failure.

    Attributes:
        attempts: total tries including the first (≥ 1).
        wait_initial_s: first back-off (seconds); doubles each try.
        wait_max_s: longest single back-off (seconds).
    """

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
    """Call ``fn`` and retry it while it raises an error ``transient`` accepts.

    Args:
        fn: the call.
        policy: attempts and exponential back-off (seconds).
        transient: which errors are worth another try.
        server_wait_s: the wait (seconds) the server asked for in the error (e.g. GitHub's
            ``Retry-After``), used instead of the back-off when it returns a number; the caller
            bounds it.
        sleep: how to wait (seconds); ``time.sleep`` when ``None``. Tests pass a recorder.

    Raises:
        The last exception ``fn`` raised, unchanged, once attempts are used up or at once when
        the error is not transient; the caller translates it.
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
    """The wait (seconds, ``0 ≤ wait ≤ max_s``) a ``Retry-After`` header value asks for, read
    as RFC 9110 (section 10.2.3) defines it: delta-seconds (ASCII digits only), or an
    HTTP-date (read by :func:`email.utils.parsedate_to_datetime`; the time until it, 0 when
    it has passed; a date without a zone is UTC, as HTTP dates are).

    Args:
        value: the header's value (surrounding whitespace ignored), or ``None`` when absent.
        max_s: the longest wait to return; a longer one is cut to it. Left infinite, a wait
            too long for a float is ``inf``, for a caller that refuses long waits.
        now_s: the time now (seconds since the epoch) for a date; ``time.time()`` when ``None``.

    Returns:
        The wait, or ``None`` when the value is neither form (``1e3``, ``-1``, ``inf``,
        ``nan``, text): the caller's own back-off applies.
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
    """A request did not complete within its wall-clock deadline (transient: worth a retry)."""


_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar(
    "request_deadline", default=None
)
"""The ``time.monotonic()`` by which the request this context runs must end; ``None``: none."""


def past_deadline() -> bool:
    """Whether the request running in this context (:func:`call_with_deadline`) is past its
    deadline, and so abandoned by its caller."""
    deadline = _DEADLINE.get()
    return deadline is not None and time.monotonic() > deadline


def call_with_deadline(fn: Callable[[], T], deadline_s: float) -> T:
    """Run ``fn`` in a daemon thread and wait at most ``deadline_s`` seconds for it.

    The thread runs in a copy of the caller's context (context variables set by the caller are
    seen by ``fn``), in which :func:`past_deadline` turns true at the deadline: code ``fn``
    calls checks it to stop work nobody waits for.

    Raises:
        DeadlineExceeded: ``fn`` is still running at the deadline (it is abandoned).
        Whatever ``fn`` raised.
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
