"""The fixed twins of the segment set and the audit figures
that use them (pair accuracy, defect-line hit rate, GO on clean and on the twins alone)."""

from __future__ import annotations

import difflib
import json
from typing import Any

import pytest

from bot.audit.auditor import Auditor
from bot.audit.contract import render_sections
from bot.config import AUDITOR_OPTIONS
from bot.evaluation.command import BOUNDS
from bot.evaluation.report import Threshold, compare_reports, failed_thresholds, render_report
from bot.evaluation.run import audit_metrics, cited_lines, eval_audit, line_hit
from bot.evaluation.sets import EvalSegment, load_jsonl
from tests.support import ROOT, FakeChatModel

SEGMENTS = load_jsonl(ROOT / "evals" / "segments.jsonl", EvalSegment)
BY_ID = {s.id: s for s in SEGMENTS}
TWINS = [s for s in SEGMENTS if s.twin_of is not None]


def test_every_defect_segment_has_one_fixed_twin_at_the_same_place() -> None:
    defects = [s for s in SEGMENTS if s.defect]
    assert len(BY_ID) == len(SEGMENTS)  # ids are unique
    assert len(defects) >= 21
    assert len(TWINS) == len(defects)
    assert sorted(t.twin_of for t in TWINS if t.twin_of) == sorted(d.id for d in defects)
    for twin in TWINS:
        assert twin.twin_of in BY_ID, twin.id
        defect = BY_ID[twin.twin_of]
        assert defect.defect, twin.id  # a twin repairs a defect segment, not a clean one
        assert twin.id == f"{defect.id}-fixed"
        assert (twin.path, twin.start, twin.language) == (
            defect.path,
            defect.start,
            defect.language,
        )
        assert not twin.defect
        assert twin.defect_lines == []
        assert twin.code != defect.code
        assert twin.rationale.startswith("Fix: ")
        assert len(twin.lines) <= 200
    assert all(s.twin_of is None for s in SEGMENTS if s.defect)  # the link is on the twin


def test_each_twin_changes_the_code_at_the_defect() -> None:
    """The fix touches a known defect line (±1): the twin differs where the defect is, so a model
    that tells the pair apart has read that line."""
    for twin in TWINS:
        defect = BY_ID[str(twin.twin_of)]
        touched: set[int] = set()
        matcher = difflib.SequenceMatcher(a=defect.lines, b=twin.lines, autojunk=False)
        for op, i1, i2, _, _ in matcher.get_opcodes():
            if op != "equal":  # an insertion sits between lines i1 - 1 and i1
                touched.update(range(defect.start + i1 - 1, defect.start + max(i2, i1 + 1)))
        assert line_hit(sorted(touched), defect.defect_lines), twin.id


def _outcome(
    item: EvalSegment, verdict: str | None, cited: list[int] | None = None
) -> dict[str, Any]:
    cited = cited or []
    return {
        "id": item.id,
        "defect": item.defect,
        "twin_of": item.twin_of,
        "status": "first" if verdict else "rejected",
        "verdict": verdict,
        "cited_lines": cited,
        "line_hit": line_hit(cited, item.defect_lines) if item.defect else None,
    }


def test_pair_accuracy_is_zero_for_a_model_that_flags_everything() -> None:
    m = audit_metrics([_outcome(s, "FIX", s.defect_lines) for s in SEGMENTS])
    assert (m["fix_recall"], m["line_hit"]) == (1.0, 1.0)
    assert (m["pairs"], m["pair_accuracy"]) == (len(TWINS), 0.0)
    assert (m["clean_go"], m["twin_go"], m["twins"]) == (0.0, 0.0, len(TWINS))


def test_pair_accuracy_is_one_for_a_model_that_tells_each_pair_apart() -> None:
    m = audit_metrics(
        [
            _outcome(s, "FIX", [s.defect_lines[0]]) if s.defect else _outcome(s, "GO")
            for s in SEGMENTS
        ]
    )
    assert (m["pair_accuracy"], m["fix_recall"], m["line_hit"]) == (1.0, 1.0, 1.0)
    assert (m["clean_go"], m["twin_go"]) == (1.0, 1.0)
    assert m["accepted_first_try"] == 1.0


def test_a_pair_needs_fix_on_the_defect_and_an_accepted_other_verdict_on_the_twin() -> None:
    a, b, c, d = (BY_ID[i] for i in ("py-file-leak", "js-xss", "c-buffer", "java-equals"))
    outcomes = [
        _outcome(a, "FIX"), _outcome(BY_ID["py-file-leak-fixed"], "GO_WITH_NOTES"),  # apart
        _outcome(b, "GO"), _outcome(BY_ID["js-xss-fixed"], "GO"),  # the defect missed
        _outcome(c, "FIX"), _outcome(BY_ID["c-buffer-fixed"], None),  # the twin rejected
        _outcome(d, "FIX"), _outcome(BY_ID["java-equals-fixed"], "FIX"),  # both flagged
        _outcome(BY_ID["py-clean-query"], "GO"),  # clean, not a twin
    ]  # fmt: skip
    m = audit_metrics(outcomes)
    assert (m["pairs"], m["pair_accuracy"]) == (4, 0.25)
    assert m["fix_recall"] == 0.75
    assert m["twin_go"] == pytest.approx(2 / 4)  # GO_WITH_NOTES counts; rejected does not
    assert m["clean_go"] == pytest.approx(3 / 5)  # the twins and the original clean segment
    assert m["rejected"] == pytest.approx(1 / 9)


def test_figures_without_twins_or_pairs_are_none() -> None:
    """A run of the first N segments, or a report from before the twins, has no pairs: the
    figure is absent (None), not 0."""
    m = audit_metrics([_outcome(BY_ID["py-file-leak"], "FIX", [6])])
    assert (m["pairs"], m["pair_accuracy"], m["twins"], m["twin_go"]) == (0, None, 0, None)
    lone_twin = audit_metrics([_outcome(BY_ID["py-file-leak-fixed"], "GO")])
    assert (lone_twin["pairs"], lone_twin["twin_go"], lone_twin["line_hit"]) == (0, 1.0, None)


def test_a_cited_line_hits_within_one_line_of_a_known_defect_line() -> None:
    assert [line_hit([c], [12]) for c in (10, 11, 12, 13, 14)] == [False, True, True, True, False]
    assert line_hit([30, 54], [53, 54, 55])
    assert not line_hit([], [12])


def test_cited_lines_reads_the_markdown_citations_and_a_json_reply() -> None:
    markdown = render_sections(
        {
            "bottom_line": "page starts one page late (see line 99 of the docs).",
            "verified_defects": "- Line 12: start skips page 1 (so does line 30).\n"
            "- Lines 20-22 (off-by-one): `for line in lines[1:]` overruns.",
            "non_blocking_risks": "- Line 40: slow.",
            "verdict": "FIX",
        }
    )
    # each defect's leading citation, in the verified-defects section only
    assert cited_lines(markdown) == [12, 20, 21, 22]
    defects = [{"line": 12, "problem": "p"}, {"line": 9, "quote": "q"}, {"line": "7"},
               {"line": True}]  # fmt: skip
    reply = {"bottom_line": "x", "verified_defects": defects, "verdict": "FIX"}
    assert cited_lines(json.dumps(reply)) == [9, 12]  # ints only (a bool is no line)
    assert cited_lines('{"verdict": "GO", "verified_defects": []}') == []
    assert cited_lines("{not json") == []
    assert cited_lines("") == []


def _audit(name: str, defects: str, verdict: str) -> str:
    return render_sections(
        {
            "bottom_line": f"{name} is reviewed.",
            "verified_defects": defects,
            "non_blocking_risks": "None",
            "assumptions": "None",
            "future_improvements": "None",
            "verdict": verdict,
            "confidence": "High",
        }
    )


def test_eval_audit_reports_the_pair_the_line_and_the_twin(fake_model: FakeChatModel) -> None:
    """Through the auditor and its checker: FIX citing the line below the defect on the defect
    segment, GO on its twin; FIX on both segments of the second pair."""
    items = [BY_ID[i] for i in ("py-off-by-one-range", "py-off-by-one-range-fixed",
                                "js-off-by-one-loop", "js-off-by-one-loop-fixed")]  # fmt: skip
    fake_model.enqueue(
        _audit("page", "- Line 13: the slice starts one page late.", "FIX"),
        _audit("page", "None", "GO"),
        _audit("sumColumn", "- Line 25: returns early.", "FIX"),  # 3 lines from 22: a miss
        _audit("sumColumn", "- Line 22: reads past the end.", "FIX"),
    )
    report = eval_audit(Auditor(fake_model, AUDITOR_OPTIONS), items)
    by_id = {o["id"]: o for o in report["outcomes"]}
    assert by_id["py-off-by-one-range"]["cited_lines"] == [13]
    assert by_id["py-off-by-one-range"]["line_hit"] is True
    assert by_id["js-off-by-one-loop"]["line_hit"] is False
    assert by_id["js-off-by-one-loop-fixed"]["line_hit"] is None  # twins are not scored on lines
    assert by_id["js-off-by-one-loop-fixed"]["twin_of"] == "js-off-by-one-loop"
    assert (report["pairs"], report["pair_accuracy"]) == (2, 0.5)
    assert (report["line_hit"], report["fix_recall"]) == (0.5, 1.0)
    assert (report["clean_go"], report["twin_go"]) == (0.5, 0.5)
    json.dumps(report)  # written as JSON

    text = render_report({"model": "m", "audit_format": "markdown", "audit": report})
    assert "| pair accuracy (FIX on the defect, not on its twin) | 50.0% |" in text
    assert "| defect-line hit (±1) | 50.0% |" in text
    assert "| GO/GO_WITH_NOTES on fixed twins | 50.0% |" in text
    assert "| py-off-by-one-range | yes | first | FIX | 13 ✓ |  |" in text
    assert "| js-off-by-one-loop | yes | first | FIX | 25 ✗ |  |" in text
    old = {"model": "old", "audit_format": "json", "audit": {"fix_recall": 0.25}}
    compared = compare_reports(old, {"model": "new", "audit_format": "json", "audit": report})
    assert "| FIX recall on defects | 25.0% | 100.0% | +75.0% ✓ |" in compared
    assert "| pair accuracy (FIX on the defect, not on its twin) | – | 50.0% |  |" in compared


def test_the_new_bounds_fail_the_run_below_them() -> None:
    """--min-pair-accuracy, --min-line-hit and --min-clean-go bound the new figures (exit 6
    through EvalBelowThreshold, as the other --min-* bounds); an absent figure is not judged."""
    bounds = {option: (section, key) for option, section, key, _ in BOUNDS}
    assert bounds["min_pair_accuracy"] == ("audit", "pair_accuracy")
    assert bounds["min_line_hit"] == ("audit", "line_hit")
    assert bounds["min_clean_go"] == ("audit", "clean_go")
    report = {"audit": {"pair_accuracy": 0.3, "line_hit": 0.6, "clean_go": None}}
    checks = [Threshold("audit", k, 0.4, True) for k in ("pair_accuracy", "line_hit", "clean_go")]
    assert failed_thresholds(report, checks) == ["audit.pair_accuracy = 30.0%, needs ≥ 0.4"]
