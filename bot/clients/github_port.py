"""The GitHub port the pipelines see, and the data it trades in."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "BodyRevision",
    "BotComment",
    "ChangedFile",
    "Comparison",
    "DuplicateMark",
    "DuplicatesPort",
    "EditHistory",
    "GitHubPort",
    "IssueHistoryPort",
    "IssuePage",
    "IssueState",
    "LabelEvent",
    "ListedIssue",
    "PostedReviewComment",
    "PullHistory",
    "PullRef",
    "RateLimit",
    "ReviewComment",
    "ReviewThread",
    "SettlePort",
    "ThreadComment",
    "TimelineItem",
]


@dataclass(frozen=True)
class BotComment:
    id: int
    body: str


@dataclass(frozen=True)
class LabelEvent:
    """One ``labeled`` or ``unlabeled`` event; actor fields ``None`` when GitHub gives none."""

    label: str
    actor_login: str | None
    actor_type: str | None
    created_at: str = ""
    removed: bool = False


@dataclass(frozen=True)
class ChangedFile:
    """One changed file of a PR; ``patch`` is ``None`` for binary or too-large files."""

    path: str
    status: str
    patch: str | None
    previous_path: str | None = None


@dataclass(frozen=True)
class PullRef:
    repo: str
    number: int
    head_sha: str
    draft: bool = False
    state: str = "open"
    public_repo: bool = True


@dataclass(frozen=True)
class ReviewComment:
    """A review comment on a new-side line, which must be in the PR's diff (else 422)."""

    path: str
    line: int
    body: str


@dataclass(frozen=True)
class PostedReviewComment:
    """A review comment of the bot's; ``commit_id`` is the head SHA it was posted at."""

    commit_id: str
    body: str


@dataclass(frozen=True)
class ThreadComment:
    """One review comment of a thread: who wrote it, and where and at which commit it was
    written (``line`` ``None``: a file-level comment, or GitHub lost its position)."""

    id: int
    author: str | None
    path: str
    line: int | None
    commit_id: str | None


@dataclass(frozen=True)
class ReviewThread:
    """A pull request's review thread: its comments oldest first, the first one the root."""

    resolved: bool
    comments: tuple[ThreadComment, ...]


@dataclass(frozen=True)
class PullHistory:
    """What settling reads of a pull request: its state, final head SHA and review threads.

    ``state`` is ``OPEN``, ``CLOSED`` or ``MERGED``; times are ISO 8601; ``complete`` is false
    when GitHub had more threads (or comments in a thread) than one query reads.
    """

    number: int
    state: str
    head_sha: str
    merged_at: str | None
    closed_at: str | None
    threads: tuple[ReviewThread, ...]
    complete: bool = True


@dataclass(frozen=True)
class Comparison:
    """The files changed from ``base`` to ``head`` (``GET .../compare/{base}...{head}``).

    ``status``: ``ahead`` when ``head`` descends from ``base`` (the only case whose patches
    are on ``base``'s lines), ``identical``, ``behind`` or ``diverged``; ``truncated``: GitHub
    lists at most 300 files, so a file not listed may still have changed.
    """

    status: str
    files: tuple[ChangedFile, ...]
    truncated: bool = False


@dataclass(frozen=True)
class IssueState:
    """An issue as GitHub has it now: ``state`` ``OPEN`` or ``CLOSED``, and ``repository``
    (``OWNER/NAME``) where it is."""

    number: int
    state: str
    locked: bool
    repository: str
    state_reason: str | None = None


class GitHubPort(Protocol):
    """What the pipelines need from GitHub; methods raise only ``GitHubError`` subclasses."""

    def ensure_label(self, repo: str, name: str, *, color: str, description: str) -> None:
        """``POST .../labels`` unless it exists; ``color`` is six hex digits, no ``#``."""
        ...

    def add_labels(self, repo: str, number: int, names: Sequence[str]) -> None:
        """``POST .../issues/{n}/labels``; labels already present stay."""
        ...

    def remove_label(self, repo: str, number: int, name: str) -> None:
        """``DELETE .../issues/{n}/labels/{name}``; a label already gone is no error."""
        ...

    def label_events(self, repo: str, number: int) -> list[LabelEvent]:
        """The issue's label events, oldest first (``GET .../issues/{n}/events``)."""
        ...

    def issue(self, repo: str, number: int) -> dict[str, Any]:
        """``GET .../issues/{n}``, shaped like a webhook payload's ``issue``."""
        ...

    def pull(self, repo: str, number: int) -> PullRef:
        """The PR's head SHA and state (``GET .../pulls/{n}``)."""
        ...

    def pull_files(self, repo: str, number: int) -> list[ChangedFile]:
        """The changed files with their patches (``GET .../pulls/{n}/files``)."""
        ...

    def file_lines(self, repo: str, path: str, ref: str) -> list[str]:
        """The file's lines at ``ref``, read through the API, never checked out."""
        ...

    def repo_file(self, repo: str, path: str, ref: str | None) -> str | None:
        """Text at ``ref`` (``None``: default branch); ``None`` on 404; ConfigError past 1 MB."""
        ...

    def login(self) -> str | None:
        """The login the bot writes as; ``None`` without a token. At most one request a job."""
        ...

    def find_bot_comment(self, repo: str, number: int, marker: str) -> BotComment | None:
        """The comment starting with ``marker`` written by :meth:`login`, or ``None``."""
        ...

    def upsert_comment(self, repo: str, number: int, existing: BotComment | None, body: str) -> str:
        """Edit ``existing`` (PATCH) or create (POST); returns ``edited`` or ``created``."""
        ...

    def post_comment(self, repo: str, number: int, body: str) -> int:
        """Create a comment (POST, never retried on 5xx); returns its id."""
        ...

    def edit_comment(self, repo: str, number: int, comment_id: int, body: str) -> None:
        """Replace a comment's body (PATCH); :class:`GitHubNotFound` when it is gone."""
        ...

    def bot_review_comments(self, repo: str, number: int, marker: str) -> list[PostedReviewComment]:
        """The PR's review comments starting with ``marker`` written by :meth:`login`."""
        ...

    def create_review(
        self, repo: str, number: int, head_sha: str, body: str, comments: Sequence[ReviewComment]
    ) -> None:
        """One ``COMMENT`` review at ``head_sha``: never approves or requests changes."""
        ...

    def collaborator_permission(self, repo: str, login: str) -> str:
        """``admin``, ``write``, ``read`` or ``none``; maintain reads as write."""
        ...

    def add_reaction(self, repo: str, number: int, comment_id: int, content: str) -> None: ...

    def open_issues(self, repo: str) -> list[dict[str, Any]]:
        """Open issues, not PRs, as payload-shaped dicts."""
        ...

    def pull_history(self, repo: str, number: int) -> PullHistory | None:
        """The PR's state, final head and review threads in one GraphQL query; ``None`` if gone."""
        ...

    def compare(self, repo: str, base: str, head: str) -> Comparison | None:
        """The files changed from ``base`` to ``head`` in one request; ``None`` when either
        commit is unknown to GitHub (a force-push it collected)."""
        ...

    def issue_states(self, repo: str, numbers: Sequence[int]) -> dict[int, IssueState]:
        """Up to 20 issues' state in one GraphQL query; a number GitHub no longer has (deleted,
        transferred, a pull request) is absent (``bot/clients/issue_states.py``)."""
        ...


@dataclass(frozen=True)
class ListedIssue:
    number: int
    node_id: str
    title: str
    body: str
    author: str | None
    author_type: str | None
    author_association: str
    labels: tuple[str, ...]
    created_at: datetime
    state_reason: str | None = None
    locked: bool = False
    lock_reason: str | None = None
    pull_request: bool = False
    repository: str | None = None  # OWNER/NAME its repository_url names
    state: str = "closed"
    updated_at: datetime | None = None


@dataclass(frozen=True)
class IssuePage:
    """One page of a list of issues (closed ones newest first, or updated ones least recently
    updated first); ``issues`` is ``None`` on a 304."""

    issues: tuple[ListedIssue, ...] | None
    etag: str | None
    has_next: bool


@dataclass(frozen=True)
class TimelineItem:
    event: str
    created_at: datetime | None
    actor: str | None = None
    actor_type: str | None = None
    author_association: str | None = None
    body: str | None = None
    label: str | None = None
    commit_id: str | None = None
    state_reason: str | None = None
    source_pull: int | None = None  # a same-repository PR that cross-referenced the issue
    source_merged: bool = False
    rename_from: str | None = None
    repository: str | None = None  # where the issue is now (a transfer moves it); from its URL


@dataclass(frozen=True)
class BodyRevision:
    """An issue body after one edit; ``text`` is ``None`` when the author deleted it."""

    edited_at: datetime
    text: str | None
    editor: str | None


@dataclass(frozen=True)
class EditHistory:
    """An issue body's edit history; ``revisions`` holds at most the newest 100."""

    last_edited_at: datetime | None
    includes_created_edit: bool = False
    total: int = 0
    revisions: tuple[BodyRevision, ...] = ()


@dataclass(frozen=True)
class DuplicateMark:
    """A ``MarkedAsDuplicateEvent`` (or, ``undone``, an ``UnmarkedAsDuplicateEvent``) of an
    issue: the canonical it names, ``None`` when GitHub no longer shows it."""

    created_at: datetime | None
    canonical_number: int | None
    canonical_repo: str | None
    canonical_is_pull: bool = False
    undone: bool = False


@dataclass(frozen=True)
class RateLimit:
    """GitHub's last ``X-RateLimit-*``: ``remaining`` of ``limit`` until ``reset`` (epoch s)."""

    remaining: int
    limit: int
    reset: int


class IssueHistoryPort(Protocol):
    """What ``triage-bot dataset`` reads; raises :class:`~bot.errors.GitHubError` only."""

    def closed_issues_page(
        self, repo: str, page: int, *, since: datetime | None = None, etag: str | None = None
    ) -> IssuePage:
        """Closed issues and PRs, 100 a page; a 304 to ``etag`` is free, ``issues=None``.

        Raises GitHubError past the page bound or on a ``next`` link off the API.
        """
        ...

    def issue_timeline(self, repo: str, number: int) -> list[TimelineItem] | None:
        """The timeline, oldest first; ``None`` if gone; GitHubError on endless pages or links."""
        ...

    def edit_histories(self, node_ids: Sequence[str]) -> dict[str, EditHistory]:
        """Edit histories by node id (at most 100); issues GitHub lost are left out."""
        ...

    def rate_limit(self) -> RateLimit | None:
        """The last answer's rate limit (no request); ``None`` before any."""
        ...

    def repo_file(self, repo: str, path: str, ref: str | None) -> str | None: ...


class DuplicatesPort(Protocol):
    """What ``triage-bot dataset --duplicates`` reads; raises :class:`~bot.errors.GitHubError`
    only."""

    def all_issues_page(self, repo: str, page: int, *, etag: str | None = None) -> IssuePage:
        """Issues and PRs of every state, newest first, 100 a page; a 304 to ``etag`` is free."""
        ...

    def issue_timeline(self, repo: str, number: int) -> list[TimelineItem] | None:
        """As :meth:`IssueHistoryPort.issue_timeline`."""
        ...

    def duplicate_marks(self, node_ids: Sequence[str]) -> dict[str, tuple[DuplicateMark, ...]]:
        """The duplicate marks of up to 100 issues by node id, oldest first, in one GraphQL
        query; issues GitHub lost are left out."""
        ...

    def rate_limit(self) -> RateLimit | None: ...


@runtime_checkable
class SettlePort(Protocol):
    """What settling reads (``triage-bot settle``, the scheduled run); raises
    :class:`~bot.errors.GitHubError` only."""

    def updated_issues_page(self, repo: str, page: int, *, since: datetime | None) -> IssuePage:
        """Issues and PRs of every state updated at or after ``since``, least recently updated
        first, 100 a page (one request)."""
        ...

    def issue_timeline(self, repo: str, number: int) -> list[TimelineItem] | None:
        """As :meth:`IssueHistoryPort.issue_timeline`."""
        ...

    def edit_histories(self, node_ids: Sequence[str]) -> dict[str, EditHistory]:
        """As :meth:`IssueHistoryPort.edit_histories`."""
        ...
