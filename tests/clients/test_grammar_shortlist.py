"""The grammar shortlist (bot/clients/grammar_shortlist.py) picks what the full grammar pass picks.

The property tests put random scores and random grammars (a set of allowed token ids) through
:func:`shortlist` and compare the steps after the grammar, greedy and top-k, with the same steps
after the grammar checked on every token, as llama-cpp-python does without the shortlist. The
model tests run one loaded model both ways in one process (llama.cpp on this CPU is not
bit-reproducible across processes, so two processes could differ for other reasons).
"""

from __future__ import annotations

import math
from typing import Any

import llama_cpp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.clients import grammar_shortlist
from bot.clients.grammar_shortlist import shortlist, shortlist_width


def _array(logits: list[float]) -> tuple[Any, Any]:
    """A llama_token_data_array in id order, as llama_sampler_sample builds it."""
    data = (llama_cpp.llama_token_data * len(logits))()
    for i, logit in enumerate(logits):
        data[i].id, data[i].logit, data[i].p = i, logit, 0.0
    return data, llama_cpp.llama_token_data_array(
        data=data, size=len(logits), selected=-1, sorted=False
    )


def _grammar(allowed: set[int]) -> Any:
    def check(candidates: Any) -> None:
        for i in range(candidates.size):
            if candidates.data[i].id not in allowed:
                candidates.data[i].logit = -math.inf

    return check


def _entries(cur: Any) -> list[tuple[int, float]]:
    """(id, logit) in array order; NaN as -inf here, so that two arrays compare equal (a NaN
    is never picked by these tests' greedy or top-k either)."""
    return [
        (cur.data[i].id, -math.inf if math.isnan(cur.data[i].logit) else cur.data[i].logit)
        for i in range(cur.size)
    ]


def _greedy(entries: list[tuple[int, float]]) -> int:
    """llama.cpp's greedy step: the first entry with the highest logit."""
    best = 0
    for i, (_, logit) in enumerate(entries):
        if logit > entries[best][1]:
            best = i
    return entries[best][0]


def _top_k(entries: list[tuple[int, float]], k: int) -> set[int]:
    """The k allowed tokens a top-k step keeps (as a set: llama.cpp's partial sort is not
    stable, so the order it gives tied scores is its own either way)."""
    finite = [(token, logit) for token, logit in entries if math.isfinite(logit)]
    return {token for token, _ in sorted(finite, key=lambda e: (-e[1], e[0]))[:k]}


# float32 logits with ties (a few distinct values make equal scores common) and, rarely, a
# score that is not finite
scores = st.lists(
    st.sampled_from([-3.5, -1.0, 0.0, 0.25, 2.0, 7.75])
    | st.floats(-20, 20, width=32)
    | st.sampled_from([-math.inf, math.inf, math.nan]),
    min_size=1,
    max_size=300,
)


@settings(max_examples=300, deadline=None)
@given(logits=scores, data=st.data())
def test_greedy_and_top_k_see_what_the_full_pass_shows_them(logits: list[float], data: Any) -> None:
    n = len(logits)
    allowed = data.draw(st.sets(st.integers(0, n - 1), max_size=n), label="allowed")
    k = data.draw(st.integers(1, 12), label="k")
    width = data.draw(st.integers(k, 80), label="width")
    check = _grammar(allowed)

    _, full = _array(logits)
    check(full)
    reference = _entries(full)

    _, cur = _array(logits)
    before = _entries(cur)
    shrunk = shortlist(cur, check, width=width, k=k)
    after = _entries(cur)

    if not shrunk:
        assert after == before  # the chain runs on every token, as without the shortlist
        return
    assert all(token in allowed for token, _ in after)
    assert len(after) >= k
    if k == 1:
        assert _greedy(after) == _greedy(reference)
    assert _top_k(after, k) == _top_k(reference, k)


@pytest.mark.parametrize("odd", [math.nan, math.inf])
def test_a_score_that_is_not_finite_among_the_best_leaves_every_token(odd: float) -> None:
    logits = [float(i) for i in range(200)]
    logits[170] = odd
    _, cur = _array(logits)
    assert not shortlist(cur, _grammar(set(range(200))), width=64, k=1)
    assert cur.size == 200
    assert cur.data[169].logit == 169.0


def test_a_shortlist_without_enough_allowed_tokens_leaves_every_token() -> None:
    logits = [float(i) for i in range(200)]
    _, cur = _array(logits)
    assert not shortlist(cur, _grammar({0, 1}), width=64, k=1)  # both far below the best 64
    assert cur.size == 200
    _, cur = _array(logits)
    assert shortlist(cur, _grammar({150, 199}), width=64, k=1)
    assert _entries(cur) == [(199, 199.0), (150, 150.0)]


@pytest.mark.parametrize(
    ("temp", "top_k", "mirostat", "processor", "width"),
    [
        (0.0, 40, 0, None, 1),  # greedy: the gate
        (0.2, 40, 0, None, 40),  # the audit's sampling
        (-1.0, 40, 0, None, 0),  # untruncated sampling: every token can be drawn
        (0.7, 0, 0, None, 0),
        (0.2, 40, 2, None, 0),  # mirostat
        (0.0, 40, 0, [lambda ids, logits: logits], 0),  # a logits processor
    ],
)
def test_the_shortlist_applies_only_where_it_is_exact(
    temp: float, top_k: int, mirostat: int, processor: Any, width: int
) -> None:
    got = shortlist_width(
        temp=temp, top_k=top_k, mirostat_mode=mirostat, logits_processor=processor
    )
    assert got == width


@pytest.mark.model
def test_a_real_model_writes_the_same_reply_with_and_without_the_shortlist(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Gemma 3 270M (a 262,144-token vocabulary) on the gate's prompt and schema, greedy and
    sampled: the same text both ways, and the shortlist decided the tokens."""
    from bot.chat import RoleOptions
    from bot.clients.embedded import EmbeddedChatModel, smoke_model_path
    from bot.config import EMBEDDED_N_CTX
    from bot.gate.issue_text import prepare_issue
    from bot.gate.validator import Validator, verdict_schema

    model = EmbeddedChatModel(model_path=smoke_model_path(), n_ctx=EMBEDDED_N_CTX)
    validator = Validator(model, RoleOptions(0.0, 160, 4096, 42), max_body_chars=6000)
    issue = prepare_issue(
        "Login redirects to /undefined",
        "After a password reset, logging in goes to /undefined instead of /dashboard.\n"
        "Steps: request a reset, open the link, set a new password, log in. Version 2.3.1.",
        max_body_chars=6000,
    )
    messages = validator.messages(issue, nonce="a1b2c3d4")
    schema = verdict_schema(validator._reply)
    llm = model._llm()
    shrunk: list[bool] = []
    real = grammar_shortlist.shortlist

    def counting(*args: Any, **kwargs: Any) -> bool:
        shrunk.append(real(*args, **kwargs))
        return shrunk[-1]

    def reply(temperature: float, with_shortlist: bool) -> str:
        if with_shortlist:
            monkeypatch.setattr(grammar_shortlist, "shortlist", counting)
        else:
            monkeypatch.setattr(grammar_shortlist, "install_shortlist", lambda *a: None)
        llm.reset()
        llm._ctx.kv_cache_clear()  # both ways evaluate the whole prompt alike
        options = RoleOptions(temperature, 160, 4096, 42)
        try:
            return model.chat(messages, options=options, schema=schema).text
        finally:
            monkeypatch.undo()

    for temperature in (0.0, 0.7):
        assert reply(temperature, False) == reply(temperature, True)
    assert shrunk
    assert sum(shrunk) >= len(shrunk) // 2
