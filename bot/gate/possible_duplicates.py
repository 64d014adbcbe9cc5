"""The gate's possible duplicates: the issue indexed, the earlier issues most like it listed,
and whether "possibly the same as #N" is said (:func:`earned`; a live record would take over
from the repository file's figure in :func:`statement_record`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

from bot.clients.github_port import IssueState, LabelEvent
from bot.clients.issue_states import usable
from bot.duplicates.rank import Candidate, Ranker
from bot.duplicates.statement import choose_threshold
from bot.duplicates.suggestions import dismiss, record_ranking, suggestion
from bot.duplicates.terms import BODY_CHARS, issue_terms
from bot.errors import GitHubError, ModelError, StoreError
from bot.gate.earned import LIVE_MIN_SETTLED
from bot.gate.labels import GateLabel
from bot.history.protocol import HistoryStore, IndexedIssue
from bot.neutralise import code_span, neutralise
from bot.repo_file import DuplicatesConfig
from bot.shares import wilson
from bot.types.scores import THRESHOLD_Z

if TYPE_CHECKING:
    from bot.duplicates.title_stage import Encoder, TitleStage

__all__ = [
    "LISTED",
    "MIN_LISTED_SCORE",
    "NO_INDEX",
    "WORDS_ONLY",
    "DuplicatesPlan",
    "SaidDuplicate",
    "StatementRecord",
    "dismissal",
    "duplicate_label",
    "earned",
    "index_backlog",
    "index_row",
    "plan_duplicates",
    "render_duplicates_summary",
    "statement_record",
    "still_there",
    "title_stage",
]

LISTED = 3
"""How many candidates the plan lists, at most."""
MIN_LISTED_SCORE = 0.2
"""Candidates scoring below this are not listed (the cosine: 0–1)."""
NO_INDEX = "no index: the store does not outlive the job"
WORDS_ONLY = "ranked by words only"
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
    said: str | None = None
    """Whether "possibly the same as #N" is said on the issue, and why (or why not)."""
    gone: tuple[int, ...] = ()
    """Candidates GitHub no longer has as open or closed, unlocked issues here (left out)."""
    unchecked: bool = False
    """Their state could not be read: titles are not shown, and nothing is said."""
    words_only: str | None = None
    """Why it was ranked without the title stage (no title model): nothing is said."""

    def describe(self) -> str:
        """One plain-text line (each sink escapes it)."""
        words = f"{WORDS_ONLY}: {self.words_only}" if self.words_only else None
        notes = [n for n in (words, self.said) if n]
        return self._listed() + "".join(f" ({n})" for n in notes)

    def _listed(self) -> str:
        if self.problem is not None:
            return self.problem
        if self.size <= int(self.indexed):
            return "the index holds no other issue of this repository (triage-bot index fills it)"
        gone = f" ({', '.join(f'#{n}' for n in self.gone)} gone or locked)" if self.gone else ""
        if not self.candidates:
            return f"none scoring ≥ {MIN_LISTED_SCORE} among {self.size} indexed issues{gone}"
        return (
            "; ".join(f"#{c.number} {c.score:.2f} {self.shown_title(c)}" for c in self.candidates)
            + gone
        )

    def shown_title(self, candidate: Candidate) -> str:
        """The candidate's title as plain text, or a note when its state is unread."""
        if self.unchecked:
            return "(title not shown: its state could not be read)"
        return " ".join(candidate.title.split())[:_TITLE_CHARS]


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
    encoder: Encoder | None = None,
    no_encoder: str = "no title model",
) -> DuplicatesPlan:
    """Index ``row`` (when ``write``), rank the issues created before it, and record the top
    candidate (when ``write`` and ranked with ``encoder``, the title model; ``no_encoder``:
    why there is none).

    ``kept``: the store outlives the job (otherwise nothing is read or written: an index that
    starts empty in every job finds nothing). A store fault is the plan's ``problem``.
    """
    if not kept:
        return DuplicatesPlan(problem=NO_INDEX)
    if encoder is not None:
        try:
            return _plan(store, repo, row, write=write, encoder=encoder, no_encoder=no_encoder)
        except ModelError as exc:  # the index write stands; the words still rank
            plan = _plan(store, repo, row, write=False, encoder=None, no_encoder=str(exc))
            return replace(plan, indexed=write)
    return _plan(store, repo, row, write=write, encoder=None, no_encoder=no_encoder)


def _plan(
    store: HistoryStore,
    repo: str,
    row: IndexedIssue,
    *,
    write: bool,
    encoder: Encoder | None,
    no_encoder: str,
) -> DuplicatesPlan:
    indexed = False
    try:
        if write:
            store.index_issues(repo, [row])
            indexed = True
        ranker = Ranker(store, repo, title_stage(store, repo, encoder, keep=write))
        found = ranker.rank(
            issue_terms(row.title, row.body),
            exclude=row.number,
            before=row.created_at,
            k=LISTED,
            title=row.title,
        )
        size = ranker.size
        best = found[0] if found else None
        if write and encoder is not None:
            record_ranking(store, repo, row.number, best.number if best else None, _score(best))
    except StoreError as exc:
        return DuplicatesPlan(indexed=indexed, problem=f"the index cannot be used: {exc}")
    listed = tuple(c for c in found if c.score >= MIN_LISTED_SCORE)
    words_only = no_encoder if encoder is None else None
    return DuplicatesPlan(listed, best, indexed=indexed, size=size, words_only=words_only)


def title_stage(
    store: HistoryStore, repo: str, encoder: Encoder | None, *, keep: bool
) -> TitleStage | None:
    """The ranking's title stage with ``encoder`` (``None``: none)."""
    if encoder is None:
        return None
    from bot.duplicates.title_stage import TitleStage  # numpy: only with a title model

    return TitleStage(store, repo, encoder, keep=keep)


def _score(candidate: Candidate | None) -> float:
    return candidate.score if candidate is not None else 0.0


def render_duplicates_summary(plan: DuplicatesPlan) -> Sequence[str]:
    """The step summary's lines for ``plan`` (GitHub-flavoured markdown)."""
    if plan.problem is not None or not plan.candidates:
        return [f"\n**Possible duplicates:** {neutralise(plan.describe())}"]
    notes = [f"{WORDS_ONLY}: {plan.words_only}"] if plan.words_only else []
    notes.append(plan.said or "not said on the issue")
    lines = [f"\n**Possible duplicates** ({'; '.join(map(neutralise, notes))}):", ""]
    for c in plan.candidates:
        title = code_span(c.title, max_chars=_TITLE_CHARS)
        shown = neutralise(plan.shown_title(c)) if plan.unchecked else title
        lines.append(f"- #{c.number} {shown} (score {c.score:.2f})")
    return lines


DUPLICATE_LABEL_COLOR = "cfd3d7"


def duplicate_label(name: str) -> GateLabel:
    """The repository's possible-duplicate label as the bot creates it when it lacks it."""
    return GateLabel(
        name, DUPLICATE_LABEL_COLOR, "triage-bot: possibly the same as an earlier issue"
    )


@dataclass(frozen=True)
class StatementRecord:
    """The figure that earns the statement: ``right`` of ``made`` at or above ``threshold``
    (``None``: the record earns no threshold)."""

    threshold: float | None
    right: int
    made: int
    source: str


def statement_record(
    config: DuplicatesConfig | None,
    settled: Sequence[tuple[float, bool]] = (),
    bound: float = 0.9,
) -> StatementRecord | None:
    """The record that decides the statement, or ``None``: the live record (``settled``
    rankings, :func:`bot.duplicates.suggestions.settled_record`) once it holds
    :data:`~bot.gate.earned.LIVE_MIN_SETTLED`, with the threshold it earns for ``bound``; else
    the repository file's measurement."""
    if len(settled) >= LIVE_MIN_SETTLED:
        source = f"the live record ({len(settled)} settled rankings)"
        chosen = choose_threshold(settled, bound)
        if chosen is None:
            return StatementRecord(None, 0, 0, source)
        return StatementRecord(chosen.threshold, chosen.right, chosen.made, source)
    measured = config.statement if config is not None else None
    if measured is None:
        return None
    return StatementRecord(
        measured.threshold, measured.right, measured.made, "the repository file's measurement"
    )


@dataclass(frozen=True)
class SaidDuplicate:
    """The issue the gate names as possibly the same, and the label it adds (``None``: none)."""

    number: int
    title: str
    label: str | None = None


def earned(
    plan: DuplicatesPlan,
    config: DuplicatesConfig | None,
    bound: float,
    *,
    record: StatementRecord | None = None,
    dismissed: Callable[[], str | None] = lambda: None,
) -> tuple[Candidate | None, str]:
    """The candidate to name on the issue, or ``None``, and why (one plain-text line).

    Said when the top candidate scores at least the record's threshold, the record's lower
    limit (:data:`~bot.types.scores.THRESHOLD_Z`) clears ``bound`` and ``dismissed()``, asked
    last, gives no reason. ``record`` defaults to :func:`statement_record` of ``config``.
    """
    if plan.problem is not None or not plan.candidates:
        return None, "not said: no candidate"
    if plan.words_only:
        return None, "not said: a statement is measured with the title model"
    record = record or statement_record(config)
    if record is None:
        return None, "not said: no measured statement in the repository file"
    if record.threshold is None:
        return None, f"not said: {record.source} earns no threshold at {bound:.0%}"
    top = plan.candidates[0]
    if top.score < record.threshold:
        return None, f"not said: #{top.number} scores below the statement's {record.threshold:.2f}"
    low = wilson(record.right, record.made, THRESHOLD_Z)[0]
    figure = f"{record.right}/{record.made} right, lower limit {low:.0%}"
    if low < bound:
        return None, f"not said: {record.source} ({figure}) is below {bound:.0%}"
    why = dismissed()
    if why is not None:
        return None, f"not said: {why}"
    return top, f"said: possibly the same as #{top.number} ({record.source}, {figure})"


def still_there(
    plan: DuplicatesPlan,
    repo: str,
    states: Callable[[str, Sequence[int]], Mapping[int, IssueState]],
) -> DuplicatesPlan:
    """``plan`` without candidates that are no longer open or closed, unlocked issues of
    ``repo`` (``states``: the port's ``issue_states``, one request), those named in ``gone``;
    a read that fails leaves them, ``unchecked``."""
    numbers = [c.number for c in plan.candidates]
    if not numbers:
        return plan
    try:
        kept = set(usable(states(repo, numbers), repo, numbers))
    except GitHubError:
        return replace(plan, unchecked=True)
    return replace(
        plan,
        candidates=tuple(c for c in plan.candidates if c.number in kept),
        gone=tuple(n for n in numbers if n not in kept),
    )


def dismissal(
    store: HistoryStore,
    repo: str,
    number: int,
    label: str | None,
    events: Callable[[], Sequence[LabelEvent]] | None,
    *,
    login: Callable[[], str | None],
    write: bool,
) -> str | None:
    """Why the issue's suggestions are dismissed, or ``None``: a recorded dismissal, or the
    removal of ``label`` by anyone but the bot (its newest event; ``events`` ``None``: none
    yet), recorded when ``write``. Raises ``StoreError``, ``GitHubError``."""
    row = suggestion(store, repo, number)
    if row is not None and row.dismissed:
        return f"dismissed by {row.dismissed_by or 'a maintainer'}"
    if label is None or events is None:
        return None
    newest = next((e for e in reversed(events()) if e.label.lower() == label.lower()), None)
    if newest is None or not newest.removed:
        return None
    if (newest.actor_login or "").lower() == (login() or "").lower():
        return None  # the bot never removes it: not a person's word
    removed = newest
    who = removed.actor_login or "someone"
    if write:
        dismiss(store, repo, number, who)
    return f"{who} removed the {label} label"
