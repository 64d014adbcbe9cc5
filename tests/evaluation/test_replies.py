"""Recorded replies as an input (bot/evaluation/replies.py) and ``triage-bot calibrate``
(bot/evaluation/calibrate.py): a reply judged from a file is judged as a live one; a missing
reply is an error that names it; ``--save-replies`` writes what ``--replies`` reads; calibrate
scores every candidate on both halves, writes the best on the tune half with its figures, and
prints a block the repository file accepts; an audit's first and repair replies are recorded and
replayed per segment. The replies here are written for the tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.audit.auditor import Auditor
from bot.audit.contract import render_sections
from bot.audit.prompt import repair_version
from bot.audit.prompt import system_prompt as audit_system_prompt
from bot.cli import main
from bot.config import AUDITOR_OPTIONS, VALIDATOR_OPTIONS
from bot.errors import ConfigError, ModelTruncated
from bot.evaluation import command
from bot.evaluation.calibrate import calibrate, candidates, label_of
from bot.evaluation.replies import ReplayModel, audit_replies_jsonl, load_replies, replies_jsonl
from bot.evaluation.run import RecordingModel, eval_audit, eval_gate, judge_items
from bot.evaluation.sets import EvalIssue, EvalSegment, dev_half, load_jsonl
from bot.gate.policy import default_policy
from bot.gate.validator import Validator, system_prompt
from bot.policy_file import GatePolicy, load_policy
from bot.repo_file import parse_repo_file
from tests.support import ROOT, FakeChatModel
from tests.support.replies import reply

ISSUES = load_jsonl(ROOT / "evals" / "issues.jsonl", EvalIssue)[:12]


def _reply_for(item: EvalIssue) -> str:
    """A reply a careful model could give: the maintainers' verdict, quoting the title."""
    return reply(item.expected, "Judged from the whole issue.", problem=item.title)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    return path


def _replies_file(tmp_path: Path, items: list[EvalIssue] = ISSUES) -> Path:
    rows = [{"id": i.id, "reply": _reply_for(i)} for i in items]
    return _write(tmp_path / "replies.jsonl", rows)


def test_a_recorded_reply_is_judged_as_the_same_live_reply(tmp_path: Path) -> None:
    live = FakeChatModel(name="m")
    live.enqueue(*(_reply_for(i) for i in ISSUES))
    by_live = eval_gate(Validator(live, VALIDATOR_OPTIONS, max_body_chars=6000), ISSUES)
    replay = ReplayModel(load_replies(_replies_file(tmp_path)))
    validator = Validator(replay, VALIDATOR_OPTIONS, max_body_chars=6000, policy=default_policy())
    by_file = eval_gate(validator, ISSUES, replay=replay)
    keep = ("id", "got", "model_verdict", "rule", "quotes", "found", "facts", "error_kind")
    assert [{k: o[k] for k in keep} for o in by_file["outcomes"]] == [
        {k: o[k] for k in keep} for o in by_live["outcomes"]
    ]
    assert replay.name == "replies:replies"  # named after its file when the lines name none


def test_an_item_without_a_reply_is_an_error_that_names_it(tmp_path: Path) -> None:
    replay = ReplayModel(load_replies(_replies_file(tmp_path, ISSUES[:-2])))
    validator = Validator(replay, VALIDATOR_OPTIONS, max_body_chars=6000)
    with pytest.raises(ConfigError, match="no recorded reply for 2 item") as caught:
        eval_gate(validator, ISSUES, replay=replay)
    assert ISSUES[-1].id in str(caught.value)
    assert ISSUES[-2].id in str(caught.value)


def test_a_recorded_fault_is_a_validator_error_of_its_kind(tmp_path: Path) -> None:
    rows = [{"id": ISSUES[0].id, "reply": None, "error": "truncated"},
            {"id": ISSUES[1].id, "reply": "not json"}]  # fmt: skip
    replay = ReplayModel(load_replies(_write(tmp_path / "r.jsonl", rows)))
    validator = Validator(replay, VALIDATOR_OPTIONS, max_body_chars=6000)
    out = eval_gate(validator, ISSUES[:2], replay=replay)["outcomes"]
    assert [(o["got"], o["error_kind"]) for o in out] == [
        ("ERROR", "truncated"),
        ("ERROR", "unparseable"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"id": "a", "reply": "x"}\n{"reply": "y"}\n', r"r\.jsonl:2: not a recorded reply: id"),
        ('{"id": "a", "reply": "x"}\nnot json\n', r"r\.jsonl:2: not a recorded reply"),
        (
            '{"id": "a", "reply": "x"}\n\n{"id": "a", "reply": "y"}\n',
            r"r\.jsonl:3: the same id and turn as line 1",
        ),
        ('{"id": "a", "reply": 3}\n', r"r\.jsonl:1: not a recorded reply: reply"),
    ],
)
def test_a_broken_replies_file_names_its_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(text, "utf-8")
    with pytest.raises(ConfigError, match=message):
        load_replies(path)


def test_the_replies_of_a_run_are_a_replies_file(tmp_path: Path) -> None:
    """What ``--save-replies`` writes, ``--replies`` reads back to the same outcomes."""
    live = FakeChatModel(name="model-x")
    live.enqueue(*(_reply_for(i) for i in ISSUES[:5]), "not json", ModelTruncated("cut"))
    recorder = RecordingModel(live)
    validator = Validator(recorder, VALIDATOR_OPTIONS, max_body_chars=6000)
    first = eval_gate(validator, ISSUES[:7], recorder=recorder)
    saved = tmp_path / "saved.jsonl"
    saved.write_text(
        replies_jsonl(first["outcomes"], prompt_version=validator.prompt_version, model="model-x"),
        "utf-8",
    )
    replies = load_replies(saved)
    assert replies.model == "model-x"
    assert replies.prompt_versions == {system_prompt()[1]}
    assert replies.by_id[ISSUES[6].id].error == "truncated"
    replay = ReplayModel(replies)
    again = eval_gate(
        Validator(replay, VALIDATOR_OPTIONS, max_body_chars=6000), ISSUES[:7], replay=replay
    )
    keep = ("id", "got", "model_verdict", "rule", "error_kind")
    assert [{k: o[k] for k in keep} for o in again["outcomes"]] == [
        {k: o[k] for k in keep} for o in first["outcomes"]
    ]


# --- through the CLI ----------------------------------------------------------------------


def _dev_set(tmp_path: Path) -> Path:
    """Self-written issues under ids that fall on both halves of the fixed split."""
    items = [i.model_copy(update={"id": f"case-{n}"}) for n, i in enumerate(ISSUES)]
    assert {dev_half(i.id) for i in items} == {"tune", "check"}
    path = tmp_path / "issues.jsonl"
    path.write_text("".join(i.model_dump_json() + "\n" for i in items), "utf-8")
    return path


def test_eval_on_replies_needs_no_model_and_saves_them_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_model(*_: Any, **__: Any) -> None:
        raise AssertionError("a model was built although every reply is recorded")

    monkeypatch.setattr(command, "make_chat_model", no_model)
    issues = _dev_set(tmp_path)
    rows = [{"id": json.loads(line)["id"], "reply": _reply_for(EvalIssue.model_validate_json(line))}
            for line in issues.read_text("utf-8").splitlines()]  # fmt: skip
    replies = _write(tmp_path / "replies.jsonl", rows)
    args = ["eval", "--only", "gate", "--split", "--issues", str(issues), "--replies",
            str(replies), "--out", str(tmp_path / "r.json"), "--save-replies",
            str(tmp_path / "again.jsonl")]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "| gate policy | model-verdict" in result.output
    report = json.loads((tmp_path / "r.json").read_text("utf-8"))
    assert report["model"] == "replies:replies"
    assert report["gate"]["agreement"] == 1.0  # every reply gave the maintainers' verdict
    again = load_replies(tmp_path / "again.jsonl")
    assert {k: r.reply for k, r in again.by_id.items()} == {r["id"]: r["reply"] for r in rows}
    missing = _write(tmp_path / "some.jsonl", rows[:3])
    short = CliRunner().invoke(main, [*args[:7], str(missing), "--out", str(tmp_path / "x")])
    assert short.exit_code == 2
    assert "no recorded reply for" in short.output


def test_calibrate_writes_the_best_on_the_tune_half_with_both_halves(tmp_path: Path) -> None:
    issues = _dev_set(tmp_path)
    items = load_jsonl(issues, EvalIssue)
    # a model that says NEEDS_REFINEMENT to every item: the guards do better than its verdict
    rows = [{"id": i.id, "reply": reply("NEEDS_REFINEMENT", "Not enough here.",
                                        problem=i.title), "prompt_version": "validator@0badc0de"}
            for i in items]  # fmt: skip
    replies = _write(tmp_path / "replies.jsonl", rows)
    out = tmp_path / "policy.json"
    # --force: 12 items and replies to another prompt are refused
    # (tests/evaluation/test_calibrate.py);
    # this test is about what is written and printed
    args = ["calibrate", "--issues", str(issues), "--replies", str(replies), "--out", str(out),
            "--model-name", "llama3.1:70b", "--yaml", "--force"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    policy = load_policy(out)
    assert policy.measured is not None
    assert policy.measured.model == "llama3.1:70b"
    assert policy.measured.prompt_version == "validator@0badc0de"  # what the replies answered
    assert policy.measured.labelled_set == f"issues.jsonl ({len(items)} items)"
    # the mismatch is named
    assert "warning: the replies answer prompt validator@0badc0de, not validator@" in result.output
    for candidate in candidates(policy):
        assert f"| {label_of(candidate)} |" in result.output
    # the written policy is the one the candidates' table puts first, by its tune figures
    replay = ReplayModel(load_replies(replies))
    judged = judge_items(Validator(replay, VALIDATOR_OPTIONS, max_body_chars=6000), items,
                         replay=replay)  # fmt: skip
    chosen_by = calibrate(judged, default_policy(), name="x", model="m",
                          prompt_version="validator@0badc0de", labelled_set="s",
                          force=True)  # fmt: skip
    chosen, scored = chosen_by.policy, chosen_by.scored
    assert label_of(chosen) == label_of(policy) == label_of(scored[0].policy)
    assert all(scored[0].key() >= c.key() for c in scored)
    tune = scored[0].halves["tune"]
    assert policy.measured.tune.agreement == tune["agreement"]
    assert policy.measured.check.agreement == scored[0].halves["check"]["agreement"]
    assert policy.verdict_from == "guards"  # its NEEDS_REFINEMENT to everything is worse
    # the printed block is a repository file that holds the same policy
    block = result.output.split("(.github/triage-bot.yml):\n\n", 1)[1]
    repo_policy = parse_repo_file(block).gate.policy
    assert isinstance(repo_policy, GatePolicy)
    assert repo_policy == policy


# --- an audit's two turns ---------------------------------------------------------------------

SEGMENTS = {s.id: s for s in load_jsonl(ROOT / "evals" / "segments.jsonl", EvalSegment)}


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


AUDITED = ["py-off-by-one-range", "py-off-by-one-range-fixed", "py-clean-config", "js-xss"]
"""Accepted first; repaired; repaired after a truncated first call; rejected after both turns."""


def _audit_calls() -> list[str | ModelTruncated]:
    return [
        _audit("page", "- Line 13: the slice starts one page late.", "FIX"),
        "not the seven sections",
        _audit("page", "None", "GO"),
        ModelTruncated("cut"),
        _audit("read_config", "None", "GO"),
        "still nothing",
        "nothing again",
    ]


def _keep(report: dict[str, Any]) -> list[dict[str, Any]]:
    keep = ("id", "status", "verdict", "cited_lines", "violations", "error_kind")
    return [{k: o[k] for k in keep} for o in report["outcomes"]]


def test_an_audits_first_and_repair_replies_are_replayed_as_recorded(tmp_path: Path) -> None:
    """What ``--save-replies`` writes of an audit run, its first turns and repair turns, replays
    through the auditor to the same outcomes, with no model."""
    items = [SEGMENTS[i] for i in AUDITED]
    recorder = RecordingModel(FakeChatModel(name="model-x").enqueue(*_audit_calls()))
    auditor = Auditor(recorder, AUDITOR_OPTIONS)
    first = eval_audit(auditor, items, recorder=recorder)
    assert [o["status"] for o in first["outcomes"]] == ["first", "repaired", "repaired", "rejected"]
    saved = tmp_path / "audit.jsonl"
    saved.write_text(
        audit_replies_jsonl(first["outcomes"], versions=auditor.prompt_versions, model="model-x"),
        "utf-8",
    )
    replies = load_replies(saved)
    assert set(replies.repairs) == {"py-off-by-one-range-fixed", "py-clean-config", "js-xss"}
    assert replies.by_id["py-clean-config"].error == "truncated"
    assert replies.prompt_versions == {audit_system_prompt("markdown")[1]}
    assert replies.repair_versions == {repair_version("markdown")}
    replay = ReplayModel(replies)
    again = eval_audit(Auditor(replay, AUDITOR_OPTIONS), items, replay=replay)
    assert _keep(again) == _keep(first)


def test_a_repair_turn_with_no_recorded_reply_is_an_error_that_names_the_segment(
    tmp_path: Path,
) -> None:
    """A segment recorded as accepted on its first reply but now asked for a repair (its
    checker changed) stops the replay and names the segment."""
    item = SEGMENTS["py-off-by-one-range"]
    path = _write(tmp_path / "r.jsonl", [{"id": item.id, "reply": "not the seven sections"}])
    replay = ReplayModel(load_replies(path))
    with pytest.raises(ConfigError, match="no recorded reply for call 2 of py-off-by-one-range"):
        eval_audit(Auditor(replay, AUDITOR_OPTIONS), [item], replay=replay)


def test_a_repair_reply_without_its_first_reply_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.jsonl", [{"id": "a", "reply": "x", "turn": "repair"}])
    with pytest.raises(ConfigError, match=r"r\.jsonl:1: a repair reply with no first reply"):
        load_replies(path)


def test_eval_saves_the_audit_replies_of_both_turns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeChatModel(name="model-x").enqueue(*_audit_calls())
    monkeypatch.setattr(command, "make_chat_model", lambda *_: fake)
    segments = _write(tmp_path / "s.jsonl", [SEGMENTS[i].model_dump() for i in AUDITED])
    saved = tmp_path / "audit.jsonl"
    args = ["eval", "--only", "audit", "--audit-format", "markdown", "--segments", str(segments),
            "--out", str(tmp_path / "r.json"), "--save-replies", str(saved)]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in saved.read_text("utf-8").splitlines()]
    assert [(r["id"], r["turn"], r["error"]) for r in lines] == [
        ("py-off-by-one-range", "first", None),
        ("py-off-by-one-range-fixed", "first", None),
        ("py-off-by-one-range-fixed", "repair", None),
        ("py-clean-config", "first", "truncated"),
        ("py-clean-config", "repair", None),
        ("js-xss", "first", None),
        ("js-xss", "repair", None),
    ]
    assert {r["prompt_version"] for r in lines if r["turn"] == "repair"} == {
        repair_version("markdown")
    }
    assert {r["model"] for r in lines} == {"model-x"}


def test_the_gate_reads_only_its_own_lines_of_a_file_holding_both_sets(tmp_path: Path) -> None:
    """``eval --only both --save-replies`` writes the gate's and the auditor's replies into one
    file; ``--replies`` judges the issues on the gate's lines and names no other prompt."""
    gate = [
        {"id": i.id, "reply": _reply_for(i), "prompt_version": system_prompt()[1]} for i in ISSUES
    ]
    audit = [
        {"id": "py-file-leak", "reply": "{}", "prompt_version": audit_system_prompt("json")[1]},
        {"id": "py-file-leak", "reply": "{}", "prompt_version": repair_version("json"),
         "turn": "repair"},
    ]  # fmt: skip
    both = _write(tmp_path / "both.jsonl", gate + audit)
    assert load_replies(both).answering("validator").by_id.keys() == {i.id for i in ISSUES}
    assert not load_replies(both).answering("validator").repairs
    issues = tmp_path / "issues.jsonl"
    issues.write_text("".join(i.model_dump_json() + "\n" for i in ISSUES), "utf-8")
    args = ["eval", "--only", "gate", "--issues", str(issues), "--replies", str(both),
            "--out", str(tmp_path / "r.json")]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "the replies name" not in result.output
