"""Calls to a model server, several at once: :func:`iter_bounded` and :func:`map_bounded`.

A server that batches (vLLM, ``llama-server`` with slots, Ollama with ``OLLAMA_NUM_PARALLEL``)
answers N requests in about the time of one, so a run over many items sends up to N at once.
The outcomes keep the items' order, each item's failure stays its own, and the caller's
progress hook runs on the caller's thread. :func:`iter_bounded` hands each outcome over as soon
as it and every one before it have ended, so a caller can write item by item, in order, while
later calls run; :func:`map_bounded` is its list. A limit of 1 makes every call on the caller's
thread, one after another, exactly as a plain loop: the embedded llama.cpp model is one object
in this process and takes one call at a time.
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
    """The outcome of an item whose call raised: the item and what it raised."""

    item: T
    error: Exception


def map_bounded(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    limit: int,
    on_done: Callable[[int], None] | None = None,
) -> list[R | Failed[T]]:
    """Every outcome of :func:`iter_bounded` (same arguments), as a list in the items' order.

    Raises:
        ValueError: ``limit`` < 1.
    """
    return list(iter_bounded(fn, items, limit=limit, on_done=on_done))


def iter_bounded(
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    limit: int,
    on_done: Callable[[int], None] | None = None,
) -> Generator[R | Failed[T], None, None]:
    """``fn`` on every item with at most ``limit`` calls running at once; the outcomes in the
    items' order, each as soon as it and those before it have ended.

    Calls start in the items' order, only while the caller asks for the next outcome, and
    for no item more than ``limit`` past the one it asks for: while the caller works on an
    outcome, the calls of the next ``limit`` items run. Closing the iterator early
    (``close()``, or leaving a ``with contextlib.closing(...)`` block) starts no further call;
    those running (at most ``limit``) end on their own threads.

    Args:
        fn: the call for one item; it runs on a worker thread when ``limit`` > 1.
        items: the inputs.
        limit: most calls in flight (≥ 1); 1 runs each call on the caller's thread in order.
        on_done: called on the caller's thread with an item's index once its call has ended
            (in the order calls end), e.g. to advance a progress bar.

    Yields:
        One outcome per item, in the items' order: what ``fn`` returned, or :class:`Failed`
        with the exception it raised (an ``Exception``; anything else, such as
        ``KeyboardInterrupt``, ends the iteration: calls not started are cancelled).

    Raises:
        ValueError: ``limit`` < 1 (at the first ``next``).
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
    """The results of calls that must all succeed, in their order.

    Raises:
        The error of the first :class:`Failed` outcome, in the outcomes' order.
    """
    failed = next((o for o in outcomes if isinstance(o, Failed)), None)
    if failed is not None:
        raise failed.error
    return [o for o in outcomes if not isinstance(o, Failed)]


def _call(fn: Callable[[T], R], item: T) -> R | Failed[T]:
    try:
        return fn(item)
    except Exception as exc:  # the item's own failure, handed back in its place
        return Failed(item, exc)
