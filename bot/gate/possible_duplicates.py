"""The gate's possible duplicates: the issue written to the index, and the earlier issues most
like it, listed in the plan and the step summary."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.duplicates.rank import Candidate, Ranker
from bot.duplicates.suggestions import record_ranking
from bot.duplicates.terms import BODY_CHARS, issue_terms
from bot.errors import StoreError
from bot.history.protocol import HistoryStore, IndexedIssue
from bot.neutralise import code_span, neutralise

__all__ = [
    "LISTED",
    "MIN_LISTED_SCORE",
    "NO_INDEX",
    "DuplicatesPlan",
    "index_backlog",
    "index_row",
    "plan_duplicates",
    "render_duplicates_summary",
]

LISTED = 3
"""How many candidates the plan lists, at most."""
MIN_LISTED_SCORE = 0.2
"""Candidates scoring below this are not listed (the cosine: 0–1)."""
NO_INDEX = "no index: the store does not outlive the job"
_TITLE_CHARS = 80


@dataclass(frozen=True)
class DuplicatesPlan:
    """What the gate found: candidates best first, whether this run indexed the issue, and why
    nothing could be listed (``problem``)."""

    candidates: tuple[Candidate, ...] = ()
    best: Candidate | None = None
    """The top candidate whatever its score (recorded for the live record)."""
    indexed: bool = False
    size: int = 0
    problem: str | None = None

    def describe(self) -> str:
        """One plain-text line (each sink escapes it)."""
        if self.problem is not None:
            return self.problem
        if self.size <= int(self.indexed):
            return "the index holds no other issue of this repository (triage-bot index fills it)"
        if not self.candidates:
            return f"none scoring ≥ {MIN_LISTED_SCORE} among {self.size} indexed issues"
        return "; ".join(
            f"#{c.number} {c.score:.2f} {' '.join(c.title.split())[:_TITLE_CHARS]}"
            for c in self.candidates
        )


def index_row(number: int, title: str, body: str | None, created_at: datetime) -> IndexedIssue:
    """An issue as the index holds it.

    Raises:
        ValueError: ``created_at`` has no time zone.
    """
    terms = issue_terms(title, body)
    return IndexedIssue(
        number=number,
        title=title,
        body=(body or "")[:BODY_CHARS],
        title_terms=terms.title,
        body_terms=terms.body,
        created_at=created_at.isoformat(),
    )


def index_backlog(store: HistoryStore, repo: str, rows: Sequence[IndexedIssue]) -> str | None:
    """Index the backlog's judged issues in one write; a store fault is returned as a warning."""
    if not rows:
        return None
    try:
        store.index_issues(repo, rows)
    except StoreError as exc:
        return f"duplicates: {len(rows)} judged issue(s) not indexed: {exc}"
    return None


def plan_duplicates(
    store: HistoryStore,
    repo: str,
    row: IndexedIssue,
    *,
    write: bool,
    kept: bool,
) -> DuplicatesPlan:
    """Index ``row`` (when ``write``), rank the issues created before it, and record the top
    candidate (when ``write``).

    ``kept``: the store outlives the job (otherwise nothing is read or written: an index that
    starts empty in every job finds nothing). A store fault is the plan's ``problem``.
    """
    if not kept:
        return DuplicatesPlan(problem=NO_INDEX)
    indexed = False
    try:
        if write:
            store.index_issues(repo, [row])
            indexed = True
        ranker = Ranker(store, repo)
        found = ranker.rank(
            issue_terms(row.title, row.body), exclude=row.number, before=row.created_at, k=LISTED
        )
        size = store.index_size(repo)
        best = found[0] if found else None
        if write:
            record_ranking(store, repo, row.number, best.number if best else None, _score(best))
    except StoreError as exc:
        return DuplicatesPlan(indexed=indexed, problem=f"the index cannot be used: {exc}")
    listed = tuple(c for c in found if c.score >= MIN_LISTED_SCORE)
    return DuplicatesPlan(listed, best, indexed=indexed, size=size)


def _score(candidate: Candidate | None) -> float:
    return candidate.score if candidate is not None else 0.0


def render_duplicates_summary(plan: DuplicatesPlan) -> Sequence[str]:
    """The step summary's lines for ``plan`` (GitHub-flavoured markdown)."""
    if plan.problem is not None or not plan.candidates:
        return [f"\n**Possible duplicates:** {neutralise(plan.describe())}"]
    lines = ["\n**Possible duplicates** (not said on the issue):", ""]
    lines += [
        f"- #{c.number} {code_span(c.title, max_chars=_TITLE_CHARS)} (score {c.score:.2f})"
        for c in plan.candidates
    ]
    return lines
