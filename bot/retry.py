"""Transient-error retries, built on tenacity (never a hand-written loop).

Only transport-level faults that are safe to repeat are retried: a model call has no side effect,
and GitHub writes get PyGithub's own retry policy limited to idempotent methods
(:mod:`bot.clients.github_client`). The contract's "repair once" in the audit is pipeline logic,
not a transport retry, and does not live here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

__all__ = ["DeadlineExceeded", "RetryPolicy", "call_with_deadline", "call_with_retries"]

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


class DeadlineExceeded(Exception):
    """A request did not complete within its wall-clock deadline (transient: worth a retry)."""


def call_with_deadline(fn: Callable[[], T], deadline_s: float) -> T:
    """Run ``fn`` in a daemon thread and wait at most ``deadline_s`` seconds for it.

    Raises:
        DeadlineExceeded: ``fn`` is still running at the deadline (it is abandoned).
        Whatever ``fn`` raised.
    """
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller below
            box["error"] = exc

    worker = threading.Thread(target=work, name="model-request", daemon=True)
    worker.start()
    worker.join(deadline_s)
    if worker.is_alive():
        raise DeadlineExceeded(f"no complete reply within {deadline_s:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
