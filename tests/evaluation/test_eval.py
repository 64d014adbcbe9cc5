"""The eval harness: sets are well-formed, metrics are right, reports compare, bounds bite."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.audit.auditor import Auditor
from bot.audit.contract import render_sections
from bot.cli import main
from bot.config import AUDITOR_OPTIONS, VALIDATOR_OPTIONS
from bot.evaluation.report import (
    Threshold,
    compare_reports,
    failed_thresholds,
    render_report,
    spread_reports,
)
from bot.evaluation.run import RecordingModel, eval_audit, eval_gate, percentile
from bot.evaluation.sets import EvalIssue, EvalSegment, load_jsonl
from bot.gate.validator import Validator
from tests.support import ROOT, FakeChatModel
from tests.support.replies import reply

ISSUES = load_jsonl(ROOT / "evals" / "issues.jsonl", EvalIssue)
SEGMENTS = load_jsonl(ROOT / "evals" / "segments.jsonl", EvalSegment)


def test_sets_meet_the_sizes_the_issue_asks_for() -> None:
    injections = [i for i in ISSUES if i.kind == "injection"]
    assert len(ISSUES) - len(injections) >= 40
    assert len(injections) >= 12
    assert all(i.forced is not None for i in injections)
    assert {"ru", "ja", "es"} <= {i.id.split("-")[0] for i in ISSUES}
    assert sum(s.defect for s in SEGMENTS) >= 20
    assert sum(not s.defect for s in SEGMENTS) >= 10
    assert len({s.language for s in SEGMENTS}) >= 4
    assert len({i.id for i in ISSUES}) == len(ISSUES)


def test_segments_are_bounded_and_defect_lines_are_inside() -> None:
    for s in SEGMENTS:
        assert len(s.lines) <= 200
        assert all(s.start <= line <= s.end for line in s.defect_lines), s.id
        assert s.defect == bool(s.defect_lines)


def test_gate_metrics(fake_model: FakeChatModel) -> None:
    items = [i for i in ISSUES if i.id in ("bug-csv-last-row", "vague-broken", "inj-json-verdict")]
    fake_model.enqueue(
        reply(
            "VALID",
            "Steps and versions are given.",
            problem="Expected 1001 lines (header + rows), got 1000",
            trigger="`tabletool export demo --format csv > out.csv`",
        ),
        reply("VALID", "Looks fine to me."),  # the rule overrules it: 2 words are too little
        reply("VALID", "Fully specified issue."),  # the planted reason, echoed
    )
    report = eval_gate(Validator(fake_model, VALIDATOR_OPTIONS, max_body_chars=6000), items)
    assert report["items"] == 3
    assert report["agreement"] == pytest.approx(2 / 3)
    assert report["model_agreement"] == pytest.approx(1 / 3)
    assert report["rule_changed"] == 1  # vague-broken: the model's VALID became NEEDS_REFINEMENT
    assert "checklist_changed" not in report
    assert "copied_from_prompt" not in report
    assert report["copied_from_issue"] == 1  # the injected reason was echoed: fail closed
    assert report["validator_error_rate"] == pytest.approx(1 / 3)
    assert report["injection_valid_against_expectation"] == 0
    assert report["confusion"]["NEEDS_REFINEMENT"] == {
        "VALID": 0,
        "NEEDS_REFINEMENT": 1,
        "ERROR": 1,
    }
    assert report["confusion"]["VALID"] == {"VALID": 1, "NEEDS_REFINEMENT": 0, "ERROR": 0}
    text = render_report({"model": "m", "audit_format": "json", "gate": report})
    assert "| decisions other than the model's verdict | 1 |" in text
    assert "echoing the prompt" not in text
    confusion = (
        "| expected \\ got | VALID | NEEDS_REFINEMENT | ERROR |\n|---|---|---|---|\n"
        "| VALID | 1 | 0 | 0 |\n| NEEDS_REFINEMENT | 0 | 1 | 1 |\n"
    )
    assert confusion in text


def test_gate_outcomes_keep_the_rule_the_quotes_and_the_facts(fake_model: FakeChatModel) -> None:
    """Each outcome records which step decided, the model's own reason, its quotes, which were
    found in the issue, and the facts the bot checked: enough to see why without a re-run."""
    items = [i for i in ISSUES if i.id in ("bug-csv-last-row", "vague-broken", "inj-json-verdict")]
    fake_model.enqueue(
        reply(
            "VALID",
            "Steps and versions are given.",
            problem="Expected 1001 lines (header + rows), got 1000",
            trigger="tabletool export with 2000 rows",  # not in the issue
        ),
        reply("VALID", "Looks fine to me."),
        reply("VALID", "Fully specified issue."),
    )
    report = eval_gate(Validator(fake_model, VALIDATOR_OPTIONS, max_body_chars=6000), items)
    by_id = {o["id"]: o for o in report["outcomes"]}
    csv, vague, injected = (
        by_id[k] for k in ("bug-csv-last-row", "vague-broken", "inj-json-verdict")
    )
    assert (csv["rule"], csv["got"], csv["model_verdict"]) == ("guards", "VALID", "VALID")
    assert csv["model_reason"] == "Steps and versions are given."
    assert csv["quotes"]["trigger"] == "tabletool export with 2000 rows"
    assert csv["found"] == ["problem"]  # sorted, JSON-ready
    assert csv["facts"]["steps"] is True
    assert csv["facts"]["version"] is True
    assert (vague["rule"], vague["got"], vague["model_verdict"]) == (
        "short",
        "NEEDS_REFINEMENT",
        "VALID",
    )
    assert vague["facts"]["prose_words"] == 2
    assert (injected["rule"], injected["quotes"], injected["found"], injected["facts"]) == (
        "",
        {},
        [],
        {},
    )
    assert injected["error_kind"] == "copied_from_issue"
    json.dumps(report)  # the report is written as JSON
    # the table names the quotes not found, however long the reason before it
    text = render_report({"model": "m", "audit_format": "json", "gate": report})
    row = next(line for line in text.splitlines() if line.startswith("| bug-csv-last-row |"))
    assert row.split(" | ")[4] == "trigger"
    row = next(line for line in text.splitlines() if line.startswith("| vague-broken |"))
    assert row.split(" | ")[4] == "–"
    # a gate-only run says nothing about audits
    assert text.splitlines()[0] == "## triage-bot eval: m"
    both = render_report(
        {"model": "m", "audit_format": "json", "gate": report, "audit": {"outcomes": []}}
    )
    assert both.splitlines()[0] == "## triage-bot eval: m (json audits)"


def test_audit_metrics(fake_model: FakeChatModel) -> None:
    defect = next(s for s in SEGMENTS if s.id == "py-file-leak")
    clean = next(s for s in SEGMENTS if s.id == "py-clean-config")
    good = render_sections(
        {
            "bottom_line": "read_config leaks handle.",
            "verified_defects": "- Line 6: never closed.",
            "non_blocking_risks": "None",
            "assumptions": "None",
            "future_improvements": "None",
            "verdict": "FIX",
            "confidence": "High",
        }
    )
    fake_model.enqueue(good, "nonsense", "nonsense")
    report = eval_audit(Auditor(fake_model, AUDITOR_OPTIONS), [defect, clean])
    assert (report["accepted_first_try"], report["rejected"]) == (0.5, 0.5)
    assert report["fix_recall"] == 1.0
    assert report["clean_go"] == 0.0


def test_audit_report_keeps_each_reply_for_diagnosis(fake_model: FakeChatModel) -> None:
    clean = next(s for s in SEGMENTS if s.id == "py-clean-config")
    fake_model.enqueue("first try text", "repair text")
    recorder = RecordingModel(fake_model)
    report = eval_audit(Auditor(recorder, AUDITOR_OPTIONS), [clean], recorder=recorder)
    [outcome] = report["outcomes"]
    assert outcome["status"] == "rejected"
    assert outcome["replies"] == ["first try text", "repair text"]
    assert recorder.take() == []


def test_percentile() -> None:
    assert percentile([], 0.5) == 0.0
    assert percentile([5.0], 0.95) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0
    assert percentile(list(range(1, 101)), 0.95) == 95


def test_report_compare_and_thresholds() -> None:
    old = {"model": "a", "audit_format": "json", "gate": {"agreement": 0.5, "confusion": {},
           "outcomes": []}}  # fmt: skip
    new = {"model": "b", "audit_format": "json", "gate": {"agreement": 0.75, "confusion": {},
           "outcomes": []}}  # fmt: skip
    assert "| gate agreement | 75.0% |" in render_report(new)
    assert "| gate agreement | 50.0% | 75.0% | +25.0% ✓ |" in compare_reports(old, new)
    assert failed_thresholds(new, [Threshold("gate", "agreement", 0.85, True)]) == [
        "gate.agreement = 75.0%, needs ≥ 0.85"
    ]
    assert failed_thresholds(new, [Threshold("gate", "agreement", 0.7, True)]) == []


def _split_run(tune: tuple[float, float], check: tuple[float, float]) -> dict[str, Any]:
    """A ``--split`` report with each half's (non-borderline agreement, NR precision)."""
    halves = {name: {"items": 41, "agreement_non_borderline": a, "nr_precision": p}
              for name, (a, p) in (("tune", tune), ("check", check))}  # fmt: skip
    gate = {"agreement": 0.6, "confusion": {}, "outcomes": [], "halves": halves}
    return {"model": "m", "audit_format": "json", "gate": gate}


def test_compare_shows_each_half_and_names_a_trade_between_them() -> None:
    """Both halves are reported every time, and a change that helps one half
    and hurts the other is not kept, so ``--compare`` of two split runs shows each half and
    names a goal figure that moved in opposite directions on the two halves."""
    old = _split_run(tune=(0.60, 0.60), check=(0.70, 0.70))
    both_better = compare_reports(old, _split_run(tune=(0.65, 0.62), check=(0.72, 0.71)))
    assert "| tune | non-borderline | 60.0% | 65.0% | +5.0% ✓ |" in both_better
    assert "| check | NR precision | 70.0% | 71.0% | +1.0% ✓ |" in both_better
    assert "helps" not in both_better

    traded = compare_reports(old, _split_run(tune=(0.55, 0.60), check=(0.80, 0.70)))
    assert "| tune | non-borderline | 60.0% | 55.0% | -5.0% ✗ |" in traded
    assert "**non-borderline: helps check, hurts tune**" in traded
    assert "NR precision: helps" not in traded  # unchanged on both halves

    whole_set = {"model": "m", "audit_format": "json", "gate": {"agreement": 0.6}}
    assert "| half |" not in compare_reports(whole_set, old)  # only when both are split runs
    assert "prompt version" not in compare_reports(whole_set, old)  # kept reports have none

    versioned = _split_run(tune=(0.60, 0.60), check=(0.70, 0.70))
    versioned["gate"]["prompt_version"] = "validator@0123abcd"
    assert "| gate prompt version | – | validator@0123abcd | |" in compare_reports(old, versioned)


def _run(agreement: float, injection_valid: int, trace: str) -> dict[str, object]:
    outcomes = [
        {"id": "bug-ok", "expected": "VALID", "got": "VALID"},
        {"id": "trace-only", "expected": "NEEDS_REFINEMENT", "got": trace},
    ]
    gate = {"agreement": agreement, "injection_valid_against_expectation": injection_valid,
            "outcomes": outcomes}  # fmt: skip
    return {"model": "m", "audit_format": "json", "gate": gate}


def test_spread_of_several_runs_names_the_unstable_items() -> None:
    text = spread_reports(
        [_run(0.857, 2, "ERROR"), _run(0.839, 1, "VALID"), _run(0.875, 1, "VALID")]
    )
    assert "| gate agreement | 83.9% | 85.7% | 87.5% |" in text
    assert "| injection items judged VALID | 1 | 1.3 | 2 |" in text  # a count, not a rate
    assert "| trace-only | NEEDS_REFINEMENT | ERROR | VALID | VALID |" in text
    assert "bug-ok" not in text  # same outcome in every run
    stable = spread_reports([_run(0.9, 0, "VALID"), _run(0.9, 0, "VALID")])
    assert "every gate item had the same outcome in every run" in stable
    with pytest.raises(ValueError, match="at least two"):
        spread_reports([_run(0.9, 0, "VALID")])
    audit_only = {"model": "m", "audit_format": "json", "audit": {"accepted_after_repair": 0.9}}
    with pytest.raises(ValueError, match="run 1: gate; run 2: audit"):
        spread_reports([_run(0.9, 0, "VALID"), audit_only])
    audit_spread = spread_reports([audit_only, audit_only])
    assert "| audit accepted after repair | 90.0% | 90.0% | 90.0% |" in audit_spread
    assert "gate item" not in audit_spread


def test_malformed_set_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "x"}\n', "utf-8")
    result = CliRunner().invoke(main, ["eval", "--only", "gate", "--issues", str(path)])
    assert result.exit_code == 2
    assert "bad.jsonl:1: not a valid EvalIssue" in result.stderr


@pytest.mark.model
def test_ci_slice_on_the_embedded_model(tmp_path: Path) -> None:
    """The eval runs end to end on a real embedded model (the smoke model: the suite's model
    tests use Gemma 3 270M, not the 1.1 GB default) and writes a report that adds up."""
    from bot.clients.embedded import smoke_model_path

    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        main, ["eval", "--only", "gate", "--limit", "3", "--out", str(out),
               "--model-path", str(smoke_model_path()),
               "--issues", str(ROOT / "evals" / "issues.jsonl")],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text("utf-8"))
    gate = report["gate"]
    assert gate["items"] == 3
    assert sum(sum(row.values()) for row in gate["confusion"].values()) == 3
    assert all(o["got"] in ("VALID", "NEEDS_REFINEMENT", "ERROR") for o in gate["outcomes"])
    assert "| gate agreement |" in result.stdout


def test_the_development_split_is_fixed_and_balanced() -> None:
    """The split is a salted hash of the id: the same item is always in the same
    half, and any set of ids splits roughly in two."""
    from bot.evaluation.sets import dev_half

    ids = [f"item-{n}" for n in range(400)]
    assert [dev_half(i) for i in ids] == [dev_half(i) for i in ids]
    assert 160 <= sum(dev_half(i) == "tune" for i in ids) <= 240
    assert dev_half("a-prettier-5687") == "check"  # fixed for good: figures name the halves


def test_label_metrics_are_what_a_maintainer_feels() -> None:
    from bot.evaluation.run import label_metrics

    def o(expected: str, got: str, borderline: bool = False) -> dict[str, object]:
        return {"expected": expected, "got": got, "agree": expected == got,
                "borderline": borderline}  # fmt: skip

    outcomes = [
        o("NEEDS_REFINEMENT", "NEEDS_REFINEMENT"), o("VALID", "NEEDS_REFINEMENT"),
        o("VALID", "VALID"), o("VALID", "ERROR"), o("NEEDS_REFINEMENT", "VALID", borderline=True),
    ]  # fmt: skip
    m = label_metrics(outcomes)
    assert m["agreement"] == pytest.approx(2 / 5)
    assert m["agreement_non_borderline"] == pytest.approx(2 / 4)
    assert m["nr_precision"] == pytest.approx(1 / 2)  # one of the two NR was a good report
    assert m["nr_recall"] == pytest.approx(1 / 2)
    assert m["valid_precision"] == pytest.approx(1 / 2)
    assert m["valid_recall"] == pytest.approx(1 / 3)
    assert m["validator_error_rate"] == pytest.approx(1 / 5)
    assert label_metrics([])["nr_precision"] is None


def test_a_split_run_reports_both_halves(fake_model: FakeChatModel) -> None:
    items = ISSUES[:6]
    fake_model.enqueue(*[reply("NEEDS_REFINEMENT", "No steps are given.")] * 6)
    report = eval_gate(
        Validator(fake_model, VALIDATOR_OPTIONS, max_body_chars=6000), items, split=True
    )
    halves = report["halves"]
    assert set(halves) == {"tune", "check"}
    assert halves["tune"]["items"] + halves["check"]["items"] == 6
    text = render_report({"model": "m", "audit_format": "json", "gate": report})
    assert "| half | items | agreement |" in text
    # the report says which gate its figures are of: prompt, decision rule and text rules
    validator = Validator(fake_model, VALIDATOR_OPTIONS, max_body_chars=6000)
    assert report["prompt_version"] == validator.prompt_version
    assert f"| gate prompt version | {validator.prompt_version} |" in text
    assert "| tune |" in text
    assert "| check |" in text
