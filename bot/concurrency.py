"""Calls to a model server, several at once: :func:`map_bounded`.

A server that batches (vLLM, ``llama-server`` with slots, Ollama with ``OLLAMA_NUM_PARALLEL``)
answers N requests in about the time of one, so a run over many items sends up to N at once.
The outcomes keep the items' order, each item's failure stays its own, and the caller's
progress hook runs on the caller's thread. A limit of 1 makes every call on the caller's thread,
one after another, exactly as a plain loop: the embedded llama.cpp model is one object in this
process and takes one call at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["Failed", "map_bounded"]

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
    """``fn`` on every item with at most ``limit`` calls running at once.

    Args:
        fn: the call for one item; it runs on a worker thread when ``limit`` > 1.
        items: the inputs.
        limit: most calls in flight (≥ 1); 1 runs each call on the caller's thread in order.
        on_done: called on the caller's thread with an item's index once its call has ended
            (in the order calls end), e.g. to advance a progress bar.

    Returns:
        One outcome per item, in the items' order: what ``fn`` returned, or :class:`Failed`
        with the exception it raised (an ``Exception``; anything else, such as
        ``KeyboardInterrupt``, stops the map: calls not started are cancelled).

    Raises:
        ValueError: ``limit`` < 1.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    done = on_done or (lambda _index: None)
    if limit == 1 or len(items) <= 1:
        outcomes: list[R | Failed[T]] = []
        for index, item in enumerate(items):
            outcomes.append(_call(fn, item))
            done(index)
        return outcomes
    slots: list[Any] = [_PENDING] * len(items)
    with ThreadPoolExecutor(max_workers=min(limit, len(items)), thread_name_prefix="model") as pool:
        futures = {pool.submit(_call, fn, item): index for index, item in enumerate(items)}
        try:
            for future in as_completed(futures):
                index = futures[future]
                slots[index] = future.result()
                done(index)
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return slots


_PENDING = object()


def _call(fn: Callable[[T], R], item: T) -> R | Failed[T]:
    try:
        return fn(item)
    except Exception as exc:  # the item's own failure, handed back in its place
        return Failed(item, exc)
