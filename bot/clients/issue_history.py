"""The wire shapes of what ``triage-bot dataset`` reads, parsed into the port's data.

Four answers, each validated by a pydantic model that ignores what it does not name
(GitHub adds fields): an item of REST "List repository issues", an event of REST "List
timeline events for an issue" (docs.github.com, "Issues" → "Timeline events"; every event
type shares ``event``, ``actor`` and ``created_at``, a ``commented`` event is an issue comment
with ``user``, ``author_association`` and ``body``), and the GraphQL edit history of an issue's
body (``Issue.lastEditedAt``, ``includesCreatedEdit``, ``userContentEdits``: each
``UserContentEdit.diff`` holds the whole body as it stood after that edit), and the GraphQL
duplicate marks of an issue (``MarkedAsDuplicateEvent.canonical``, the issue or pull request it
names; REST's ``marked_as_duplicate`` event carries only the common event fields, no canonical).

An issue's and an event's API URLs name the repository they are in now
(``/repos/OWNER/NAME/…``): an issue transferred after it was listed has its timeline answered
from the other repository (GitHub redirects, PyGithub follows), and only these tell.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from bot.clients.github_port import (
    BodyRevision,
    DuplicateMark,
    EditHistory,
    ListedIssue,
    TimelineItem,
)
from bot.errors import GitHubError

__all__ = [
    "DUPLICATE_MARKS_QUERY",
    "EDIT_HISTORY_QUERY",
    "MAX_NODES",
    "parse_duplicate_marks",
    "parse_edit_histories",
    "parse_issue_page",
    "parse_timeline_item",
    "repository_of",
]

MAX_NODES = 100
"""Most node ids one GraphQL ``nodes(ids:)`` query takes, and most edits read per issue
(GitHub's cap on a connection's ``first``)."""

EDIT_HISTORY_QUERY = f"""query($ids: [ID!]!) {{
  nodes(ids: $ids) {{
    ... on Issue {{
      id
      lastEditedAt
      includesCreatedEdit
      userContentEdits(first: {MAX_NODES}) {{
        totalCount
        nodes {{ editedAt deletedAt diff editor {{ login }} }}
      }}
    }}
  }}
}}"""
"""GraphQL: the body's edit history of up to :data:`MAX_NODES` issues in one request."""

MAX_MARKS = 20
"""The newest duplicate marks read per issue (an issue marked more often is rare)."""

_REF = (
    "__typename ... on Issue { number repository { nameWithOwner } } "
    "... on PullRequest { number repository { nameWithOwner } }"
)

DUPLICATE_MARKS_QUERY = f"""query($ids: [ID!]!) {{
  nodes(ids: $ids) {{
    ... on Issue {{
      id
      timelineItems(
        last: {MAX_MARKS}, itemTypes: [MARKED_AS_DUPLICATE_EVENT, UNMARKED_AS_DUPLICATE_EVENT]
      ) {{
        nodes {{
          __typename
          ... on MarkedAsDuplicateEvent {{ createdAt canonical {{ {_REF} }} }}
          ... on UnmarkedAsDuplicateEvent {{ createdAt canonical {{ {_REF} }} }}
        }}
      }}
    }}
  }}
}}"""
"""GraphQL: the duplicate marks of up to :data:`MAX_NODES` issues in one request."""


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class _User(_Wire):
    login: str | None = None
    type: str | None = None


class _Label(_Wire):
    name: str


class _Issue(_Wire):
    number: int
    node_id: str
    title: str
    body: str | None = None
    user: _User | None = None
    author_association: str = "NONE"
    labels: list[_Label] = Field(default_factory=list)
    created_at: datetime
    updated_at: datetime | None = None
    state: str = "closed"
    state_reason: str | None = None
    locked: bool = False
    active_lock_reason: str | None = None
    pull_request: dict[str, Any] | None = None
    repository_url: str | None = None


class _Repository(_Wire):
    full_name: str | None = None


class _PullMark(_Wire):
    merged_at: datetime | None = None


class _SourceIssue(_Wire):
    number: int | None = None
    pull_request: _PullMark | None = None
    repository: _Repository | None = None


class _Source(_Wire):
    issue: _SourceIssue | None = None


class _Rename(_Wire):
    from_: str | None = Field(default=None, alias="from")


class _Event(_Wire):
    event: str
    created_at: datetime | None = None
    actor: _User | None = None
    user: _User | None = None
    author_association: str | None = None
    body: str | None = None
    label: _Label | None = None
    commit_id: str | None = None
    state_reason: str | None = None
    source: _Source | None = None
    rename: _Rename | None = None
    url: str | None = None
    issue_url: str | None = None


class _Edit(_Wire):
    edited_at: datetime = Field(alias="editedAt")
    deleted_at: datetime | None = Field(default=None, alias="deletedAt")
    diff: str | None = None
    editor: _User | None = None


class _Edits(_Wire):
    total: int = Field(default=0, alias="totalCount")
    nodes: list[_Edit | None] = Field(default_factory=list)


class _IssueNode(_Wire):
    id: str | None = None
    last_edited_at: datetime | None = Field(default=None, alias="lastEditedAt")
    includes_created_edit: bool = Field(default=False, alias="includesCreatedEdit")
    edits: _Edits | None = Field(default=None, alias="userContentEdits")


class _NodesData(_Wire):
    nodes: list[_IssueNode | None] = Field(default_factory=list)


class _GraphQLAnswer(_Wire):
    data: _NodesData | None = None


class _NameWithOwner(_Wire):
    name_with_owner: str | None = Field(default=None, alias="nameWithOwner")


class _Canonical(_Wire):
    typename: str | None = Field(default=None, alias="__typename")
    number: int | None = None
    repository: _NameWithOwner | None = None


class _Mark(_Wire):
    typename: str | None = Field(default=None, alias="__typename")
    created_at: datetime | None = Field(default=None, alias="createdAt")
    canonical: _Canonical | None = None


class _Marks(_Wire):
    nodes: list[_Mark | None] = Field(default_factory=list)


class _MarkedNode(_Wire):
    id: str | None = None
    marks: _Marks | None = Field(default=None, alias="timelineItems")


class _MarkedNodes(_Wire):
    nodes: list[_MarkedNode | None] = Field(default_factory=list)


class _MarksAnswer(_Wire):
    data: _MarkedNodes | None = None


_ISSUES = TypeAdapter(list[_Issue])

_REPO_PATH = re.compile(r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)(?:/|$)")
"""The repository in an API URL's path (after the base URL's own path, if any)."""


def repository_of(url: str | None) -> str | None:
    """The ``OWNER/NAME`` an API URL names (``…/repos/OWNER/NAME/…``), or ``None``."""
    found = _REPO_PATH.search(urlsplit(url).path) if url else None
    return f"{found['owner']}/{found['name']}" if found else None


def parse_issue_page(data: Any, *, what: str) -> tuple[ListedIssue, ...]:
    """A page of "List repository issues" → :class:`ListedIssue` items, in GitHub's order.

    Raises:
        GitHubError: the answer is not a list of issues.
    """
    try:
        items = _ISSUES.validate_python(data)
    except ValidationError as exc:
        raise GitHubError(f"{what}: GitHub's answer is not a list of issues ({exc})") from None
    return tuple(
        ListedIssue(
            number=item.number,
            node_id=item.node_id,
            title=item.title,
            body=item.body or "",
            author=item.user.login if item.user else None,
            author_type=item.user.type if item.user else None,
            author_association=item.author_association,
            labels=tuple(label.name for label in item.labels),
            created_at=item.created_at,
            state_reason=item.state_reason,
            locked=item.locked,
            lock_reason=item.active_lock_reason,
            pull_request=item.pull_request is not None,
            repository=repository_of(item.repository_url),
            state=item.state,
            updated_at=item.updated_at,
        )
        for item in items
    )


def parse_timeline_item(raw: dict[str, Any], repo: str) -> TimelineItem | None:
    """One timeline event → :class:`TimelineItem`; ``None`` for an event without a name
    (nothing the rules could read). A pull request counts as ``source_pull`` only when it
    belongs to ``repo`` (a fork's merged pull request fixed nothing here)."""
    try:
        event = _Event.model_validate(raw)
    except ValidationError:
        return None
    person = event.user if event.event == "commented" and event.user else event.actor
    source = event.source.issue if event.source else None
    pull = None
    merged = False
    if source is not None and source.pull_request is not None and source.number is not None:
        same_repo = source.repository is not None and (
            (source.repository.full_name or "").lower() == repo.lower()
        )
        if same_repo:
            pull = source.number
            merged = source.pull_request.merged_at is not None
    return TimelineItem(
        event=event.event,
        created_at=event.created_at,
        actor=person.login if person else None,
        actor_type=person.type if person else None,
        author_association=event.author_association,
        body=event.body,
        label=event.label.name if event.label else None,
        commit_id=event.commit_id,
        state_reason=event.state_reason,
        source_pull=pull,
        source_merged=merged,
        rename_from=event.rename.from_ if event.rename else None,
        repository=repository_of(event.issue_url) or repository_of(event.url),
    )


def parse_edit_histories(data: Any, *, what: str) -> dict[str, EditHistory]:
    """The answer to :data:`EDIT_HISTORY_QUERY` → node id → :class:`EditHistory`; a node
    GitHub answered ``null`` (the issue is gone) is left out.

    Raises:
        GitHubError: the answer has no ``data.nodes`` list.
    """
    try:
        answer = _GraphQLAnswer.model_validate(data)
    except ValidationError as exc:
        raise GitHubError(f"{what}: GitHub's answer is not an edit history ({exc})") from None
    if answer.data is None:
        raise GitHubError(f"{what}: GitHub's answer holds no data")
    found: dict[str, EditHistory] = {}
    for node in answer.data.nodes:
        if node is None or node.id is None:
            continue
        edits = node.edits or _Edits()
        found[node.id] = EditHistory(
            last_edited_at=node.last_edited_at,
            includes_created_edit=node.includes_created_edit,
            total=edits.total,
            revisions=tuple(
                BodyRevision(
                    edited_at=edit.edited_at,
                    text=None if edit.deleted_at is not None else edit.diff,
                    editor=edit.editor.login if edit.editor else None,
                )
                for edit in edits.nodes
                if edit is not None
            ),
        )
    return found


def _mark(mark: _Mark) -> DuplicateMark | None:
    if mark.typename not in ("MarkedAsDuplicateEvent", "UnmarkedAsDuplicateEvent"):
        return None
    canonical = mark.canonical
    return DuplicateMark(
        created_at=mark.created_at,
        canonical_number=canonical.number if canonical else None,
        canonical_repo=(
            canonical.repository.name_with_owner if canonical and canonical.repository else None
        ),
        canonical_is_pull=canonical is not None and canonical.typename == "PullRequest",
        undone=mark.typename == "UnmarkedAsDuplicateEvent",
    )


def parse_duplicate_marks(data: Any, *, what: str) -> dict[str, tuple[DuplicateMark, ...]]:
    """The answer to :data:`DUPLICATE_MARKS_QUERY` → node id → its marks, oldest first; a node
    GitHub answered ``null`` (the issue is gone) is left out.

    Raises:
        GitHubError: the answer has no ``data.nodes`` list.
    """
    try:
        answer = _MarksAnswer.model_validate(data)
    except ValidationError as exc:
        raise GitHubError(f"{what}: GitHub's answer is not a list of issues ({exc})") from None
    if answer.data is None:
        raise GitHubError(f"{what}: GitHub's answer holds no data")
    found: dict[str, tuple[DuplicateMark, ...]] = {}
    for node in answer.data.nodes:
        if node is None or node.id is None:
            continue
        marks = (_mark(m) for m in (node.marks or _Marks()).nodes if m is not None)
        found[node.id] = tuple(m for m in marks if m is not None)
    return found
