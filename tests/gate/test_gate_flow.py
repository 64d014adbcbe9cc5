"""The gate plan and its application, with a fake model and a recording GitHub port."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import VALIDATOR_OPTIONS
from bot.events import IssuesEvent, route_event
from bot.gate.pipeline import render_gate_plan, render_gate_summary
from bot.gate.plan import (
    GatePlan,
    LabelOwner,
    already_decided,
    apply_gate,
    gate_row,
    plan_gate,
)
from bot.gate.validator import Validator
from bot.policy_file import GatePolicy
from tests.support import GUARDS, FakeChatModel, RecordingGitHub, guards_policy, load_webhook
from tests.support.replies import COMPLETE_BODY, NEEDS_REPLY, VALID_REPLY, reply


def _the_bots(name: str, shown: bool) -> LabelOwner:
    """Every gate label on these issues was added by the bot (its ``labeled`` events say so)."""
    return "bot"


def _event(labels: list[str]) -> IssuesEvent:
    """The real issues.opened payload with ``labels``, its body completed so that a model's
    VALID can stand (:data:`tests.support.replies.COMPLETE_BODY`)."""
    payload = load_webhook("issues.opened.18")
    payload["issue"]["body"] = COMPLETE_BODY
    payload["issue"]["labels"] = [{"name": name} for name in labels]
    event = route_event("issues", payload)
    assert isinstance(event, IssuesEvent)
    return event


@pytest.mark.parametrize(
    ("labels", "reply", "expected_calls"),
    [
        (
            ["bug"],
            VALID_REPLY,
            [("ensure", "ready-for-dev"), ("add", "ready-for-dev")],
        ),
        (
            ["bug", "ready-for-dev"],
            VALID_REPLY,
            [],
        ),
        (
            ["needs-refinement"],
            VALID_REPLY,
            [("ensure", "ready-for-dev"), ("add", "ready-for-dev"), ("remove", "needs-refinement")],
        ),
        (
            ["ready-for-dev", "validator-error"],
            "not json",
            [("remove", "ready-for-dev")],
        ),
    ],
)
def test_plan_and_apply(
    fake_model: FakeChatModel,
    labels: list[str],
    reply: str,
    expected_calls: list[tuple[str, str]],
) -> None:
    fake_model.enqueue(reply)
    validator = Validator(fake_model, VALIDATOR_OPTIONS, max_body_chars=6000)
    plan = plan_gate(_event(labels), validator, owner=_the_bots)
    github = RecordingGitHub()
    applied = apply_gate(plan, github)
    assert [(c[0], c[-1]) for c in github.calls] == expected_calls
    assert applied.requests == len(expected_calls)
    assert plan.repo == "Codertocat/Hello-World"
    assert plan.public_repo


def test_rerun_with_label_in_place_writes_nothing(fake_model: FakeChatModel) -> None:
    fake_model.enqueue(NEEDS_REPLY)
    validator = Validator(fake_model, VALIDATOR_OPTIONS, max_body_chars=6000)
    plan = plan_gate(_event(["needs-refinement"]), validator, owner=_the_bots)
    github = RecordingGitHub()
    assert apply_gate(plan, github).requests == 0
    assert github.calls == []


def test_example_event_is_the_real_payload() -> None:
    root = Path(__file__).resolve().parents[2]
    example = (root / "examples" / "issues.opened.json").read_text("utf-8")
    real = (root / "tests" / "data" / "webhooks" / "issues.opened.18.json").read_text("utf-8")
    assert example == real


@pytest.mark.parametrize(
    ("labels", "reply", "last", "add", "remove"),
    [
        # a late payload misses the bot's last label: it is removed all the same
        (["bug"], NEEDS_REPLY, "ready-for-dev",
         ("needs-refinement",), ("ready-for-dev",)),
        # the store's row is stale (the next row was lost after the labels changed): its label
        # is not on the issue, so it must not save the add (before: nothing added, the payload's
        # needs-refinement removed, no gate label left)
        (["bug", "needs-refinement"], VALID_REPLY,
         "ready-for-dev", ("ready-for-dev",), ("needs-refinement",)),
        (["ready-for-dev"], VALID_REPLY, "ready-for-dev",
         (), ()),
    ],
)  # fmt: skip
def test_the_stores_last_label_is_removed_but_never_taken_as_present(
    fake_model: FakeChatModel,
    labels: list[str],
    reply: str,
    last: str,
    add: tuple[str, ...],
    remove: tuple[str, ...],
) -> None:
    fake_model.enqueue(reply)
    validator = Validator(fake_model, VALIDATOR_OPTIONS, max_body_chars=6000)
    plan = plan_gate(_event(labels), validator, owner=_the_bots, last_applied=last)
    assert (plan.labels.add, plan.labels.remove) == (add, remove)


# --- the author comment only when the policy is measured to be right ---------------------

SHORT = "The app crashes when I click save."
"""Seven words: too little to act on, whatever the model quotes."""


def _short_event() -> IssuesEvent:
    event = _event([])
    return event.model_copy(update={"issue": event.issue.model_copy(update={"body": SHORT})})


def _plan(model: FakeChatModel, policy: GatePolicy | None, precision: float = 0.8) -> GatePlan:
    model.enqueue(NEEDS_REPLY)
    validator = Validator(model, VALIDATOR_OPTIONS, max_body_chars=6000, policy=policy)
    return plan_gate(
        _short_event(),
        validator,
        owner=_the_bots,
        author_comment=True,
        comment_min_precision=precision,
    )


@pytest.mark.parametrize("name", ["fake-model", "qwen2.5-coder:1.5b", "llama3.1:70b"])
def test_a_policy_measured_at_the_bound_asks_the_author(name: str) -> None:
    plan = _plan(FakeChatModel(name=name), guards_policy(name, precision=0.8))
    assert plan.decision.verdict == "NEEDS_REFINEMENT"
    assert plan.author_comment is not None
    assert plan.author_comment.create
    assert plan.comment_withheld is None


@pytest.mark.parametrize("precision", [0.0, 0.59, 0.79])
def test_below_the_bound_the_label_is_set_and_no_author_comment_is_planned(
    precision: float,
) -> None:
    plan = _plan(FakeChatModel(), guards_policy(precision=precision))
    assert plan.labels.target.name == "needs-refinement"
    assert plan.author_comment is None
    assert plan.comment_withheld is not None
    assert f"precision, {precision:.0%}, is below 80%" in plan.comment_withheld
    text, summary = render_gate_plan(plan), render_gate_summary(plan, applied=False)
    assert "comment:  not posted: the policy's measured needs-refinement precision" in text
    assert "**Author comment:** not posted" in summary
    version = plan.decision.policy.policy.version  # type: ignore[union-attr]
    # name and version as code, so no link or zero-width space is put into the version
    assert f"**Decision policy:** `test-guards` (`{version}`, " in summary


@pytest.mark.parametrize(
    ("policy", "why"),
    [
        (None, "is not measured for this model and prompt"),  # the default: another model's
        (GUARDS.model_copy(update={"measured": None}), "never measured"),
        (guards_policy("another-model"), "measured with another model another-model"),
        (guards_policy(prompt_version="validator@00000000"), "prompt validator@00000000"),
    ],
)
def test_a_policy_whose_figures_do_not_hold_here_asks_no_author(
    policy: GatePolicy | None, why: str
) -> None:
    # the fake model has a measured policy of its own (conftest): the default case needs a
    # model without one
    model = FakeChatModel(name="unmeasured-model") if policy is None else FakeChatModel()
    plan = _plan(model, policy)
    assert plan.labels.target.name == "needs-refinement"
    assert plan.author_comment is None
    assert plan.comment_withheld is not None
    assert why in plan.comment_withheld


def test_a_needs_refinement_on_the_models_misquote_asks_no_author() -> None:
    """The model quoted a problem and a trigger the issue does not hold: the guard rules
    NEEDS_REFINEMENT, but it is the model's error, so no author is told the issue lacks them."""
    model = FakeChatModel()
    model.enqueue(reply("VALID", "Steps are given.", problem="it hangs on start", trigger="run x"))
    validator = Validator(model, VALIDATOR_OPTIONS, max_body_chars=6000, policy=guards_policy())
    event = _event([])
    plan = plan_gate(event, validator, owner=_the_bots, author_comment=True)
    assert (plan.decision.verdict, plan.decision.rule) == ("NEEDS_REFINEMENT", "unbacked")
    assert plan.author_comment is None
    assert plan.comment_withheld is not None
    assert "the model's quotes could not be found in the issue" in plan.comment_withheld


def test_the_comment_setting_off_withholds_nothing_to_explain() -> None:
    model = FakeChatModel()
    model.enqueue(NEEDS_REPLY)
    validator = Validator(model, VALIDATOR_OPTIONS, max_body_chars=6000, policy=guards_policy())
    plan = plan_gate(_short_event(), validator, owner=_the_bots, author_comment=False)
    assert (plan.author_comment, plan.comment_withheld) == (None, None)


def test_a_new_policy_judges_an_unchanged_issue_again() -> None:
    """The replay skip holds for the same text, model, prompt and policy; a recalibrated policy
    is a new judgment."""
    event = _event([])
    last = gate_row(_plan(FakeChatModel(), guards_policy()))
    stored = {**last.__dict__, "content_sha": last.content_sha}
    same = {"model": "fake-model", "max_body_chars": 6000, "prompt_version": last.prompt_version}
    short = _short_event()
    assert already_decided(short, stored, policy_version=GUARDS.version, **same)
    other = GUARDS.model_copy(update={"short_words": 5}).version
    assert not already_decided(short, stored, policy_version=other, **same)
    assert not already_decided(event, stored, policy_version=GUARDS.version, **same)


@pytest.mark.parametrize("policy", [None, guards_policy(precision=0.1)])
def test_a_bound_of_zero_asks_authors_whatever_was_measured(policy: GatePolicy | None) -> None:
    model = FakeChatModel(name="unmeasured-model") if policy is None else FakeChatModel()
    plan = _plan(model, policy, precision=0.0)
    assert plan.author_comment is not None
    assert plan.comment_withheld is None
