"""What the pipelines need from GitHub: the :class:`GitHubPort` protocol and the data it trades in.

The pipelines (:mod:`bot.gate.plan`, :mod:`bot.audit.plan`, :mod:`bot.commands`) and the tests'
fakes see only this; :class:`bot.clients.github_client.PyGithubClient` implements it with
PyGithub, and its module docstring lists the requests each method costs.

:class:`IssueHistoryPort` is what ``triage-bot dataset`` (:mod:`bot.dataset`) reads: a
repository's closed issues, each one's timeline and the edit history of its body.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

__all__ = [
    "BodyRevision",
    "BotComment",
    "ChangedFile",
    "EditHistory",
    "GitHubPort",
    "IssueHistoryPort",
    "IssuePage",
    "LabelEvent",
    "ListedIssue",
    "PostedReviewComment",
    "PullRef",
    "RateLimit",
    "ReviewComment",
    "TimelineItem",
]


@dataclass(frozen=True)
class BotComment:
    """An existing comment of the bot's, found by its hidden marker."""

    id: int
    body: str


@dataclass(frozen=True)
class LabelEvent:
    """One ``labeled`` or ``unlabeled`` event of an issue (REST "List issue events").

    Attributes:
        label: the label's name at the time.
        actor_login: who acted (``github-actions[bot]`` for the Actions token); ``None`` when
            GitHub gives no actor.
        actor_type: ``User``, ``Bot`` or ``Organization``; ``None`` when GitHub gives no actor.
        created_at: when, as GitHub wrote it (ISO 8601, UTC).
        removed: an ``unlabeled`` event.
    """

    label: str
    actor_login: str | None
    actor_type: str | None
    created_at: str = ""
    removed: bool = False


@dataclass(frozen=True)
class ChangedFile:
    """One entry of "List pull request files" (what the audit selects its lines from).

    Attributes:
        path: ``filename`` (new path for renames).
        status: ``added``, ``removed``, ``modified``, ``renamed``, ``copied``, ``changed`` …
        patch: the unified diff, or ``None`` for binary/too-large files.
        previous_path: ``previous_filename`` for renames.
    """

    path: str
    status: str
    patch: str | None
    previous_path: str | None = None


@dataclass(frozen=True)
class PullRef:
    """What an audit needs to know about a PR: where, which head SHA, and its state."""

    repo: str
    number: int
    head_sha: str
    draft: bool = False
    state: str = "open"
    public_repo: bool = True


@dataclass(frozen=True)
class ReviewComment:
    """One line comment of a pull-request review (REST "Create a review for a pull request",
    ``comments[]``): always on the RIGHT side, the new file.

    Attributes:
        path: the file, relative to the repository root.
        line: the new-side line number; it must be a line of the PR's diff (GitHub answers 422
            otherwise).
        body: the comment's markdown.
    """

    path: str
    line: int
    body: str


@dataclass(frozen=True)
class PostedReviewComment:
    """A review comment of the bot's already on the PR (REST "List review comments on a pull
    request"): ``commit_id`` is its ``original_commit_id``, the head SHA it was posted at."""

    commit_id: str
    body: str


class GitHubPort(Protocol):
    """What the pipelines need from GitHub. ``repo`` is ``owner/name``; numbers are issue numbers.

    Every method raises :class:`~bot.errors.GitHubError` subclasses only.
    """

    def ensure_label(self, repo: str, name: str, *, color: str, description: str) -> None:
        """Create the label ``name`` with ``color`` (six hex digits, no ``#``) and
        ``description`` unless a label of that name already exists."""
        ...

    def add_labels(self, repo: str, number: int, names: Sequence[str]) -> None:
        """Add labels to an issue (labels already present are left as they are)."""
        ...

    def remove_label(self, repo: str, number: int, name: str) -> None:
        """Remove one label from an issue; a label that is already gone is not an error."""
        ...

    def label_events(self, repo: str, number: int) -> list[LabelEvent]:
        """The issue's ``labeled`` and ``unlabeled`` events, oldest first (``GET
        .../issues/{n}/events``)."""
        ...

    def issue(self, repo: str, number: int) -> dict[str, Any]:
        """The issue as it is now (``GET .../issues/{n}``), shaped like a webhook payload's
        ``issue``: number, title, body, state, labels."""
        ...

    def pull(self, repo: str, number: int) -> PullRef:
        """The PR's head SHA and state (``GET .../pulls/{n}``); used by manual runs."""
        ...

    def pull_files(self, repo: str, number: int) -> list[ChangedFile]:
        """The PR's changed files with their patches (``GET .../pulls/{n}/files``)."""
        ...

    def file_lines(self, repo: str, path: str, ref: str) -> list[str]:
        """The file's lines at ``ref`` (a head SHA), read through the API, never checked out."""
        ...

    def repo_file(self, repo: str, path: str, ref: str | None) -> str | None:
        """The text of the file at ``path`` on ``ref`` (the default branch; ``None`` lets
        GitHub pick it), or ``None`` when there is no such file (404).

        Raises:
            ConfigError: the file is larger than the API serves (1 MB).
        """
        ...

    def login(self) -> str | None:
        """The login the bot's writes appear as (``github-actions[bot]`` for the Actions
        token, ``NAME[bot]`` for a GitHub App, the user for a personal access token): the one
        the client was given, else asked of GitHub once and kept; ``None`` when it cannot be
        known (no token). A comment or label counts as the bot's only when this login wrote
        it, so another app's, or a person's, is never taken for its own."""
        ...

    def find_bot_comment(self, repo: str, number: int, marker: str) -> BotComment | None:
        """The bot's comment whose body starts with ``marker``, or ``None``: written by
        :meth:`login` (case-insensitively; no login known: ``None``)."""
        ...

    def upsert_comment(self, repo: str, number: int, existing: BotComment | None, body: str) -> str:
        """Edit ``existing`` (PATCH) or create a comment (POST); returns ``edited``/``created``."""
        ...

    def post_comment(self, repo: str, number: int, body: str) -> int:
        """Create a comment on issue/PR ``number`` (POST); returns its id."""
        ...

    def edit_comment(self, repo: str, number: int, comment_id: int, body: str) -> None:
        """Replace the body of comment ``comment_id`` (PATCH); :class:`GitHubNotFound` when it
        is gone."""
        ...

    def bot_review_comments(self, repo: str, number: int, marker: str) -> list[PostedReviewComment]:
        """The PR's review comments whose body starts with ``marker``, written by
        :meth:`login` (``GET .../pulls/{n}/comments``; no login known: none)."""
        ...

    def create_review(
        self, repo: str, number: int, head_sha: str, body: str, comments: Sequence[ReviewComment]
    ) -> None:
        """One review at ``head_sha`` with the ``COMMENT`` event (never approve, never request
        changes) holding ``comments`` (``POST .../pulls/{n}/reviews``)."""
        ...

    def collaborator_permission(self, repo: str, login: str) -> str:
        """``admin``, ``write``, ``read`` or ``none`` (GitHub's legacy ``permission`` field:
        maintain reads as write, triage as read)."""
        ...

    def add_reaction(self, repo: str, number: int, comment_id: int, content: str) -> None:
        """React to a comment on issue/PR ``number`` (e.g. ``eyes``)."""
        ...

    def open_issues(self, repo: str) -> list[dict[str, Any]]:
        """Open issues (not PRs) as payload-shaped dicts: number, title, body, labels, state."""
        ...


@dataclass(frozen=True)
class ListedIssue:
    """One item of "List repository issues" (``state=closed``), as the dataset needs it.

    Attributes:
        number: the issue number.
        node_id: its GraphQL id (the edit history is read by it).
        title: the title now (its earlier titles are in the timeline's ``renamed`` events).
        body: the body now; ``""`` for none.
        author: the reporter's login (``None`` for a deleted account: GitHub's ``ghost``
            has a login, so this is rare).
        author_type: ``User``, ``Bot`` or ``Organization``.
        author_association: the reporter's relation to the repository (``OWNER``,
            ``MEMBER``, ``COLLABORATOR``, ``CONTRIBUTOR``, ``NONE`` …).
        labels: the label names it carries now.
        created_at: when it was opened (UTC).
        state_reason: why it was closed: ``completed``, ``not_planned``, ``duplicate`` or
            ``None`` (closed before GitHub recorded reasons).
        locked: whether its conversation is locked; ``lock_reason`` says why
            (``resolved``, ``off-topic``, ``too heated``, ``spam`` or ``None``).
        pull_request: the item is a pull request (the issues list holds both).
        repository: the ``OWNER/NAME`` its ``repository_url`` names (the repository GitHub
            listed it in); ``None`` when the answer names none.
    """

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
    repository: str | None = None


@dataclass(frozen=True)
class IssuePage:
    """One page of closed issues, newest first.

    Attributes:
        issues: the page's items (pull requests among them, marked); ``None`` when GitHub
            answered 304 Not Modified to the page's ``etag`` (nothing on it changed).
        etag: the page's ``ETag``, to ask again conditionally.
        has_next: GitHub's ``Link`` header names a next page (unknown, ``False``, on a 304).
    """

    issues: tuple[ListedIssue, ...] | None
    etag: str | None
    has_next: bool


@dataclass(frozen=True)
class TimelineItem:
    """One event of an issue's timeline (REST "List timeline events for an issue"), with
    only what the dataset's rules read.

    Attributes:
        event: GitHub's name: ``commented``, ``labeled``, ``unlabeled``, ``closed``,
            ``reopened``, ``referenced``, ``cross-referenced``, ``renamed`` …
        created_at: when (UTC); ``None`` when GitHub gives no time.
        actor: who did it (a comment's author for ``commented``); ``None`` when unknown.
        actor_type: ``User``, ``Bot`` or ``Organization``; ``None`` when unknown.
        author_association: a comment author's relation to the repository (``commented``
            only: GitHub gives it for no other event).
        body: a comment's text (``commented``).
        label: the label's name (``labeled``, ``unlabeled``).
        commit_id: the commit that closed or referenced the issue (``closed``, ``referenced``).
        state_reason: why it was closed (``closed``).
        source_pull: the number of the pull request that referenced the issue, when the
            reference is a pull request of the same repository (``cross-referenced``).
        source_merged: that pull request is merged.
        rename_from: the title before a ``renamed`` event.
        repository: the ``OWNER/NAME`` the event's own API URL names (``url``; a comment's
            ``issue_url``): the repository the issue is in now. ``None`` when it names none
            (a ``cross-referenced`` event has no URL of its own).
    """

    event: str
    created_at: datetime | None
    actor: str | None = None
    actor_type: str | None = None
    author_association: str | None = None
    body: str | None = None
    label: str | None = None
    commit_id: str | None = None
    state_reason: str | None = None
    source_pull: int | None = None
    source_merged: bool = False
    rename_from: str | None = None
    repository: str | None = None


@dataclass(frozen=True)
class BodyRevision:
    """One revision of an issue's body (GraphQL ``UserContentEdit``): the whole text as it
    stood after the edit made at ``edited_at`` (the creation itself when GitHub kept it).
    ``text`` is ``None`` when the author deleted the revision from the history."""

    edited_at: datetime
    text: str | None
    editor: str | None


@dataclass(frozen=True)
class EditHistory:
    """An issue body's edit history (GraphQL ``Issue.lastEditedAt``, ``includesCreatedEdit``,
    ``userContentEdits``).

    Attributes:
        last_edited_at: the last edit (UTC); ``None``: never edited, the body is as posted.
        includes_created_edit: the revisions hold the text as first posted.
        total: how many revisions GitHub holds (``revisions`` may be fewer: the newest 100).
        revisions: the revisions read, in any order.
    """

    last_edited_at: datetime | None
    includes_created_edit: bool = False
    total: int = 0
    revisions: tuple[BodyRevision, ...] = ()


@dataclass(frozen=True)
class RateLimit:
    """What GitHub's last answer said of the rate limit (``X-RateLimit-*``): requests left of
    ``limit`` until ``reset`` (epoch seconds)."""

    remaining: int
    limit: int
    reset: int


class IssueHistoryPort(Protocol):
    """What ``triage-bot dataset`` reads from GitHub; every method raises
    :class:`~bot.errors.GitHubError` subclasses only."""

    def closed_issues_page(
        self, repo: str, page: int, *, since: datetime | None = None, etag: str | None = None
    ) -> IssuePage:
        """Page ``page`` (from 1) of the closed issues and pull requests, newest first,
        100 a page; ``since`` keeps those updated at or after it; with ``etag`` the request
        is conditional (a 304 costs no rate limit and gives ``issues=None``).

        Raises:
            GitHubError: past the list's page bound, or its ``next`` link leaves the API.
        """
        ...

    def issue_timeline(self, repo: str, number: int) -> list[TimelineItem] | None:
        """The issue's timeline in GitHub's order (oldest first; events of one second as
        GitHub lists them); ``None`` when the issue is gone (404, 410). A transferred issue's
        is the other repository's (its items name it).

        Raises:
            GitHubError: its pages do not end (past a bound, or back to a page already read),
                or a ``next`` link leaves the API.
        """
        ...

    def edit_histories(self, node_ids: Sequence[str]) -> dict[str, EditHistory]:
        """The body's edit history of each issue named by GraphQL node id (at most 100); an
        issue GitHub no longer has is left out."""
        ...

    def rate_limit(self) -> RateLimit | None:
        """The rate limit as GitHub's last answer gave it (no request); ``None`` before any."""
        ...

    def repo_file(self, repo: str, path: str, ref: str | None) -> str | None:
        """As :meth:`GitHubPort.repo_file` (the repository's configuration)."""
        ...
