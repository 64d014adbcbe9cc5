"""The duplicate index's backfill (``triage-bot index``): a repository's issues of every state,
updated since the cursor, written to the store's index a page at a time.

Requests: one per page of the updated-issues list (100 issues and pull requests), nothing
else: the list holds each issue's title, body and opening time. Each page's issues are written
in one transaction, then the cursor (``settle_cursors``, kind ``index``) moves past them
(:mod:`bot.settle.walk`), so a spent budget, a rate limit or a fault loses nothing and a rerun
reads only what changed since. An issue the list names in another repository (transferred) is
dropped from the index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.clients.github_port import ListedIssue, SettlePort
from bot.duplicates.terms import BODY_CHARS, issue_terms
from bot.errors import ConfigError
from bot.history.protocol import HistoryStore, IndexedIssue
from bot.history.record import cursor, put_cursor
from bot.neutralise import log_value
from bot.settle.budget import Budget
from bot.settle.walk import cursor_after, stamp, walk_within

__all__ = ["INDEX", "IndexReport", "backfill_index", "indexed_issue"]

INDEX = "index"
"""The cursor kind of the duplicate index."""


@dataclass
class IndexReport:
    """What a backfill did: pages read, issues indexed and dropped, requests, why it stopped."""

    repo: str
    pages: int = 0
    indexed: int = 0
    dropped: int = 0
    """Transferred issues dropped from the index."""
    requests: int = 0
    size: int | None = None
    """Issues the index holds for the repository after the run."""
    stopped: str | None = None
    """Why the run stopped before the list's end (budget, rate limit), ``None``: it got there."""
    cursor: str | None = None
    skipped: str | None = None
    """Why nothing was read (``None``: the run read GitHub)."""
    vectors: int | None = None
    """Title vectors computed for indexed issues without one (``None``: no title model)."""
    no_titles: str | None = None
    """Why there is no title model, when there is none."""
    vectors_stopped: str | None = None
    """Why computing the title vectors stopped (a store fault), when it did."""

    def lines(self) -> list[str]:
        """The report as plain log lines (untrusted values through ``log_value``)."""
        repo = log_value(self.repo)
        if self.skipped is not None:
            return [f"index:    {repo}: {log_value(self.skipped, max_chars=300)}"]
        per = f"{self.requests / self.indexed:.2f}" if self.indexed else "–"
        out = [
            f"index:    {repo}: {self.pages} page(s), {self.indexed} issue(s) indexed, "
            f"{self.dropped} dropped (transferred); {self.requests} request(s), {per} per issue"
        ]
        if self.size is not None:
            out.append(f"  the index holds {self.size} issue(s) of {repo}")
        if self.stopped:
            out.append(f"  stopped: {log_value(self.stopped, max_chars=300)}; the next run resumes")
        out.append(f"  cursor: {log_value(self.cursor or 'none')}")
        if self.vectors is not None:
            out.append(f"  title vectors: {self.vectors} computed for issues without one")
        elif self.vectors_stopped is not None:
            why = log_value(self.vectors_stopped, max_chars=300)
            out.append(f"  title vectors: stopped: {why}; rankings compute the missing ones")
        elif self.no_titles is not None:
            why = log_value(self.no_titles, max_chars=300)
            out.append(f"  title vectors: none (duplicates ranked by words only: {why})")
        return out


def indexed_issue(issue: ListedIssue) -> IndexedIssue:
    """An issue as the index keeps it: title, the first :data:`BODY_CHARS` of its body, their
    terms, and its opening time in UTC."""
    body = issue.body[:BODY_CHARS]
    found = issue_terms(issue.title, body)
    created = stamp(issue.created_at.astimezone(UTC))
    return IndexedIssue(issue.number, issue.title, body, found.title, found.body, created)


def _home(issue: ListedIssue, repo: str) -> bool:
    return issue.repository is None or issue.repository.lower() == repo.lower()


def _same_name(repo: str, issues: Sequence[ListedIssue]) -> None:
    """Refuse ``repo`` spelt in another case than GitHub's: the gate reads the index under the
    name its events give, so rows under another spelling would never be read.

    Raises:
        ConfigError: a listed issue's repository is ``repo`` in another case.
    """
    for issue in issues:
        name = issue.repository
        if name is not None and name != repo and name.lower() == repo.lower():
            raise ConfigError(
                f"GitHub names the repository {log_value(name)}: give --repo {log_value(name)}"
            )


def backfill_index(
    github: SettlePort,
    store: HistoryStore,
    repo: str,
    budget: Budget,
    *,
    since: datetime | None = None,
) -> IndexReport:
    """Index ``repo``'s issues updated since ``since`` (``None``: the stored cursor); a spent
    budget or a rate limit stops it, keeping what is written.

    Raises:
        ConfigError: ``repo`` is spelt in another case than GitHub's (nothing written).
        GitHubError: other than a rate limit (the cursor stays past what was written).
        StoreError: a read or write of the store failed.
    """
    report = IndexReport(repo)
    stored = cursor(store, repo, INDEX)
    start = since or (datetime.fromisoformat(stored) if stored else None)
    report.cursor = stored
    # Every issue updated at or before ``through`` is indexed: the stored cursor's second, or
    # for ``since`` (on or after it) the one before.
    through = since - timedelta(seconds=1) if since else start
    done: set[int] = set()  # written by this run (a page listed again holds them)
    used = budget.used

    def step(issues: Sequence[ListedIssue], more: bool) -> datetime | None:
        report.pages += 1
        _same_name(repo, issues)
        fresh = [
            i
            for i in issues
            if i.number not in done
            and (through is None or i.updated_at is None or i.updated_at > through)
        ]
        home = [i for i in fresh if _home(i, repo)]
        moved = [i.number for i in fresh if not _home(i, repo)]
        if home:
            store.index_issues(repo, [indexed_issue(i) for i in home])
            report.indexed += len(home)
        if moved:
            report.dropped += store.drop_indexed(repo, moved)
        done.update(i.number for i in fresh)
        handled = max((i.updated_at for i in issues if i.updated_at is not None), default=None)
        if handled is not None:
            report.cursor = stamp(cursor_after(handled, (), more))
            put_cursor(store, repo, INDEX, report.cursor)
        return handled

    try:
        report.stopped = walk_within(github, repo, budget, start, step)
    finally:
        report.requests = budget.used - used
    report.size = store.index_size(repo)
    return report
