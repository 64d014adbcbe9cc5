"""A request's wall-clock deadline (``bot.retry.call_with_deadline``): the caller stops waiting
at it, and the thread left running sees the caller's context and learns it is abandoned
(``past_deadline``), so the code reading a reply can stop."""

from __future__ import annotations

import contextvars
import threading

import pytest

from bot.retry import DeadlineExceeded, call_with_deadline, past_deadline

WHO: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")


@pytest.mark.parametrize("value", ["validator", "auditor", ""])
def test_the_call_sees_the_callers_context(value: str) -> None:
    token = WHO.set(value)
    try:
        assert call_with_deadline(WHO.get, 5) == value
    finally:
        WHO.reset(token)


def test_the_call_cannot_change_the_callers_context() -> None:
    call_with_deadline(lambda: WHO.set("changed"), 5)
    assert WHO.get() == "nobody"


def test_an_abandoned_call_learns_it_is_past_its_deadline() -> None:
    seen: dict[str, bool] = {}
    release = threading.Event()
    done = threading.Event()

    def slow() -> None:
        seen["before"] = past_deadline()
        release.wait(5)
        seen["after"] = past_deadline()
        done.set()

    with pytest.raises(DeadlineExceeded):
        call_with_deadline(slow, 0.05)
    release.set()
    assert done.wait(5)
    assert seen == {"before": False, "after": True}
    assert past_deadline() is False  # the caller's own context has no deadline


def test_a_call_that_ends_in_time_was_never_past_it() -> None:
    assert call_with_deadline(past_deadline, 5) is False
