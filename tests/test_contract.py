"""The seven-section contract checker: every rule, every violation, and its invariants."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.audit.contract import (
    RULES,
    SECTIONS,
    SegmentRef,
    check_response,
    heading,
    render_sections,
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
    1: "read_config opens the file and never closes the handle.",
    2: "- Line 11: the handle from open() is never closed, leaking a descriptor per call.",
    3: "- Large files are read into memory at once.",
    4: "- parse() raises on invalid input.",
    5: "None",
    6: "FIX",
    7: "High",
}


def rules_of(text: str) -> set[str]:
    return {v.rule for v in check_response(text, SEG).violations}


def with_(**changes: str) -> str:
    bodies = dict(GOOD)
    bodies.update({int(k[1:]): v for k, v in changes.items()})
    return render_sections(bodies)


def test_canonical_response_is_accepted() -> None:
    result = check_response(render_sections(GOOD), SEG)
    assert result.ok, result.violations
    assert result.sections[6] == "FIX"


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
    ("empty", with_(s5=""), "empty_section"),
    ("bottom-two-paragraphs", with_(s1="read_config leaks.\n\nAlso other things."),
     "bottom_line"),
    ("bottom-unrelated", with_(s1="Looks like a reasonable change overall."), "bottom_line"),
    ("defect-no-line", with_(s2="- The handle is never closed."), "defect_citation"),
    ("defect-out-of-range", with_(s2="- Line 99: the handle is never closed."),
     "defect_citation"),
    ("verdict-bold", with_(s6="**FIX**"), "verdict_value"),
    ("verdict-case", with_(s6="fix"), "verdict_value"),
    ("verdict-prose", with_(s6="FIX, because of the leak"), "verdict_value"),
    ("confidence-case", with_(s7="high"), "confidence_value"),
    ("trailing", render_sections(GOOD) + "\nLet me know if you need more.", "trailing_text"),
    ("self-correction", with_(s3="- Self-Correction: actually fine."), "forbidden_phrase"),
    ("think", "<think>hmm</think>\n" + render_sections(GOOD), "forbidden_phrase"),
    ("defects-not-fix", with_(s6="GO_WITH_NOTES"), "verdict_inconsistent"),
    ("fix-without-defects", with_(s2="None"), "verdict_inconsistent"),
    ("soft-go", with_(s2="None", s6="GO"), "soft_go"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "rule"), CASES, ids=[c[0] for c in CASES])
def test_each_broken_rule_is_reported(name: str, text: str, rule: str) -> None:
    assert rule in rules_of(text)


def test_every_rule_has_a_case() -> None:
    assert {rule for _, _, rule in CASES} == set(RULES)


def test_all_violations_are_returned_not_just_the_first() -> None:
    text = "Sure!\n" + with_(s6="fix", s7="very high") + "\nThanks"
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
def valid_bodies(draw: st.DrawFn) -> dict[int, str]:
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
        1: f"read_config {draw(WORDS)}",
        2: listed([f"Line {n}: {w}" for n, w in defects]),
        3: listed(risks),
        4: listed(draw(st.lists(WORDS, max_size=2))),
        5: listed(draw(st.lists(WORDS, max_size=2))),
        6: verdict,
        7: draw(st.sampled_from(["High", "Medium", "Low"])),
    }


@given(valid_bodies())
def test_any_valid_rendering_is_accepted(bodies: dict[int, str]) -> None:
    result = check_response(render_sections(bodies), SEG)
    assert result.ok, result.violations


@given(valid_bodies(), st.sampled_from(range(1, 8)))
def test_removing_any_section_reports_it(bodies: dict[int, str], number: int) -> None:
    text = render_sections(bodies).replace(heading(SECTIONS[number - 1]) + "\n", "")
    assert "missing_section" in rules_of(text)


@given(valid_bodies(), st.text(min_size=1, max_size=30).filter(lambda s: s.strip() != ""))
def test_any_preamble_is_reported(bodies: dict[int, str], prefix: str) -> None:
    assert "preamble" in rules_of(prefix + "\n" + render_sections(bodies))


@given(st.text(max_size=500))
def test_never_raises(text: str) -> None:
    check_response(text, SEG)


# --- JSON mode ---------------------------------------------------------------------------------


def test_json_fields_are_the_section_keys() -> None:
    assert list(AuditJSON.model_fields) == [s.key for s in SECTIONS]


def test_json_reply_renders_to_an_accepted_response() -> None:
    audit = AuditJSON(
        bottom_line="read_config leaks the file handle.",
        verified_defects=[Defect(line=11, problem="open() without close.")],
        non_blocking_risks=[],
        assumptions=["parse() is pure."],
        future_improvements=[],
        verdict="FIX",
        confidence="Medium",
    )
    parsed = parse_audit_json(audit.model_dump_json())
    result = check_response(render_sections(parsed.bodies()), SEG)
    assert result.ok, result.violations
    assert result.sections[3] == "None"


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
    assert (result.sections[3], result.sections[5]) == ("None", "None")
    assert result.sections[4] == "- parse() is pure."


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
