"""Decided issues for the settle tests, cassettes and benchmark: the dataset's scenarios
(:mod:`tests.support.dataset_world`, shaped like GitHub's wire JSON) with the bot's gate
decision on each and the outcome its history implies.

Each :class:`Decided` is one issue: its scenario (served by the dataset's loopback GitHub,
``tests/support/dataset_server.py``), the bot's verdict (``None``: never judged, so it costs no
timeline read) and the outcome settling must write. :func:`decide_all` writes the decisions
to a store as the gate would.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.gate.issue_text import prepare_issue
from bot.gate.types import AUTHOR_MARKER
from bot.history.protocol import GateRow, HistoryStore
from tests.support.dataset_world import (
    ANSWER,
    COMMIT,
    REPO,
    REPORTER,
    SHORT_BODY,
    Scenario,
    closed,
    closed_by_commit,
    closed_without_decision,
    commented,
    issue_item,
    labeled,
    needs_info_label,
    one,
    question_answered,
    stamp,
)

__all__ = ["BOT", "KINDS", "Decided", "decide_all", "decided", "world"]

BOT = "github-actions[bot]"
"""The bot's login (the Actions token's)."""

MODEL = "qwen2.5-coder:1.5b"
PROMPT = "validator@settle"
POLICY = "p-settle"
BOT_ASKS = f"{AUTHOR_MARKER}\nThanks for the report! Could you add the version and the steps?"


@dataclass(frozen=True)
class Decided:
    """One issue, the bot's verdict on it and the outcome its history implies."""

    scenario: Scenario
    verdict: str | None
    outcome: str | None
    """``None``: no decision, nothing written."""

    @property
    def number(self) -> int:
        return self.scenario.number


def _answered_the_bot(n: int, t: datetime) -> Scenario:
    """The bot labels it needs-refinement and asks; the author answers; a commit fixes it."""
    timeline = [
        labeled(t + timedelta(minutes=1), "needs-refinement", BOT, "Bot"),
        commented(t + timedelta(minutes=1), BOT_ASKS, BOT, "NONE", "Bot"),
        commented(t + timedelta(hours=4), ANSWER, REPORTER, "NONE"),
        closed(t + timedelta(days=2), commit=COMMIT),
    ]
    item = issue_item(n, title=f"Export fails ({n})", body=SHORT_BODY, created=t)
    return Scenario("answered the bot", n, item, timeline, "NEEDS_REFINEMENT")


def _overridden_open(n: int, t: datetime) -> Scenario:
    """Open; a maintainer swaps the bot's needs-refinement label for ready-for-dev."""
    timeline = [
        labeled(t + timedelta(minutes=1), "needs-refinement", BOT, "Bot"),
        {**labeled(t + timedelta(hours=2), "needs-refinement"), "event": "unlabeled"},
        labeled(t + timedelta(hours=2), "ready-for-dev"),
    ]
    item = issue_item(n, title=f"Export fails ({n})", body=SHORT_BODY, created=t)
    item.update(state="open", state_reason=None, closed_at=None)
    item["updated_at"] = stamp(t + timedelta(hours=2))
    return Scenario("overridden, open", n, item, timeline, "VALID")


Kind = tuple[str, Callable[[int, datetime], Scenario], str | None, str | None]

KINDS: tuple[Kind, ...] = (
    ("fixed, called VALID", closed_by_commit, "VALID", "agree"),
    ("needs-info label, called NEEDS_REFINEMENT", needs_info_label, "NEEDS_REFINEMENT", "agree"),
    ("fixed, called NEEDS_REFINEMENT", closed_by_commit, "NEEDS_REFINEMENT", "disagree"),
    ("question answered, called VALID", question_answered, "VALID", "disagree"),
    ("the author answered the bot", _answered_the_bot, "NEEDS_REFINEMENT", "agree"),
    ("a maintainer overrode, open", _overridden_open, "NEEDS_REFINEMENT", "override"),
    ("closed with no decision", closed_without_decision, "VALID", "unsettled"),
    ("never judged", closed_by_commit, None, None),
)
"""Each kind of issue: (what, its scenario, the bot's verdict, the outcome)."""


def decided(kind: Kind, number: int) -> Decided:
    """Issue ``number`` of ``kind`` (opened ``number`` hours after :data:`T0`)."""
    _, builder, verdict, outcome = kind
    return Decided(one(builder, number), verdict, outcome)


def world(count: int, *, first: int = 1) -> list[Decided]:
    """``count`` issues numbered from ``first``, cycling through :data:`KINDS`."""
    return [decided(KINDS[i % len(KINDS)], first + i) for i in range(count)]


def decide_all(store: HistoryStore, issues: Sequence[Decided]) -> None:
    """Write the bot's decisions (a minute after each issue was opened, on its text now)."""
    for issue in issues:
        if issue.verdict is None:
            continue
        item = issue.scenario.item
        created = datetime.fromisoformat(item["created_at"].replace("Z", "+00:00"))
        label = "ready-for-dev" if issue.verdict == "VALID" else "needs-refinement"
        text = prepare_issue(item["title"], item["body"], max_body_chars=6000)
        store.record_gate(
            GateRow(
                repo=REPO, issue=issue.number, event="issues.opened", verdict=issue.verdict,
                label=label, reason="judged", error_kind=None, model=MODEL,
                prompt_version=PROMPT, prompt_tokens=1, output_tokens=1, duration_ms=1.0,
                created_at=(created + timedelta(minutes=1)).isoformat(),
                content_sha=text.content_sha, policy_version=POLICY,
            )
        )  # fmt: skip
