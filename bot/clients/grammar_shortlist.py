"""Grammar-constrained sampling that checks the grammar on a shortlist first (embedded backend).

llama-cpp-python's grammar sampler checks every token of the vocabulary (151,936 for Qwen2.5-Coder)
against the JSON schema's grammar before the greedy or top-k step picks among them, which made it a
large share of every generated token's time (docs/performance.md). Those steps only ever look at the
best ``k`` tokens the grammar allows (``k`` = 1 for greedy decoding, ``top_k`` otherwise).

The shortlist step (:func:`install_shortlist`) goes in the sampler chain just before the grammar
sampler. On each token it takes the :data:`SHORTLIST` highest-scoring tokens (``k`` of them at
least), asks the grammar about those only, and when at least ``k`` of them are allowed it hands
the chain just those allowed tokens: every token left out scores no higher than the ``k``
allowed ones kept, so the greedy or top-k step picks from the same ``k`` tokens as it would
after checking the whole vocabulary. Greedy decoding (the gate) picks the same token always:
among tied scores the earlier token, as llama.cpp's greedy step does. Top-k sampling (the
audit) keeps the same ``k`` tokens; only where scores tie exactly can llama.cpp's unstable
sort order them differently, and a sampled token differ. When fewer than ``k`` are allowed,
or a score among the best is NaN or infinite, the chain runs as before, on every token. This
is llama.cpp's own remedy (``common_sampler_sample`` samples first and checks the grammar on
the pick), made exact for greedy decoding.

The audit samples with ``top_k`` 40: where the JSON grammar allows fewer than 40 tokens
(between keys and values) the full pass still runs.

Not used (the chain left as llama-cpp-python built it) when a logits processor or mirostat is
in the chain, or when sampling is untruncated (``temp < 0``, or ``top_k <= 0`` with a positive
temperature): then every token can matter.
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
    """How many allowed tokens the steps after the grammar look at (``k``), or 0 when the
    shortlist cannot be exact for this chain (see the module docstring)."""
    if logits_processor is not None or mirostat_mode != 0:
        return 0
    if temp == 0.0:
        return 1
    if temp < 0.0 or top_k <= 0:
        return 0
    return top_k


class ShortlistLlama(Llama):
    """``llama_cpp.Llama`` whose grammar-constrained sampler chains get the shortlist step.

    Overrides ``Llama._init_sampler``, a private method (llama-cpp-python 0.3.x, hence the
    extra's ``<0.4``, builds a new chain there for every completion): the chain is built as
    the library builds it, then :func:`install_shortlist` puts the step before its grammar
    sampler when :func:`shortlist_width` allows. A chain without a grammar sampler is left
    alone.
    """

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


def _grammar_index(chain: Any) -> int | None:
    """The position of the chain's grammar sampler (llama.cpp names it ``grammar``). Only for
    chains without custom samplers: llama-cpp-python gives those no name function."""
    native = chain.sampler
    for i in range(llama_cpp.llama_sampler_chain_n(native)):
        name = llama_cpp.llama_sampler_name(llama_cpp.llama_sampler_chain_get(native, i))
        if name == b"grammar":
            return i
    return None


def install_shortlist(chain: Any, grammar_index: int, k: int) -> None:
    """Put the shortlist step before the grammar sampler of a llama-cpp-python sampler chain.

    Args:
        chain: a ``llama_cpp._internals.LlamaSampler`` whose ``grammar_index``-th sampler is
            the grammar, as ``Llama._init_sampler`` builds it.
        grammar_index: the grammar sampler's position in the chain.
        k: :func:`shortlist_width` for the chain (≥ 1).

    The step is llama-cpp-python's ``CustomSampler``: ``chain.custom_samplers`` keeps it alive
    while llama.cpp holds its C pointer, and takes it out of the chain before the chain is
    freed.
    """
    native = chain.sampler
    grammar = llama_cpp.llama_sampler_chain_get(native, grammar_index)
    width = max(SHORTLIST, k)

    def check(candidates: Any) -> None:
        llama_cpp.llama_sampler_apply(grammar, ctypes.byref(candidates))

    def apply(cur_p: Any) -> None:
        shortlist(cur_p.contents, check, width=width, k=k)

    step = CustomSampler(apply)  # made before the chain is taken apart: nothing below raises
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
    """Shrink ``cur`` to the allowed tokens among its ``width`` best when at least ``k`` are
    allowed; otherwise leave it as it is.

    Args:
        cur: a ``llama_token_data_array`` (the chain's candidates: token id, logit, p).
        check: the grammar: sets the logit of each token it does not allow to -inf in the
            ``llama_token_data_array`` it is given (``llama_sampler_apply`` of the grammar
            sampler, which reads the grammar's state and does not advance it).
        width: how many of the best tokens to check (≥ ``k``).
        k: how many allowed tokens the chain's next steps look at.

    Returns:
        Whether ``cur`` was shrunk. When shrunk it holds the allowed tokens of the shortlist,
        best logit first (among equal logits, in their order in ``cur``).
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
    if len(allowed) < k:
        return False
    view[: len(allowed)] = allowed
    cur.size = len(allowed)
    cur.selected = -1
    cur.sorted = False
    return True
