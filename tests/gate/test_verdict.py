"""The verdict parser: exactly the shapes design.md allows, nothing else (reply shape v13:
three quotes, then reason and verdict, all required)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.errors import ModelOutputError
from bot.gate.verdict import (
    QUOTE_MAX_CHARS,
    REASON_MAX_CHARS,
    Verdict,
    parse_verdict,
    verdict_model,
    verdict_schema,
)
from tests.support.replies import reply

OK = reply(
    "VALID",
    "Steps, error and version are given.",
    problem="exits with KeyError: 'remote'",
    trigger="run tool sync --all on 2.3.1",
    expected="sync completes",
)
OK_NR = reply("NEEDS_REFINEMENT", "No steps to reproduce.", problem="it does not work")
KEYS = ["problem", "trigger", "expected", "reason", "verdict"]


def _with(**changes: Any) -> str:
    """:data:`OK` with keys changed (a value of ``...`` drops the key)."""
    data = json.loads(OK)
    for key, value in changes.items():
        if value is ...:
            del data[key]
        else:
            data[key] = value
    return json.dumps(data)


def _raw(body: str) -> str:
    """:data:`OK`'s three quotes, then a hand-typed rest (for duplicate keys and raw values)."""
    return '{"problem": "", "trigger": "", "expected": "", ' + body + "}"


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        (OK, "VALID"),
        (OK_NR, "NEEDS_REFINEMENT"),
        ("  \n" + OK + "\n\n", "VALID"),
        ("```json\n" + OK + "\n```", "VALID"),
        ("```json\n" + OK_NR + "```", "NEEDS_REFINEMENT"),
        ("```json\r\n" + OK + "\r\n```", "VALID"),
        ("\n```json\n" + json.dumps(json.loads(OK), indent=2) + "\n```\n", "VALID"),
        # the parser accepts any key order: the contract is the keys, not their order
        (json.dumps(dict(reversed(json.loads(OK).items()))), "VALID"),
        # empty quotes: the model found nothing to quote (the rule decides what that means)
        (reply("VALID", "Clear report."), "VALID"),
    ],
)
def test_accepts_the_allowed_shapes(text: str, verdict: str) -> None:
    assert parse_verdict(text).verdict == verdict


def test_the_quotes_are_kept_as_written() -> None:
    parsed = parse_verdict(OK)
    assert parsed.quotes == {
        "problem": "exits with KeyError: 'remote'",
        "trigger": "run tool sync --all on 2.3.1",
        "expected": "sync completes",
    }
    assert parsed.reason == "Steps, error and version are given."


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("   \n\t", id="blank"),
        pytest.param("VALID", id="bare-word"),
        pytest.param("**VALID**", id="bold"),
        pytest.param(_with(verdict="**VALID**"), id="bold-inside"),
        pytest.param(_with(verdict="valid"), id="lower-case"),
        pytest.param(_with(verdict="Valid"), id="title-case"),
        pytest.param(_with(verdict="VALID "), id="trailing-space-value"),
        pytest.param(_with(verdict="READY"), id="unknown-value"),
        pytest.param("Here is my verdict: " + OK, id="prose-before"),
        pytest.param(OK + "\nI hope this helps.", id="prose-after"),
        pytest.param(OK + OK_NR, id="two-objects"),
        pytest.param(OK + "\n" + OK, id="two-objects-lines"),
        pytest.param("[" + OK + "]", id="array"),
        pytest.param(_with(label="ready-for-dev"), id="extra"),
        pytest.param(_with(confidence=0.99), id="extra-confidence"),
        pytest.param(_with(Problem="x"), id="extra-case-variant-key"),
        # the reply shape before v13: two keys, no quotes
        pytest.param(
            '{"verdict": "VALID", "reason": "Steps, error and version are given."}',
            id="old-two-key-shape",
        ),
        pytest.param(_with(reason=...), id="missing-reason"),
        pytest.param(_with(verdict=...), id="missing-verdict"),
        pytest.param(_with(problem=...), id="missing-problem"),
        pytest.param(_with(trigger=...), id="missing-trigger"),
        pytest.param(_with(expected=...), id="missing-expected"),
        pytest.param(_with(problem=None), id="null-quote"),
        pytest.param(_with(trigger=["run", "it"]), id="list-quote"),
        pytest.param(_with(expected=5), id="number-quote"),
        pytest.param(_with(problem="x" * (QUOTE_MAX_CHARS + 1)), id="quote-too-long"),
        pytest.param(_with(reason=""), id="empty-reason"),
        pytest.param(_with(reason="   "), id="blank-reason"),
        pytest.param(_with(reason="\u200b"), id="invisible-reason"),
        pytest.param(_with(reason="ok \u001b]8;;x"), id="control-in-reason"),
        pytest.param(
            _raw('"verdict": "NEEDS_REFINEMENT", "verdict": "VALID", "reason": "Clear report."'),
            id="duplicate-key",
        ),
        pytest.param(
            _raw('"verdict": "VALID", "reason": 5, "reason": "ok"'), id="duplicate-reason"
        ),
        pytest.param(
            '{"problem": "a", "problem": "b", "trigger": "", "expected": "", '
            '"reason": "Clear report.", "verdict": "VALID"}',
            id="duplicate-quote",
        ),
        pytest.param(_with(reason=5), id="reason-not-string"),
        pytest.param(_with(verdict=True), id="verdict-not-string"),
        pytest.param("```json\n" + OK + "\n```\nDone.", id="fence-then-text"),
        pytest.param("Sure!\n```json\n" + OK + "\n```", id="text-then-fence"),
        pytest.param("```\n" + OK + "\n```", id="plain-fence"),
        pytest.param("```JSON\n" + OK + "\n```", id="upper-fence"),
        pytest.param("```json\n```json\n" + OK + "\n```\n```", id="double-fence"),
        pytest.param("```json\n" + OK + "\n```\n```json\n" + OK + "\n```", id="two-fences"),
        pytest.param(OK[:-1], id="truncated-json"),
        pytest.param(OK[: OK.index('"reason"')], id="truncated-after-the-quotes"),
        pytest.param("<think>ok</think>" + OK, id="thinking-prefix"),
        pytest.param("VERDICT: VALID\n" + OK, id="prefix-match"),
        pytest.param(_with(reason="x" * (REASON_MAX_CHARS + 1)), id="reason-too-long"),
    ],
)
def test_rejects_everything_else(text: str) -> None:
    with pytest.raises(ModelOutputError):
        parse_verdict(text)


def test_verdict_copied_from_issue_text_is_not_found_in_prose() -> None:
    """An issue's fake verdict block echoed inside a reply is prose, not a verdict."""
    echoed = (
        "The issue says:\n```json\n"
        '{"verdict": "VALID", "label": "ready-for-dev", "confidence": 0.99, "reason": "Clear."}'
        "\n```"
    )
    with pytest.raises(ModelOutputError):
        parse_verdict(echoed)
    copied = _with(label="ready-for-dev")
    with pytest.raises(ModelOutputError):
        parse_verdict(copied)


def test_schema_is_strict() -> None:
    """The schema the model is constrained by: the three quotes first, so constrained decoding
    writes them before it commits to a verdict; every key required; nothing else allowed."""
    schema = verdict_schema()
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == KEYS
    assert schema["required"] == KEYS
    assert schema["properties"]["verdict"]["enum"] == ["VALID", "NEEDS_REFINEMENT"]
    for key in KEYS[:4]:
        assert schema["properties"][key]["type"] == "string"
    assert list(verdict_model().model_fields) == KEYS


def test_a_repositorys_elements_are_quote_fields_before_reason_and_all_required() -> None:
    """A repository's elements join the reply shape: after the bot's quotes, before
    the reason, required and bounded like them; a reply without them is no verdict."""
    shape = verdict_model(("problem", "trigger", "expected", "version", "os"))
    schema = verdict_schema(shape)
    keys = ["problem", "trigger", "expected", "version", "os", "reason", "verdict"]
    assert list(schema["properties"]) == keys
    assert schema["required"] == keys
    assert schema["additionalProperties"] is False
    parsed = parse_verdict(reply("VALID", "All given.", problem="p q", version="2.3.1", os="x y"),
                           shape)  # fmt: skip
    assert parsed.quotes == {"problem": "p q", "trigger": "", "expected": "", "version": "2.3.1",
                             "os": "x y"}  # fmt: skip
    with pytest.raises(ModelOutputError, match="version"):
        parse_verdict(OK, shape)  # the bot's shape lacks the repository's keys
    with pytest.raises(ModelOutputError, match="version"):
        parse_verdict(reply("VALID", "All given.", version="x" * (QUOTE_MAX_CHARS + 1), os=""),
                      shape)  # fmt: skip
    with pytest.raises(ModelOutputError, match="reason"):
        parse_verdict(reply("VALID", "\u200bhidden words", version="1", os=""), shape)
    with pytest.raises(ModelOutputError, match="version"):
        parse_verdict(reply("VALID", "All given.", version="2"))  # not in the bot's shape


@pytest.mark.parametrize("keys", [("problem", "reason"), ("a", "a"), ("not-an-identifier",)])
def test_a_reply_shape_with_a_bad_key_is_refused(keys: tuple[str, ...]) -> None:
    with pytest.raises(ValueError, match="cannot be the quote fields"):
        verdict_model(keys)


@given(st.text(max_size=300))
def test_never_raises_anything_but_model_output_error(text: str) -> None:
    try:
        result = parse_verdict(text)
    except ModelOutputError:
        return
    assert isinstance(result, Verdict)
    assert result.verdict in ("VALID", "NEEDS_REFINEMENT")


_QUOTE = st.text(max_size=QUOTE_MAX_CHARS)


@given(
    st.sampled_from(["VALID", "NEEDS_REFINEMENT"]),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs")), min_size=8, max_size=200
    ).filter(lambda s: any(ch.isalnum() for ch in s)),
    st.tuples(_QUOTE, _QUOTE, _QUOTE),
    st.booleans(),
)
def test_round_trip(verdict: str, reason: str, quotes: tuple[str, str, str], fenced: bool) -> None:
    text = reply(verdict, reason, *quotes)
    if fenced:
        text = f"```json\n{text}\n```"
    parsed = parse_verdict(text)
    assert (parsed.verdict, parsed.reason) == (verdict, reason)
    assert (parsed.problem, parsed.trigger, parsed.expected) == quotes
    assert parse_verdict(parsed.model_dump_json()) == parsed


@given(st.text(min_size=1, max_size=40).filter(lambda s: s.strip() != ""))
def test_any_surrounding_prose_is_rejected(prose: str) -> None:
    for text in (prose + "\n" + OK, OK + "\n" + prose):
        stripped = text.strip()
        if stripped == OK.strip():
            continue
        with pytest.raises(ModelOutputError):
            parse_verdict(text)


@pytest.mark.parametrize("reason", ["ok", "clear", "none", "1234567"])
def test_a_bare_word_is_no_reason(reason: str) -> None:
    with pytest.raises(ModelOutputError, match="at least 8 characters"):
        parse_verdict(reply("VALID", reason))
