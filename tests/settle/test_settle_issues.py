"""The settling rules (``bot.settle.issues``): each rule on timelines shaped like GitHub's
(``tests/support/dataset_world.py``), parsed by the client's own parsers."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

import pytest

from bot.clients.github_port import EditHistory, ListedIssue, TimelineItem
from bot.clients.issue_history import parse_edit_histories, parse_issue_page, parse_timeline_item
from bot.dataset.rules import LabelRules, SkipReason
from bot.gate.issue_text import prepare_issue
from bot.gate.labels import DEFAULT_LABELS, GateLabel, GateLabels
from bot.gate.types import AUTHOR_MARKER
from bot.history.record import GateOutcome, GateOutcomeRow
from bot.settle.issues import NO_VERDICT, OPEN, TIMELINE_GONE, settle_issue
from tests.support.dataset_world import (
    ANSWER,
    COMMIT,
    FULL_BODY,
    MAINTAINER,
    REPO,
    REPORTER,
    SHORT_BODY,
    T0,
    closed,
    commented,
    edit_node,
    issue_item,
    labeled,
    referenced,
)

BOT = "github-actions[bot]"
DECIDED = T0 + timedelta(minutes=2)
TITLE = "Export fails (1)"
BOT_ASKS = f"{AUTHOR_MARKER}\nThanks! Could you add the version and the steps to reproduce?"


def listed(body: str = SHORT_BODY, *, state: str = "closed", **fields: Any) -> ListedIssue:
    item = issue_item(1, title=TITLE, body=body, created=T0, **fields)
    return parse_issue_page([{**item, "state": state}], what="test")[0]


def decision(verdict: str | None = "NEEDS_REFINEMENT", body: str = SHORT_BODY) -> dict[str, Any]:
    return {
        "id": 7,
        "issue": 1,
        "verdict": verdict,
        "label": DEFAULT_LABELS.for_verdict(verdict).name,  # type: ignore[arg-type]
        "content_sha": prepare_issue(TITLE, body, max_body_chars=6000).content_sha,
        "created_at": DECIDED.isoformat(),
        "model": "qwen2.5-coder:1.5b",
        "prompt_version": "validator@abc",
        "policy_version": "p1",
    }


def timeline(*events: dict[str, Any]) -> list[TimelineItem]:
    return [item for e in events if (item := parse_timeline_item(e, REPO))]


def unlabeled(at: datetime, label: str, actor: str = MAINTAINER) -> dict[str, Any]:
    return {**labeled(at, label, actor), "event": "unlabeled"}


def bot_labels(verdict: str = "NEEDS_REFINEMENT", gate: GateLabels = DEFAULT_LABELS) -> Any:
    name = gate.for_verdict(verdict).name  # type: ignore[arg-type]
    return labeled(T0 + timedelta(minutes=1), name, BOT, "Bot")


def bot_comment() -> dict[str, Any]:
    return commented(T0 + timedelta(minutes=1), BOT_ASKS, BOT, "NONE", "Bot")


def edits(*revisions: tuple[datetime, str, str]) -> EditHistory:
    node = edit_node(1, [(T0, SHORT_BODY, REPORTER), *revisions])
    return next(iter(parse_edit_histories({"data": {"nodes": [node]}}, what="t").values()))


def settle(
    row: dict[str, Any],
    issue: ListedIssue,
    events: list[TimelineItem] | None,
    history: EditHistory | None = None,
    gate: GateLabels = DEFAULT_LABELS,
) -> GateOutcomeRow:
    rules = LabelRules.from_config(gate=gate, bot_login=BOT)
    return settle_issue(
        REPO, row, issue, events, history, rules=rules, gate=gate, max_body_chars=6000
    )


def test_a_fix_with_no_request_agrees_with_valid_and_names_the_close() -> None:
    events = timeline(
        bot_labels("VALID"), referenced(T0 + timedelta(days=2)),
        closed(T0 + timedelta(days=2), commit=COMMIT),
    )  # fmt: skip
    got = settle(decision("VALID"), listed(), events)
    assert (got.outcome, got.expected, got.verdict) == (GateOutcome.AGREE, "VALID", "VALID")
    assert got.reason.startswith("closed by commit 6dcb09b")
    assert got.event_at == (T0 + timedelta(days=2)).isoformat()
    assert (got.decision_id, got.model, got.policy_version) == (7, "qwen2.5-coder:1.5b", "p1")


def test_the_bots_own_label_and_question_are_left_out_so_a_fix_disagrees_with_nr() -> None:
    # The bot's needs-refinement label and its question would read as a maintainer's request.
    events = timeline(bot_labels(), bot_comment(), closed(T0 + timedelta(days=2), commit=COMMIT))
    got = settle(decision(), listed(), events)
    assert (got.outcome, got.expected) == (GateOutcome.DISAGREE, "VALID")


def test_a_maintainers_needs_info_label_agrees_with_nr() -> None:
    events = timeline(
        bot_labels(), labeled(T0 + timedelta(hours=2), "needs-info"),
        closed(T0 + timedelta(days=3), reason="not_planned"),
    )  # fmt: skip
    got = settle(decision(), listed(state_reason="not_planned"), events)
    assert (got.outcome, got.expected) == (GateOutcome.AGREE, "NEEDS_REFINEMENT")
    assert "needs-info" in got.reason


def test_an_author_who_answered_the_bot_by_comment_agrees_with_nr_even_when_fixed_after() -> None:
    answered = T0 + timedelta(hours=5)
    events = timeline(
        bot_labels(), bot_comment(), commented(answered, ANSWER, REPORTER, "NONE"),
        closed(T0 + timedelta(days=2), commit=COMMIT),
    )  # fmt: skip
    got = settle(decision(), listed(), events, edits())
    assert (got.outcome, got.expected) == (GateOutcome.AGREE, "NEEDS_REFINEMENT")
    assert got.reason == "the author answered the bot's comment with a comment"
    assert got.event_at == answered.isoformat()


def test_an_author_who_answered_the_bot_by_editing_agrees_with_nr() -> None:
    edited = T0 + timedelta(hours=3)
    events = timeline(bot_labels(), bot_comment(), closed(T0 + timedelta(days=1), commit=COMMIT))
    got = settle(decision(), listed(FULL_BODY), events, edits((edited, FULL_BODY, REPORTER)))
    assert (got.outcome, got.reason) == (
        GateOutcome.AGREE,
        "the author answered the bot's comment with an edit",
    )
    assert got.event_at == edited.isoformat()


def test_a_maintainers_request_before_the_authors_answer_leaves_it_to_the_dataset_rules() -> None:
    events = timeline(
        bot_labels(), bot_comment(),
        commented(T0 + timedelta(hours=1), "Which version do you run?", association="MEMBER"),
        commented(T0 + timedelta(hours=4), ANSWER, REPORTER, "NONE"),
        closed(T0 + timedelta(days=2), commit=COMMIT),
    )  # fmt: skip
    got = settle(decision(), listed(), events, edits())
    assert (got.outcome, got.expected) == (GateOutcome.AGREE, "NEEDS_REFINEMENT")
    assert got.reason.startswith("a member asked a question")


def test_without_the_bots_comment_an_authors_comment_is_no_answer_to_it() -> None:
    events = timeline(
        bot_labels(), commented(T0 + timedelta(hours=5), ANSWER, REPORTER, "NONE"),
        closed(T0 + timedelta(days=2), commit=COMMIT),
    )  # fmt: skip
    assert settle(decision(), listed(), events, edits()).outcome is GateOutcome.DISAGREE


def test_a_maintainer_replacing_the_label_on_unchanged_text_overrides_an_open_issue() -> None:
    at = T0 + timedelta(hours=1)
    events = timeline(bot_labels(), unlabeled(at, "needs-refinement"), labeled(at, "ready-for-dev"))
    got = settle(decision(), listed(state="open"), events, edits())
    assert (got.outcome, got.expected) == (GateOutcome.OVERRIDE, "VALID")
    assert got.reason == "a maintainer replaced the bot's label with ready-for-dev"
    events = timeline(bot_labels(), labeled(at, "ready-for-dev"))
    got = settle(decision(), listed(state="open"), events, edits())
    assert (got.outcome, got.expected) == (GateOutcome.OVERRIDE, "VALID")
    assert got.event_at == at.isoformat()


def test_a_maintainer_removing_the_label_on_unchanged_text_is_an_override_with_no_verdict() -> None:
    events = timeline(bot_labels("VALID"), unlabeled(T0 + timedelta(hours=1), "ready-for-dev"))
    got = settle(decision("VALID"), listed(state="open"), events, None)
    assert (got.outcome, got.expected) == (GateOutcome.OVERRIDE, None)


def test_a_removal_after_the_authors_edit_is_the_normal_path() -> None:
    edited, removed = T0 + timedelta(hours=2), T0 + timedelta(hours=3)
    events = timeline(bot_labels(), unlabeled(removed, "needs-refinement"))
    history = edits((edited, FULL_BODY, REPORTER))
    got = settle(decision(), listed(FULL_BODY, state="open"), events, history)
    assert (got.outcome, got.reason) == (GateOutcome.UNSETTLED, OPEN)


def test_an_edit_after_the_override_does_not_undo_it() -> None:
    removed, edited = T0 + timedelta(hours=2), T0 + timedelta(hours=3)
    events = timeline(bot_labels(), labeled(removed, "ready-for-dev"))
    history = edits((edited, FULL_BODY, REPORTER))
    got = settle(decision(), listed(FULL_BODY, state="open"), events, history)
    assert got.outcome is GateOutcome.OVERRIDE
    # With the edit history unknown, only the text now can tell: it changed.
    got = settle(decision(), listed(FULL_BODY, state="open"), events, None)
    assert got.outcome is GateOutcome.UNSETTLED


def test_the_bot_or_the_author_changing_the_label_is_no_override() -> None:
    at = T0 + timedelta(hours=1)
    for actor in (BOT, REPORTER):
        events = timeline(bot_labels(), unlabeled(at, "needs-refinement", actor))
        got = settle(decision(), listed(state="open"), events, edits())
        assert (got.outcome, got.reason) == (GateOutcome.UNSETTLED, OPEN)


RENAMED = GateLabels(
    ready=GateLabel("status: ready", "0e8a16", ""),
    needs_refinement=GateLabel("status: needs info", "fbca04", ""),
    validator_error=DEFAULT_LABELS.validator_error,
)


def test_renamed_gate_labels_are_the_bots_and_count_for_overrides() -> None:
    # The bot's renamed label reads like a needs-info label; it is the bot's, so a fix agrees
    # with VALID, and a maintainer's renamed ready label overrides.
    events = timeline(bot_labels(gate=RENAMED), closed(T0 + timedelta(days=2), commit=COMMIT))
    got = settle(decision(), listed(), events, edits(), RENAMED)
    assert (got.outcome, got.expected) == (GateOutcome.DISAGREE, "VALID")
    hand_set = labeled(T0 + timedelta(hours=1), "status: needs info")  # a maintainer, by hand
    events = timeline(hand_set, closed(T0 + timedelta(days=2), commit=COMMIT))
    assert settle(decision("VALID"), listed(), events, edits(), RENAMED).outcome is (
        GateOutcome.OVERRIDE
    )
    events = timeline(bot_labels(gate=RENAMED), labeled(T0 + timedelta(hours=1), "status: ready"))
    got = settle(decision(), listed(state="open"), events, edits(), RENAMED)
    assert (got.outcome, got.expected) == (GateOutcome.OVERRIDE, "VALID")


def test_a_validator_error_stays_unsettled() -> None:
    events = timeline(closed(T0 + timedelta(days=2), commit=COMMIT))
    got = settle(decision(None), listed(), events)
    assert (got.outcome, got.reason, got.verdict) == (GateOutcome.UNSETTLED, NO_VERDICT, "")


@pytest.mark.parametrize(
    ("state_reason", "reason"),
    [
        ("completed", SkipReason.NO_DECISION),
        ("not_planned", SkipReason.NOT_PLANNED),
        ("duplicate", SkipReason.DUPLICATE),
    ],
)
def test_a_close_the_rules_cannot_read_stays_unsettled_with_their_reason(
    state_reason: str, reason: SkipReason
) -> None:
    events = timeline(bot_labels(), closed(T0 + timedelta(days=2), reason=state_reason))
    got = settle(decision(), listed(state_reason=state_reason), events, edits())
    assert (got.outcome, got.reason, got.expected) == (GateOutcome.UNSETTLED, str(reason), None)


def test_a_maintainers_own_issue_and_a_lost_timeline_stay_unsettled() -> None:
    events = timeline(closed(T0 + timedelta(days=2), commit=COMMIT))
    got = settle(decision("VALID"), listed(association="MEMBER"), events)
    assert got.reason == str(SkipReason.MAINTAINER)
    assert settle(decision("VALID"), listed(), None).reason == TIMELINE_GONE
    moved = {**closed(T0 + timedelta(days=2), commit=COMMIT)}
    moved["url"] = "https://api.github.com/repos/Codertocat/Other-World/issues/events/6430295168"
    assert settle(decision("VALID"), listed(), timeline(moved)).reason == TIMELINE_GONE


def test_a_hostile_label_name_reaches_the_report_only_through_its_sinks() -> None:
    from bot.settle.settling import SettleReport

    hostile = "ready <img src=x onerror=alert(1)> @octocat \x1b[31m"
    gate = GateLabels(
        ready=GateLabel(hostile, "0e8a16", ""),
        needs_refinement=DEFAULT_LABELS.needs_refinement,
        validator_error=DEFAULT_LABELS.validator_error,
    )
    events = timeline(bot_labels(), labeled(T0 + timedelta(hours=1), hostile))
    got = settle(decision(), listed(state="open"), events, edits(), gate)
    assert got.reason == f"a maintainer replaced the bot's label with {hostile}"
    report = SettleReport(REPO)
    report.unsettled[got.reason] += 1
    text, summary = "\n".join(report.lines()), report.summary()
    assert "\x1b" not in text
    assert re.search(r"(?<!\\)<img", summary) is None  # escaped: shown as text
    assert "@octocat" not in summary  # no mention
