"""Grammar-constrained sampling that asks the grammar about a shortlist first (embedded backend).

The grammar checks the :data:`SHORTLIST` best tokens; when ``k`` or more are allowed (``k`` is 1
greedy, else ``top_k``), the chain gets only those and picks as a full pass would. Otherwise,
and for chains where that cannot hold, the full pass runs. Measured in docs/performance.md.
"""

from __future__ import annotations

import ctypes
import inspect
from collections.abc import Callable
from typing import Any

import llama_cpp
import numpy as np
from llama_cpp import Llama
from llama_cpp._internals import CustomSampler

__all__ = ["SHORTLIST", "ShortlistLlama", "install_shortlist", "shortlist", "shortlist_width"]

SHORTLIST = 64
"""Tokens checked against the grammar first (at least ``k``): enough to cover the few tokens a
JSON grammar allows at a key or punctuation step among the best-scoring ones, small enough to
check in well under a millisecond."""

_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)


def shortlist_width(*, temp: float, top_k: int, mirostat_mode: int, logits_processor: Any) -> int:
    """The ``k`` the steps after the grammar look at; 0 when a shortlist cannot be exact."""
    if logits_processor is not None or mirostat_mode != 0:
        return 0
    if temp == 0.0:
        return 1
    if temp < 0.0 or top_k <= 0:
        return 0
    return top_k


class ShortlistLlama(Llama):
    """``Llama`` whose grammar-constrained sampler chains get the shortlist step."""

    # a private method: llama-cpp-python 0.3.x (the extra's <0.4) builds a chain per completion
    def _init_sampler(self, *args: Any, **kwargs: Any) -> Any:
        chain = super()._init_sampler(*args, **kwargs)
        bound = inspect.signature(super()._init_sampler).bind(*args, **kwargs)
        bound.apply_defaults()
        given = bound.arguments
        if given.get("grammar") is None:
            return chain
        k = shortlist_width(
            temp=float(given["temp"]),
            top_k=int(given["top_k"]),
            mirostat_mode=int(given["mirostat_mode"]),
            logits_processor=given["logits_processor"],
        )
        if k == 0:
            return chain
        index = _grammar_index(chain)
        if index is not None:
            install_shortlist(chain, index, k)
        return chain


# llama.cpp names the grammar sampler "grammar"; a chain with custom samplers has no names
def _grammar_index(chain: Any) -> int | None:
    native = chain.sampler
    for i in range(llama_cpp.llama_sampler_chain_n(native)):
        name = llama_cpp.llama_sampler_name(llama_cpp.llama_sampler_chain_get(native, i))
        if name == b"grammar":
            return i
    return None


def install_shortlist(chain: Any, grammar_index: int, k: int) -> None:
    """Put the shortlist step before the chain's grammar sampler; ``k`` is at least 1."""
    native = chain.sampler
    grammar = llama_cpp.llama_sampler_chain_get(native, grammar_index)
    width = max(SHORTLIST, k)

    def check(candidates: Any) -> None:
        llama_cpp.llama_sampler_apply(grammar, ctypes.byref(candidates))

    def apply(cur_p: Any) -> None:
        shortlist(cur_p.contents, check, width=width, k=k)

    step = CustomSampler(apply)  # made before the chain is taken apart: nothing below raises
    # chain.custom_samplers keeps the step alive while llama.cpp holds its pointer, and takes
    # it out of the chain before the chain is freed
    # llama.cpp's chain has no insert: take the grammar and what follows off, add the
    # shortlist step, put them back in order (ownership goes back to the chain).
    tail = [
        llama_cpp.llama_sampler_chain_remove(native, grammar_index)
        for _ in range(llama_cpp.llama_sampler_chain_n(native) - grammar_index)
    ]
    llama_cpp.llama_sampler_chain_add(native, step.get_sampler())
    chain.custom_samplers.append((llama_cpp.llama_sampler_chain_n(native) - 1, step))
    for sampler in tail:
        llama_cpp.llama_sampler_chain_add(native, sampler)


def shortlist(cur: Any, check: Callable[[Any], None], *, width: int, k: int) -> bool:
    """Shrink ``cur`` to the allowed tokens of its ``width`` best if ``k`` or more are allowed.

    ``check`` sets disallowed logits to -inf without advancing the grammar. Returns whether
    ``cur`` shrank; it then holds them best logit first, ties in their order.
    """
    size = int(cur.size)
    if size <= width:
        return False
    address = ctypes.addressof(cur.data.contents)
    buffer = (ctypes.c_char * (size * _TOKEN_DATA.itemsize)).from_address(address)
    view = np.frombuffer(memoryview(buffer), dtype=_TOKEN_DATA, count=size)
    logits = view["logit"]
    top = logits[np.argpartition(logits, size - width)[size - width :]]
    if not np.isfinite(top).all():
        return False  # NaN or an infinite score among the best: the full pass decides
    # the ``width`` best by logit, the earlier entry first among ties (greedy's rule; llama.cpp
    # fills the array in token id order): argpartition alone picks any of the tied at the cut
    threshold = top.min()
    above = np.flatnonzero(logits > threshold)
    tied = np.flatnonzero(logits == threshold)[: width - len(above)]
    best = np.concatenate([above, tied])
    best = best[np.lexsort((best, -logits[best]))]
    candidates = (llama_cpp.llama_token_data * width)()
    checked = np.frombuffer(memoryview(candidates), dtype=_TOKEN_DATA)
    checked[:] = view[best]
    check(llama_cpp.llama_token_data_array(data=candidates, size=width, selected=-1, sorted=False))
    allowed = checked[np.isfinite(checked["logit"])]
    # every token left out scores no higher than the k allowed ones kept, so greedy picks the
    # same token and top-k keeps the same k (sampling differs only where scores tie exactly)
    if len(allowed) < k:
        return False
    view[: len(allowed)] = allowed
    cur.size = len(allowed)
    cur.selected = -1
    cur.sorted = False
    return True
