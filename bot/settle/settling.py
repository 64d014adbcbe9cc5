"""The settle run: a repository's issues updated since the cursor, each with a decision not yet
settled, settled within a request budget; then the pull requests, if given.

Requests: one per page of the updated-issues list (100 issues), one GraphQL query per page for
the edit histories of the issues to settle on it, one per page of each such issue's timeline.
The cursor moves as :mod:`bot.settle.walk` says, so a spent budget, a rate limit or a fault
loses nothing: the next run resumes there (the issues of its second settled already the store
then skips as handled).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from bot.clients.github_port import EditHistory, ListedIssue, SettlePort
from bot.dataset.rules import LabelRules
from bot.errors import GitHubUnreadable
from bot.gate.labels import DEFAULT_LABELS, GateLabels
from bot.history.protocol import HistoryStore
from bot.history.record import (
    GATE_TABLE,
    GateOutcome,
    GateOutcomeRow,
    cursor,
    put_cursor,
    put_gate_outcome,
)
from bot.neutralise import log_value, neutralise
from bot.settle.budget import Budget
from bot.settle.duplicate_outcomes import settle_duplicates_page
from bot.settle.issues import settle_issue
from bot.settle.walk import cursor_after, stamp, walk_within

__all__ = ["ISSUES", "PullsStep", "SettlePart", "SettleReport", "settle_issues", "settle_repo"]

ISSUES = "issues"
"""The cursor kind of issues."""

PER_PAGE = 100
"""Issues a list page and a timeline page hold (GitHub's maximum, as the client asks)."""


class SettlePart(Protocol):
    """What another settling step reports: its lines for the log and summary."""

    def lines(self) -> list[str]: ...


PullsStep = Callable[[Budget], SettlePart]
"""Settles the repository's pull requests within the same budget, after the issues."""


@dataclass
class SettleReport:
    """What a settle run did: outcomes written, unsettled by reason, requests, why it stopped."""

    repo: str
    settled: Counter[str] = field(default_factory=Counter)
    """Settled decisions written by this run, by outcome."""
    unsettled: Counter[str] = field(default_factory=Counter)
    """Decisions left unsettled by this run, by reason."""
    unchanged: int = 0
    """Issues listed whose outcome was final or already as written."""
    requests: int = 0
    stopped: str | None = None
    """Why the run stopped before the list's end (budget, rate limit), ``None``: it got there."""
    cursor: str | None = None
    parts: list[SettlePart] = field(default_factory=list)
    skipped: str | None = None
    """Why nothing was read (``None``: the run read GitHub)."""
    duplicates: Counter[str] = field(default_factory=Counter)
    """Duplicate rankings settled by this run, by outcome (``right``, ``wrong``)."""

    def lines(self) -> list[str]:
        """The report as plain log lines (untrusted values through ``log_value``)."""
        if self.skipped is not None:
            return [f"settle:   {log_value(self.repo)}: {log_value(self.skipped, max_chars=300)}"]
        settled = ", ".join(f"{n} {o}" for o, n in sorted(self.settled.items())) or "none"
        out = [
            f"settle:   {log_value(self.repo)}: issues settled {settled}; "
            f"{sum(self.unsettled.values())} unsettled; {self.unchanged} unchanged; "
            f"{self.requests} request(s)"
        ]
        for reason, n in sorted(self.unsettled.items(), key=lambda kv: (-kv[1], kv[0])):
            out.append(f"  unsettled {n}: {log_value(reason, max_chars=200)}")
        if self.duplicates:
            out.append(
                f"  duplicate rankings settled: {self.duplicates['right']} right, "
                f"{self.duplicates['wrong']} wrong"
            )
        if self.stopped:
            out.append(f"  stopped: {log_value(self.stopped, max_chars=300)}; the next run resumes")
        out.append(f"  cursor: {log_value(self.cursor or 'none')}")
        for part in self.parts:
            out += part.lines()
        return out

    def summary(self) -> str:
        """The report as markdown for the step summary."""
        if self.skipped is not None:
            return f"### Settling {neutralise(self.repo)}\n\n{neutralise(self.skipped)}.\n\n"
        rows = [f"| {neutralise(o)} | {n} |" for o, n in sorted(self.settled.items())]
        rows += [
            f"| unsettled: {neutralise(r)} | {n} |"
            for r, n in sorted(self.unsettled.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        text = (
            f"### Settling {neutralise(self.repo)}\n\n"
            f"{self.requests} GitHub request(s); {self.unchanged} issue(s) unchanged.\n\n"
        )
        if rows:
            text += "| outcome | issues |\n|---|---|\n" + "\n".join(rows) + "\n\n"
        if self.stopped:
            text += f"Stopped: {neutralise(self.stopped)}; the next run resumes.\n\n"
        for part in self.parts:
            text += "\n".join(neutralise(line) for line in part.lines()) + "\n\n"
        return text


def _pending(
    store: HistoryStore,
    repo: str,
    decision: dict[str, Any],
    issue: ListedIssue,
    since: datetime | None,
) -> bool:
    """Whether the decision is to settle: no outcome of it yet, or an unsettled one and the
    issue updated after ``since`` (the last second whose issues a run before handled). A
    settled outcome is final for its decision."""
    row = store.get(GATE_TABLE, {"repo": repo, "issue": decision["issue"]})
    if row is None or int(row["decision_id"]) != int(decision["id"]):
        return True
    if GateOutcome(str(row["outcome"])).settled:
        return False
    return since is None or issue.updated_at is None or issue.updated_at > since


def _same(store: HistoryStore, row: GateOutcomeRow) -> bool:
    now = store.get(GATE_TABLE, {"repo": row.repo, "issue": row.issue})
    return (
        now is not None
        and int(now["decision_id"]) == row.decision_id
        and now["outcome"] == str(row.outcome)
        and now["expected"] == row.expected
        and now["reason"] == row.reason
    )


def settle_issues(
    github: SettlePort,
    store: HistoryStore,
    repo: str,
    budget: Budget,
    *,
    since: datetime | None = None,
    gate: GateLabels = DEFAULT_LABELS,
    rules: LabelRules | None = None,
    max_body_chars: int = 6000,
) -> SettleReport:
    """Settle ``repo``'s decided issues updated since ``since`` (``None``: the stored cursor).

    Stops, keeping what is written, when the budget is spent or GitHub answers with a rate
    limit; the cursor then names the last issue fully handled.

    Raises:
        GitHubError: other than a rate limit (the cursor stays past what was written).
        StoreError: a read or write of the store failed.
    """
    rules = rules or LabelRules.from_config(gate=gate)
    report = SettleReport(repo)
    stored = cursor(store, repo, ISSUES)
    start = since or (datetime.fromisoformat(stored) if stored else None)
    report.cursor = stored  # where the next run resumes, until this one moves it
    # Every issue updated at or before ``through`` is handled: the stored cursor's second, or
    # for ``since`` (on or after it) the one before.
    through = since - timedelta(seconds=1) if since else start
    done: set[int] = set()  # handled by this run (a page listed again holds them)
    used = budget.used

    def advance(to: datetime) -> None:
        report.cursor = stamp(to)
        put_cursor(store, repo, ISSUES, report.cursor)

    def step(issues: Sequence[ListedIssue], more: bool) -> datetime | None:
        return _settle_page(
            github,
            store,
            repo,
            budget,
            issues,
            report,
            advance,
            through,
            done,
            more,
            rules,
            gate,
            max_body_chars,
        )

    try:
        report.stopped = walk_within(github, repo, budget, start, step)
    finally:
        report.requests = budget.used - used
    return report


def _settle_page(
    github: SettlePort,
    store: HistoryStore,
    repo: str,
    budget: Budget,
    issues: Sequence[ListedIssue],
    report: SettleReport,
    advance: Callable[[datetime], None],
    since: datetime | None,
    done: set[int],
    more: bool,
    rules: LabelRules,
    gate: GateLabels,
    max_body_chars: int,
) -> datetime | None:
    """Settle a page's issues in order (those in ``done``, handled earlier in the run, left
    alone; each handled one added); returns the update time of the last one handled.

    The cursor moves (``advance``), also when a request fails or the budget is spent, to that
    time, or to the second before it when an issue of the same second may be left unhandled:
    the next one on the page, or one on the next page (``more``)."""
    todo: dict[int, dict[str, Any]] = {}
    for issue in issues:
        if issue.number in done:
            continue
        decision = store.last_gate(repo, issue.number)
        if decision is not None and _pending(store, repo, decision, issue, since):
            todo[issue.number] = decision
    handled: datetime | None = None
    left = list(issues)
    try:
        # before any issue is handled: a spent budget here leaves the cursor where it was
        report.duplicates.update(
            settle_duplicates_page(
                github, store, repo, budget, [i for i in issues if i.number not in done]
            )
        )
        edits: dict[str, EditHistory] = {}
        if todo:
            budget.spend(1)
            # Only the issues whose timelines the budget still pays for: the loop stops there.
            wanted = [i.node_id for i in issues if i.number in todo][: budget.left]
            edits = github.edit_histories(wanted)
        for issue in issues:
            decision = todo.get(issue.number)
            if decision is not None:
                _settle_one(
                    github,
                    store,
                    repo,
                    budget,
                    issue,
                    decision,
                    edits,
                    report,
                    rules,
                    gate,
                    max_body_chars,
                )
            elif issue.number not in done:
                report.unchanged += 1
            done.add(issue.number)
            handled = issue.updated_at or handled
            left.pop(0)
    finally:
        if handled is not None:
            advance(cursor_after(handled, left, more))
    return handled


def _settle_one(
    github: SettlePort,
    store: HistoryStore,
    repo: str,
    budget: Budget,
    issue: ListedIssue,
    decision: dict[str, Any],
    edits: dict[str, EditHistory],
    report: SettleReport,
    rules: LabelRules,
    gate: GateLabels,
    max_body_chars: int,
) -> None:
    budget.spend(1)
    unreadable = False
    try:
        timeline = github.issue_timeline(repo, issue.number)
    except GitHubUnreadable:
        # The same answer every run: stopping here would stop every run here.
        timeline, unreadable = None, True
    extra = (len(timeline or ()) - 1) // PER_PAGE
    if extra > 0:
        budget.count(extra)
    row = settle_issue(
        repo,
        decision,
        issue,
        timeline,
        edits.get(issue.node_id),
        rules=rules,
        gate=gate,
        max_body_chars=max_body_chars,
        unreadable=unreadable,
    )
    if _same(store, row):
        report.unchanged += 1
        return
    put_gate_outcome(store, row)
    if row.outcome.settled:
        report.settled[str(row.outcome)] += 1
    else:
        report.unsettled[row.reason] += 1


def settle_repo(
    github: SettlePort,
    store: HistoryStore,
    repo: str,
    budget: Budget,
    *,
    since: datetime | None = None,
    gate: GateLabels = DEFAULT_LABELS,
    bot_login: str | None = None,
    rules: LabelRules | None = None,
    max_body_chars: int = 6000,
    pulls: PullsStep | None = None,
) -> SettleReport:
    """Settle ``repo``'s issues, then (unless the issues stopped the run) its pull requests
    through ``pulls`` with what is left of the same budget.

    Raises:
        GitHubError, StoreError: as :func:`settle_issues`.
    """
    rules = rules or LabelRules.from_config(gate=gate, bot_login=bot_login)
    report = settle_issues(
        github,
        store,
        repo,
        budget,
        since=since,
        gate=gate,
        rules=rules,
        max_body_chars=max_body_chars,
    )
    if pulls is not None and report.stopped is None:
        report.parts.append(pulls(budget))
    return report
