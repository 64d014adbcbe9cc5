"""Model calls, up to N at once, outcomes in the items' order: a batching server answers N in
about the time of one. A limit of 1 is a plain loop on the caller's thread (the embedded model).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Failed", "iter_bounded", "map_bounded", "results_or_raise"]

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Failed(Generic[T]):
    """The outcome of an item whose call raised."""

    item: T
    error: Exception


def map_bounded(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    limit: int,
    on_done: Callable[[int], None] | None = None,
) -> list[R | Failed[T]]:
    """Every outcome of :func:`iter_bounded`, as a list; :exc:`ValueError` if ``limit`` < 1."""
    return list(iter_bounded(fn, items, limit=limit, on_done=on_done))


def iter_bounded(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    limit: int,
    on_done: Callable[[int], None] | None = None,
) -> Generator[R | Failed[T], None, None]:
    """``fn`` on every item, at most ``limit`` at once; outcomes yielded in the items' order.

    Each outcome comes as soon as it and those before it have ended: the result, or
    :class:`Failed` for an ``Exception`` (anything else ends the iteration). Calls run at most
    ``limit`` items ahead of the caller; closing the iterator starts no further call.
    ``on_done(index)`` runs on the caller's thread as each call ends, in the order they end.
    Raises :exc:`ValueError` at the first ``next`` if ``limit`` < 1.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    done = on_done or (lambda _index: None)
    if limit == 1 or len(items) <= 1:
        for index, item in enumerate(items):
            outcome = _call(fn, item)
            done(index)
            yield outcome
        return
    ended: dict[int, R | Failed[T]] = {}
    running: dict[Future[R | Failed[T]], int] = {}
    started = 0
    pool = ThreadPoolExecutor(max_workers=min(limit, len(items)), thread_name_prefix="model")

    def start_before(end: int) -> None:
        nonlocal started
        while started < min(end, len(items)) and len(running) < limit:
            running[pool.submit(_call, fn, items[started])] = started
            started += 1

    def collect(timeout: float | None) -> None:
        finished, _ = wait(running, timeout=timeout, return_when=FIRST_COMPLETED)
        for future in finished:
            index = running.pop(future)
            ended[index] = future.result()
            done(index)

    try:
        for index in range(len(items)):
            collect(0)  # what ended while the caller worked on the previous outcome
            start_before(index + limit)
            while index not in ended:
                collect(None)
                start_before(index + limit)
            start_before(index + limit + 1)  # what runs while the caller works on this one
            yield ended.pop(index)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def results_or_raise(outcomes: Sequence[R | Failed[Any]]) -> list[R]:
    """The results of calls that must all succeed; raises the first failure's error."""
    failed = next((o for o in outcomes if isinstance(o, Failed)), None)
    if failed is not None:
        raise failed.error
    return [o for o in outcomes if not isinstance(o, Failed)]


def _call(fn: Callable[[T], R], item: T) -> R | Failed[T]:
    try:
        return fn(item)
    except Exception as exc:  # the item's own failure, handed back in its place
        return Failed(item, exc)
