"""The gate plan and its application, with a fake model and a recording GitHub port."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import VALIDATOR_OPTIONS
from bot.events import IssuesEvent, route_event
from bot.gate_flow import apply_gate, plan_gate
from bot.triage.validator import Validator
from tests.replies import COMPLETE_BODY, NEEDS_REPLY, VALID_REPLY
from tests.support import FakeChatModel, RecordingGitHub, load_webhook


def _the_bots(name: str) -> bool:
    """Every gate label on these issues was added by the bot (its ``labeled`` events say so)."""
    return True


def _event(labels: list[str]) -> IssuesEvent:
    """The real issues.opened payload with ``labels``, its body completed so that a model's
    VALID can stand (:data:`tests.replies.COMPLETE_BODY`)."""
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
    plan = plan_gate(_event(labels), validator, owned=_the_bots)
    github = RecordingGitHub()
    applied = apply_gate(plan, github)
    assert [(c[0], c[-1]) for c in github.calls] == expected_calls
    assert applied.requests == len(expected_calls)
    assert plan.repo == "Codertocat/Hello-World"
    assert plan.public_repo


def test_rerun_with_label_in_place_writes_nothing(fake_model: FakeChatModel) -> None:
    fake_model.enqueue(NEEDS_REPLY)
    validator = Validator(fake_model, VALIDATOR_OPTIONS, max_body_chars=6000)
    plan = plan_gate(_event(["needs-refinement"]), validator, owned=_the_bots)
    github = RecordingGitHub()
    assert apply_gate(plan, github).requests == 0
    assert github.calls == []


def test_example_event_is_the_real_payload() -> None:
    root = Path(__file__).resolve().parent.parent
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
    plan = plan_gate(_event(labels), validator, owned=_the_bots, last_applied=last)
    assert (plan.labels.add, plan.labels.remove) == (add, remove)
