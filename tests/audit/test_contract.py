"""The seven-section contract checker: every rule, every violation, and its invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.audit.checker import SegmentRef, check_response
from bot.audit.contract import (
    AUDITOR_RULES,
    CONFIDENCES,
    RULES,
    SECTIONS,
    VERDICT_RULES,
    VERDICTS,
    Section,
    heading,
    one_of,
    render_sections,
    section,
)
from bot.audit.structured import AuditJSON, Defect, parse_audit_json
from bot.errors import ModelOutputError

CODE = """def read_config(path):
    handle = open(path)
    data = handle.read()
    return parse(data)
"""
SEG = SegmentRef("src/config.py", 10, 13, CODE)

GOOD = {
    "bottom_line": "read_config opens the file and never closes the handle.",
    "verified_defects": (
        "- Line 11: the handle from open() is never closed, leaking a descriptor per call."
    ),
    "non_blocking_risks": "- Large files are read into memory at once.",
    "assumptions": "- parse() raises on invalid input.",
    "future_improvements": "None",
    "verdict": "FIX",
    "confidence": "High",
}


def rules_of(text: str) -> set[str]:
    return {v.rule for v in check_response(text, SEG).violations}


def with_(**changes: str) -> str:
    """The canonical response with some section bodies (by key) changed."""
    return render_sections({**GOOD, **changes})


def test_canonical_response_is_accepted() -> None:
    result = check_response(render_sections(GOOD), SEG)
    assert result.ok, result.violations
    assert result.sections["verdict"] == "FIX"


def test_headings_come_from_the_single_definition() -> None:
    assert [heading(s) for s in SECTIONS] == [
        "## 1. Bottom line",
        "## 2. Verified defects",
        "## 3. Non-blocking risks",
        "## 4. Assumptions",
        "## 5. Future improvements",
        "## 6. Verdict",
        "## 7. Confidence",
    ]


CASES: list[tuple[str, str, str]] = [
    ("preamble", "Here is my audit.\n" + render_sections(GOOD), "preamble"),
    ("missing", render_sections(GOOD).replace("## 4. Assumptions\n", ""), "missing_section"),
    ("misspelled", render_sections(GOOD).replace("## 4. Assumptions", "### Assumptions"),
     "missing_section"),
    ("duplicate", render_sections(GOOD) .replace("## 5. Future improvements\nNone",
     "## 5. Future improvements\nNone\n\n## 3. Non-blocking risks\nNone"), "duplicate_section"),
    ("order", render_sections(GOOD).replace("## 2. Verified defects", "## X").replace(
        "## 4. Assumptions", "## 2. Verified defects").replace("## X", "## 4. Assumptions"),
     "order"),
    ("empty", with_(future_improvements=""), "empty_section"),
    ("bottom-two-paragraphs", with_(bottom_line="read_config leaks.\n\nAlso other things."),
     "bottom_line"),
    ("bottom-unrelated", with_(bottom_line="Looks like a reasonable change overall."),
     "bottom_line"),
    ("defect-no-line", with_(verified_defects="- The handle is never closed."),
     "defect_citation"),
    ("defect-out-of-range", with_(verified_defects="- Line 99: the handle is never closed."),
     "defect_citation"),
    ("defect-quote-elsewhere", with_(verified_defects="- Line 10: `handle.read()` leaks."),
     "defect_quote"),
    ("defect-quote-invented", with_(verified_defects="- Line 12 (resource leak): `close()` x"),
     "defect_quote"),
    ("verdict-bold", with_(verdict="**FIX**"), "verdict_value"),
    ("verdict-case", with_(verdict="fix"), "verdict_value"),
    ("verdict-prose", with_(verdict="FIX, because of the leak"), "verdict_value"),
    ("confidence-case", with_(confidence="high"), "confidence_value"),
    ("trailing", render_sections(GOOD) + "\nLet me know if you need more.", "trailing_text"),
    ("self-correction", with_(non_blocking_risks="- Self-Correction: actually fine."),
     "forbidden_phrase"),
    ("think", "<think>hmm</think>\n" + render_sections(GOOD), "forbidden_phrase"),
    ("defects-not-fix", with_(verdict="GO_WITH_NOTES"), "verdict_inconsistent"),
    ("fix-without-defects", with_(verified_defects="None"), "verdict_inconsistent"),
    ("soft-go", with_(verified_defects="None", verdict="GO"), "soft_go"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "rule"), CASES, ids=[c[0] for c in CASES])
def test_each_broken_rule_is_reported(name: str, text: str, rule: str) -> None:
    assert rule in rules_of(text)


def test_every_rule_has_a_case() -> None:
    """Every code but the auditor's own (tests/audit/test_auditor.py) has a case here."""
    assert {rule for _, _, rule in CASES} == set(RULES) - set(AUDITOR_RULES)
    assert set(AUDITOR_RULES) < set(RULES)


def test_the_verdict_rules_follow_the_verdicts() -> None:
    """One rule per verdict, in order; section 6's rule lists them (the table in docs/audit.md,
    checked by tests/docs/test_docs.py)."""
    assert tuple(r.verdict for r in VERDICT_RULES) == VERDICTS
    assert section("verdict").rule == f"exactly {one_of(VERDICTS)}"
    assert section("confidence").rule == f"exactly {one_of(CONFIDENCES)}"
    assert one_of(("A", "B", "C")) == "A, B or C"


@pytest.mark.parametrize(
    ("text", "rule", "key", "message"),
    [
        (with_(bottom_line="read_config.\n\nMore."), "bottom_line", "bottom_line",
         "Section 1 must be a single paragraph."),
        (with_(verdict="fix"), "verdict_value", "verdict",
         f"Section 6 must be exactly {one_of(VERDICTS)}."),
        (render_sections(GOOD) + "\nMore.", "trailing_text", "confidence",
         "Nothing may follow Section 7's value."),
        (with_(verified_defects="None"), "verdict_inconsistent", "verified_defects",
         "The verdict is FIX but Section 2 lists no defect: list each defect you found in "
         "Section 2 with its line, or use GO or GO_WITH_NOTES if there is none."),
        (with_(verified_defects="None", verdict="GO"), "soft_go", None,
         "Risks are listed, so use GO_WITH_NOTES, not GO."),
    ],
)  # fmt: skip
def test_a_violation_carries_its_section(
    text: str, rule: str, key: str | None, message: str
) -> None:
    """The section is data on the violation; the message names it only through it."""
    (violation,) = [v for v in check_response(text, SEG).violations if v.rule == rule]
    assert violation.section == key
    assert violation.message == message  # the markdown wording
    as_field = message.replace(f"Section {section(key).number}", f'"{key}"') if key else message
    assert violation.worded(lambda s: f'"{s.key}"') == as_field  # the JSON repair's wording


def test_text_from_the_response_is_never_reworded() -> None:
    """A defect's own words that mention a section stay as written, whatever the naming."""
    text = with_(verified_defects="- Section 3 is wrong, see section 4")
    (violation,) = check_response(text, SEG).violations
    assert violation.section == "verified_defects"
    assert violation.worded(lambda s: f'"{s.key}"') == (
        "Defect '- Section 3 is wrong, see section 4' cites no line number."
    )


def test_all_violations_are_returned_not_just_the_first() -> None:
    text = "Sure!\n" + with_(verdict="fix", confidence="very high") + "\nThanks"
    assert {"preamble", "verdict_value", "confidence_value"} <= rules_of(text)


@pytest.mark.parametrize(
    "text", ["", "   ", "GO", "## 1. Bottom line", "\x00\x01", "## 6. Verdict\nGO\n" * 3]
)
def test_degenerate_inputs_are_rejected_without_raising(text: str) -> None:
    assert not check_response(text, SEG).ok


# --- properties -------------------------------------------------------------------------------

WORDS = st.text(alphabet=st.sampled_from("abcdefghij klmnop,;"), min_size=1, max_size=40).map(
    lambda s: " ".join(s.split()) or "ok"
)


@st.composite
def valid_bodies(draw: st.DrawFn) -> dict[str, str]:
    defects = draw(st.lists(st.tuples(st.integers(SEG.start, SEG.end), WORDS), max_size=3))
    risks = draw(st.lists(WORDS, max_size=3))
    if defects:
        verdict = "FIX"
    elif risks:
        verdict = "GO_WITH_NOTES"
    else:
        verdict = draw(st.sampled_from(["GO", "GO_WITH_NOTES"]))
    listed = lambda items: "\n".join(f"- {i}" for i in items) or "None"  # noqa: E731
    return {
        "bottom_line": f"read_config {draw(WORDS)}",
        "verified_defects": listed([f"Line {n}: {w}" for n, w in defects]),
        "non_blocking_risks": listed(risks),
        "assumptions": listed(draw(st.lists(WORDS, max_size=2))),
        "future_improvements": listed(draw(st.lists(WORDS, max_size=2))),
        "verdict": verdict,
        "confidence": draw(st.sampled_from(CONFIDENCES)),
    }


@given(valid_bodies())
def test_any_valid_rendering_is_accepted(bodies: dict[str, str]) -> None:
    result = check_response(render_sections(bodies), SEG)
    assert result.ok, result.violations


@given(valid_bodies(), st.sampled_from(SECTIONS))
def test_removing_any_section_reports_it(bodies: dict[str, str], removed: Section) -> None:
    text = render_sections(bodies).replace(heading(removed) + "\n", "")
    missing = [v for v in check_response(text, SEG).violations if v.rule == "missing_section"]
    assert [v.section for v in missing] == [removed.key]


@given(valid_bodies(), st.text(min_size=1, max_size=30).filter(lambda s: s.strip() != ""))
def test_any_preamble_is_reported(bodies: dict[str, str], prefix: str) -> None:
    assert "preamble" in rules_of(prefix + "\n" + render_sections(bodies))


@given(st.text(max_size=500))
def test_any_text_gets_checker_codes_with_messages(text: str) -> None:
    """Never raises; every violation is one of the checker's codes, with a message."""
    result = check_response(text, SEG)
    checker_rules = set(RULES) - set(AUDITOR_RULES)
    assert all(v.rule in checker_rules and v.message for v in result.violations)
    assert result.ok == (not result.violations)


# --- JSON mode ---------------------------------------------------------------------------------


def test_json_fields_are_the_section_keys() -> None:
    assert list(AuditJSON.model_fields) == [s.key for s in SECTIONS]


def test_json_reply_renders_to_an_accepted_response() -> None:
    audit = AuditJSON(
        bottom_line="read_config leaks the file handle.",
        verified_defects=[
            Defect(line=11, quote="open(path)", category="resource leak", failure="never closed")
        ],
        non_blocking_risks=[],
        assumptions=["parse() is pure."],
        future_improvements=[],
        verdict="FIX",
        confidence="Medium",
    )
    parsed = parse_audit_json(audit.model_dump_json())
    result = check_response(render_sections(parsed.bodies()), SEG)
    assert result.ok, result.violations
    assert result.sections["non_blocking_risks"] == "None"


def test_json_list_of_only_none_is_an_empty_section_not_a_risk() -> None:
    audit = AuditJSON(
        bottom_line="read_config returns the parsed file.",
        verified_defects=[],
        non_blocking_risks=["None"],
        assumptions=["n/a", "parse() is pure."],
        future_improvements=["none."],
        verdict="GO",
        confidence="High",
    )
    result = check_response(render_sections(audit.bodies()), SEG)
    assert result.ok, result.violations
    assert (result.sections["non_blocking_risks"], result.sections["future_improvements"]) == (
        "None",
        "None",
    )
    assert result.sections["assumptions"] == "- parse() is pure."


def test_fix_without_defects_asks_for_the_defects_or_another_verdict() -> None:
    audit = AuditJSON(
        bottom_line="read_config leaks the file handle.",
        verified_defects=[],
        non_blocking_risks=[],
        assumptions=[],
        future_improvements=[],
        verdict="FIX",
        confidence="High",
    )
    result = check_response(render_sections(audit.bodies()), SEG)
    [violation] = result.violations
    assert violation.rule == "verdict_inconsistent"
    assert "list each defect you found in Section 2 with its line" in violation.message


def test_json_reply_outside_the_schema_is_an_output_error() -> None:
    with pytest.raises(ModelOutputError):
        parse_audit_json('{"bottom_line": "x"}')
