"""Webhook events: read the payload, validate the parts the bot reads, route or skip.

Payload models ignore extra fields (GitHub adds them). Payload errors become
:class:`~bot.errors.EventError` here, and only here.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from bot.clients.github_port import PullRef
from bot.errors import EventError
from bot.regular_file import FileTooLarge, NotRegularFile, read_regular

__all__ = [
    "AUDIT_ACTIONS",
    "AUDIT_EVENTS",
    "GATE_ACTIONS",
    "MAX_ID",
    "MAX_PAYLOAD_BYTES",
    "REPO_PATTERN",
    "SCHEDULE_EVENT",
    "IssueCommentEvent",
    "IssuesEvent",
    "PullRequestEvent",
    "Scheduled",
    "Skip",
    "load_payload",
    "route_event",
]

_P = TypeVar("_P", bound="_Payload")

REPO_PATTERN = re.compile(
    r"^[A-Za-z0-9](?:[A-Za-z0-9_]|-(?=[A-Za-z0-9_])){0,38}"  # owner: no leading/double/end '-'
    r"/(?!\.\.?\Z)[A-Za-z0-9_.-]{1,100}\Z"  # name: letters, digits, '_', '.', '-'; never . or ..
)
"""``owner/name`` as GitHub allows it, for payloads and ``--repo`` alike.

``_`` is allowed in owners: managed-user logins such as ``octocat_corp`` hold it.
"""

MAX_ID = 2**53
"""Largest number or id accepted (JSON's safe integers): bigger is a malformed payload."""

MAX_PAYLOAD_BYTES = 25 * 2**20
"""GitHub's cap on webhook payloads; a bigger event file is refused unread."""
_NAME = re.compile(r"^[a-z_]{1,64}$")

GATE_ACTIONS = frozenset({"opened", "edited", "reopened"})

AUDIT_EVENTS = frozenset({"pull_request_target", "pull_request"})
AUDIT_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})
MODEL_EVENTS = frozenset({"issues", *AUDIT_EVENTS})
"""Events whose pipelines call a model: the CLI preloads an embedded model for them."""


class _Payload(BaseModel):
    # strict: GitHub sends well-typed JSON, so "number": true or "private": "yes" is malformed
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)


class Label(_Payload):
    name: str


class User(_Payload):
    """A user or bot account (``type`` is ``User``, ``Bot`` or ``Organization``)."""

    login: str
    type: str = "User"


class Issue(_Payload):
    number: int = Field(gt=0, le=MAX_ID)
    title: str
    body: str | None = None
    state: str = "open"
    labels: list[Label] = Field(default_factory=list)
    user: User | None = None
    pull_request: dict[str, Any] | None = None
    """Present when the issue is a pull request (issue_comment events)."""
    created_at: str | None = None
    """ISO 8601 as GitHub sends it; read with :meth:`created`."""

    def created(self) -> datetime | None:
        """When the issue was opened; ``None`` when the payload's time is missing or unreadable."""
        try:
            moment = datetime.fromisoformat(self.created_at or "")
        except ValueError:
            return None
        return moment if moment.tzinfo is not None else None

    @property
    def label_names(self) -> list[str]:
        return [label.name for label in self.labels]


class Repository(_Payload):
    full_name: str

    @field_validator("full_name")
    @classmethod
    def _owner_slash_name(cls, value: str) -> str:
        if not REPO_PATTERN.match(value):
            raise ValueError("must be OWNER/NAME as GitHub allows them")
        return value

    private: bool = False
    default_branch: str | None = None
    """The branch the repository file is read from."""


class _Change(_Payload):
    from_: str | None = Field(default=None, alias="from")


class IssueChanges(_Payload):
    """``changes`` of ``issues.edited``."""

    title: _Change | None = None
    body: _Change | None = None


class IssuesEvent(_Payload):
    action: str
    issue: Issue
    repository: Repository
    sender: User | None = None
    changes: IssueChanges | None = None


class _Head(_Payload):
    sha: str = Field(pattern=r"^[0-9a-f]{40}$")


class PullRequest(_Payload):
    number: int = Field(gt=0, le=MAX_ID)
    state: str = "open"
    draft: bool = False
    head: _Head


class PullRequestEvent(_Payload):
    action: str
    pull_request: PullRequest
    repository: Repository
    sender: User | None = None

    def pull_ref(self) -> PullRef:
        """The event's pull request at its head SHA, as the audit works on it."""
        pr = self.pull_request
        return PullRef(
            repo=self.repository.full_name,
            number=pr.number,
            head_sha=pr.head.sha,
            draft=pr.draft,
            state=pr.state,
            public_repo=not self.repository.private,
        )


class Comment(_Payload):
    id: int = Field(gt=0, le=MAX_ID)
    body: str | None = None
    user: User
    author_association: str = "NONE"


class IssueCommentEvent(_Payload):
    action: str
    issue: Issue
    comment: Comment
    repository: Repository
    sender: User

    @property
    def on_pull_request(self) -> bool:
        return self.issue.pull_request is not None

    def as_issues_event(self) -> IssuesEvent:
        """The comment's issue as an ``issues`` event, for re-running the gate."""
        return IssuesEvent(action="edited", issue=self.issue, repository=self.repository)


SCHEDULE_EVENT = "schedule"
"""The cron trigger; its payload is not read: the repository is ``GITHUB_REPOSITORY``."""


@dataclass(frozen=True)
class Scheduled:
    """A ``schedule`` event: re-judge the issues whose last decision was ``validator-error``."""


@dataclass(frozen=True)
class Skip:
    """An event the bot deliberately does nothing for; ``reason`` is one line for the log."""

    reason: str


def load_payload(path: Path) -> dict[str, Any]:
    """Read and JSON-decode the payload file.

    Raises :exc:`EventError` if it is missing, not a regular file, over
    :data:`MAX_PAYLOAD_BYTES`, or not a UTF-8 JSON object.
    """
    try:
        text = read_regular(path, limit=MAX_PAYLOAD_BYTES).decode("utf-8")
    except FileNotFoundError as exc:
        raise EventError(f"event file not found: {path}") from exc
    except NotRegularFile as exc:
        raise EventError(f"event file {exc.strerror}: {path}") from exc
    except FileTooLarge as exc:
        raise EventError(
            f"event file is larger than GitHub's {MAX_PAYLOAD_BYTES // 2**20} MB "
            f"payload cap: {path}"
        ) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise EventError(f"event file unreadable: {path}: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EventError(f"event file is not valid JSON: {path}: {exc}") from exc
    except (ValueError, RecursionError) as exc:
        raise EventError(f"event file is not usable JSON: {path}: {type(exc).__name__}") from exc
    if not isinstance(data, dict):
        raise EventError(f"event payload must be a JSON object, got {type(data).__name__}")
    return data


def _validate(model: type[_P], payload: dict[str, Any], what: str) -> _P:
    try:
        return model.model_validate(payload)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
            for err in exc.errors(include_url=False)[:5]
        )
        raise EventError(f"malformed {what} payload: {problems}") from exc


def _route_pull_request(event_name: str, payload: dict[str, Any]) -> PullRequestEvent | Skip:
    action = payload.get("action")
    if action not in AUDIT_ACTIONS:
        return Skip(
            f"{event_name}.{action} does not run the audit "
            "(only opened, synchronize, reopened, ready_for_review)"
        )
    event = _validate(PullRequestEvent, payload, event_name)
    pr = event.pull_request
    if pr.state != "open":
        return Skip(f"pull request #{pr.number} is {pr.state}, not open")
    if pr.draft:
        return Skip(f"pull request #{pr.number} is a draft")
    return event


def route_event(
    event_name: str, payload: dict[str, Any]
) -> IssuesEvent | PullRequestEvent | IssueCommentEvent | Scheduled | Skip:
    """The validated event for the gate, the audit or a command; :class:`Skip` for the rest.

    Drafts, closed items and edits that leave title and body alone are skipped.
    Raises :exc:`EventError` if a payload lacks what its pipeline needs.
    """
    if not _NAME.match(event_name):
        raise EventError("the event name must be lower-case letters and underscores")
    if event_name == SCHEDULE_EVENT:
        return Scheduled()
    if event_name not in AUDIT_EVENTS and event_name not in ("issues", "issue_comment"):
        return Skip(f"event {event_name!r} is not handled by triage-bot")
    action = payload.get("action")
    if not isinstance(action, str) or not _NAME.match(action):
        raise EventError(f"malformed {event_name} payload: action must be a lower-case word")
    if event_name in AUDIT_EVENTS:
        return _route_pull_request(event_name, payload)
    if event_name == "issue_comment":
        if action != "created":
            return Skip(f"issue_comment.{action} is not a command (only new comments are)")
        return _validate(IssueCommentEvent, payload, event_name)
    if action not in GATE_ACTIONS:
        return Skip(f"issues.{action} does not run the gate (only opened, edited, reopened)")
    event = _validate(IssuesEvent, payload, "issues")
    if action == "edited":
        changes = event.changes
        if changes is None or (changes.title is None and changes.body is None):
            return Skip("issues.edited changed neither the title nor the body")
    if event.issue.state != "open":
        return Skip(f"issue #{event.issue.number} is {event.issue.state}, not open")
    return event
