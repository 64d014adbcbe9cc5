"""``map_bounded``: outcomes in the items' order, none lost or duplicated when calls fail, never
more than the limit in flight, the progress hook once per item on the caller's thread."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.concurrency import Failed, iter_bounded, map_bounded


class Boom(Exception):
    pass


class Calls:
    """A call that records how many run at once, sleeps a little, and fails for every item that
    is 3 mod 10 (one call in ten)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.most = 0
        self.seen: list[int] = []

    def __call__(self, item: int) -> str:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
            self.seen.append(item)
        try:
            time.sleep(random.uniform(0, 0.002))
            if item % 10 == 3:
                raise Boom(f"item {item}")
            return f"done {item}"
        finally:
            with self.lock:
                self.now -= 1


def _streamed(
    fn: Callable[[int], str], items: list[int], *, limit: int, on_done: Callable[[int], None]
) -> list[str | Failed[int]]:
    return list(iter_bounded(fn, items, limit=limit, on_done=on_done))


@settings(max_examples=60, deadline=None)
@given(
    items=st.lists(st.integers(0, 10_000), max_size=60),
    limit=st.integers(1, 8),
    mapper=st.sampled_from([map_bounded, _streamed]),
)
def test_order_kept_nothing_lost_or_doubled_and_the_limit_held(
    items: list[int], limit: int, mapper: Callable[..., list[str | Failed[int]]]
) -> None:
    calls = Calls()
    finished: list[int] = []
    caller = threading.get_ident()

    def done(index: int) -> None:
        assert threading.get_ident() == caller
        finished.append(index)

    outcomes = mapper(calls, items, limit=limit, on_done=done)

    assert len(outcomes) == len(items)
    for item, outcome in zip(items, outcomes, strict=True):
        if item % 10 == 3:
            assert isinstance(outcome, Failed)
            assert outcome.item == item
            assert str(outcome.error) == f"item {item}"
        else:
            assert outcome == f"done {item}"
    assert sorted(calls.seen) == sorted(items)  # each item called exactly once
    assert sorted(finished) == list(range(len(items)))  # the hook once per item
    assert calls.most <= limit
    if limit == 1:
        assert calls.seen == items  # one after another, in order
        assert finished == list(range(len(items)))


def test_the_limit_is_reached_when_calls_overlap() -> None:
    """Eight calls that each wait for the others: all eight run at once with a limit of 8, two
    at a time with 2."""
    for limit in (2, 8):
        calls = Calls()
        barrier = threading.Barrier(limit, timeout=5)

        def call(item: int, calls: Calls = calls, barrier: threading.Barrier = barrier) -> int:
            with calls.lock:
                calls.now += 1
                calls.most = max(calls.most, calls.now)
            barrier.wait()
            with calls.lock:
                calls.now -= 1
            return item

        assert map_bounded(call, list(range(8)), limit=limit) == list(range(8))
        assert calls.most == limit


def test_limit_one_runs_on_the_callers_thread() -> None:
    caller = threading.get_ident()
    assert map_bounded(lambda _: threading.get_ident(), [1, 2, 3], limit=1) == [caller] * 3


def test_an_interrupt_stops_the_map() -> None:
    """Not an item's failure: a ``KeyboardInterrupt`` in a call ends the whole map."""

    def call(item: int) -> int:
        if item == 5:
            raise KeyboardInterrupt
        return item

    for limit in (1, 4):
        with pytest.raises(KeyboardInterrupt):
            map_bounded(call, list(range(20)), limit=limit)


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        map_bounded(str, [1], limit=0)


def test_each_outcome_is_handed_over_before_later_calls_end() -> None:
    """The last item's call waits until the caller holds the first outcome: a map that returns
    only at the end would never hand it over."""
    first_taken = threading.Event()

    def call(item: int) -> int:
        if item == 5 and not first_taken.wait(timeout=5):
            raise TimeoutError("the first outcome was not handed over while calls ran")
        return item

    for limit in (2, 6):
        first_taken.clear()
        outcomes = iter_bounded(call, list(range(6)), limit=limit)
        assert next(outcomes) == 0
        first_taken.set()
        assert list(outcomes) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("limit", [1, 2, 4])
def test_no_call_starts_once_the_caller_stops_taking_outcomes(limit: int) -> None:
    """A caller that stops early (a backlog that meets an outage) closes the stream: the calls
    then running end, and no other starts."""
    calls = Calls()
    outcomes = iter_bounded(calls, [i * 10 for i in range(50)], limit=limit)
    assert next(outcomes) == "done 0"
    outcomes.close()
    started = len(calls.seen)
    time.sleep(0.05)
    assert len(calls.seen) == started <= 2 * limit
    assert calls.now == 0


def test_a_call_runs_ahead_only_while_the_caller_works() -> None:
    """Between two outcomes taken, the stream keeps up to ``limit`` calls running: with the
    caller slower than the calls, the next outcomes are ready when it asks."""
    calls = Calls()
    outcomes = iter_bounded(calls, [i * 10 for i in range(12)], limit=4)
    taken = []
    for outcome in outcomes:
        taken.append(outcome)
        time.sleep(0.01)  # the caller's own work: the writes of one item
        with calls.lock:
            assert len(calls.seen) >= min(12, len(taken) + 3)  # the calls were kept going
    assert taken == [f"done {i * 10}" for i in range(12)]
