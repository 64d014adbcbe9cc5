"""The verdict parser: exactly the shapes design.md allows, nothing else."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.errors import ModelOutputError
from bot.triage.verdict import REASON_MAX_CHARS, Verdict, parse_verdict, verdict_schema

OK = '{"verdict": "VALID", "reason": "Steps, error and version are given."}'
OK_NR = '{"verdict": "NEEDS_REFINEMENT", "reason": "No steps to reproduce."}'


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
        ('{"reason": "Clear report.", "verdict": "VALID"}', "VALID"),
    ],
)
def test_accepts_the_allowed_shapes(text: str, verdict: str) -> None:
    assert parse_verdict(text).verdict == verdict


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("   \n\t", id="blank"),
        pytest.param("VALID", id="bare-word"),
        pytest.param("**VALID**", id="bold"),
        pytest.param('{"verdict": "**VALID**", "reason": "x"}', id="bold-inside"),
        pytest.param('{"verdict": "valid", "reason": "x"}', id="lower-case"),
        pytest.param('{"verdict": "Valid", "reason": "x"}', id="title-case"),
        pytest.param('{"verdict": "VALID ", "reason": "x"}', id="trailing-space-value"),
        pytest.param('{"verdict": "READY", "reason": "x"}', id="unknown-value"),
        pytest.param("Here is my verdict: " + OK, id="prose-before"),
        pytest.param(OK + "\nI hope this helps.", id="prose-after"),
        pytest.param(OK + OK_NR, id="two-objects"),
        pytest.param(OK + "\n" + OK, id="two-objects-lines"),
        pytest.param('[{"verdict": "VALID", "reason": "x"}]', id="array"),
        pytest.param('{"verdict": "VALID", "reason": "x", "label": "ready-for-dev"}', id="extra"),
        pytest.param(
            '{"verdict": "VALID", "reason": "x", "confidence": 0.99}', id="extra-confidence"
        ),
        pytest.param('{"verdict": "VALID"}', id="missing-reason"),
        pytest.param('{"reason": "x"}', id="missing-verdict"),
        pytest.param('{"verdict": "VALID", "reason": ""}', id="empty-reason"),
        pytest.param('{"verdict": "VALID", "reason": "   "}', id="blank-reason"),
        pytest.param('{"verdict": "VALID", "reason": "\\u200b"}', id="invisible-reason"),
        pytest.param('{"verdict": "VALID", "reason": "ok \\u001b]8;;x"}', id="control-in-reason"),
        pytest.param(
            '{"verdict": "NEEDS_REFINEMENT", "verdict": "VALID", "reason": "x"}', id="duplicate-key"
        ),
        pytest.param('{"verdict": "VALID", "reason": 5, "reason": "ok"}', id="duplicate-reason"),
        pytest.param('{"verdict": "VALID", "reason": 5}', id="reason-not-string"),
        pytest.param('{"verdict": true, "reason": "x"}', id="verdict-not-string"),
        pytest.param("```json\n" + OK + "\n```\nDone.", id="fence-then-text"),
        pytest.param("Sure!\n```json\n" + OK + "\n```", id="text-then-fence"),
        pytest.param("```\n" + OK + "\n```", id="plain-fence"),
        pytest.param("```JSON\n" + OK + "\n```", id="upper-fence"),
        pytest.param("```json\n```json\n" + OK + "\n```\n```", id="double-fence"),
        pytest.param("```json\n" + OK + "\n```\n```json\n" + OK + "\n```", id="two-fences"),
        pytest.param('{"verdict": "VALID", "reason": "x"', id="truncated-json"),
        pytest.param("<think>ok</think>" + OK, id="thinking-prefix"),
        pytest.param('VERDICT: VALID\n{"verdict": "VALID", "reason": "x"}', id="prefix-match"),
        pytest.param(
            '{"verdict": "VALID", "reason": "' + "x" * (REASON_MAX_CHARS + 1) + '"}',
            id="reason-too-long",
        ),
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
    copied = '{"verdict": "VALID", "label": "ready-for-dev", "reason": "Clear."}'
    with pytest.raises(ModelOutputError):
        parse_verdict(copied)


def test_schema_is_strict() -> None:
    schema = verdict_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == {"verdict", "reason"}
    assert schema["properties"]["verdict"]["enum"] == ["VALID", "NEEDS_REFINEMENT"]


@given(st.text(max_size=300))
def test_never_raises_anything_but_model_output_error(text: str) -> None:
    try:
        result = parse_verdict(text)
    except ModelOutputError:
        return
    assert isinstance(result, Verdict)
    assert result.verdict in ("VALID", "NEEDS_REFINEMENT")


@given(
    st.sampled_from(["VALID", "NEEDS_REFINEMENT"]),
    st.text(
        alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs")), min_size=8, max_size=200
    ).filter(lambda s: any(ch.isalnum() for ch in s)),
    st.booleans(),
)
def test_round_trip(verdict: str, reason: str, fenced: bool) -> None:
    text = json.dumps({"verdict": verdict, "reason": reason})
    if fenced:
        text = f"```json\n{text}\n```"
    parsed = parse_verdict(text)
    assert (parsed.verdict, parsed.reason) == (verdict, reason)


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
        parse_verdict(json.dumps({"reason": reason, "verdict": "VALID"}))
