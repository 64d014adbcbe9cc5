"""The wire shape of the candidates' state read (one GraphQL query, issues by number).

GitHub answers an issue it no longer has under that number with ``null`` and an error of type
``NOT_FOUND`` ("Could not resolve to an Issue with the number of N"): a deleted issue, a pull
request's number, and a transferred one alike (GitHub's REST API answers a transfer with a
301 to the new repository; GraphQL's ``repository.issue`` does not follow it, as
apache/devlake#7969 found). Such a number is left out of the answer. Should GitHub answer a
transferred issue from its new repository, ``repository`` names that one: :func:`usable`
drops it all the same.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.clients.github_port import IssueState
from bot.errors import GitHubUnreadable

__all__ = ["MAX_ISSUE_STATES", "issue_states_query", "parse_issue_states", "usable"]

MAX_ISSUE_STATES = 20
"""Issues one query reads: the candidates of one suggestion, with room to spare."""

_FIELDS = "number state stateReason locked repository { nameWithOwner }"


def issue_states_query(numbers: Sequence[int]) -> str:
    """One query reading each of ``numbers`` under the alias ``i<N>``."""
    issues = "\n".join(f"    i{int(n)}: issue(number: {int(n)}) {{ {_FIELDS} }}" for n in numbers)
    return (
        "query($owner: String!, $name: String!) {\n"
        "  repository(owner: $owner, name: $name) {\n"
        f"{issues}\n"
        "  }\n"
        "}"
    )


class _Shape(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _Repository(_Shape):
    name_with_owner: str = Field(alias="nameWithOwner")


class _Issue(_Shape):
    number: int
    state: str
    state_reason: str | None = Field(None, alias="stateReason")
    locked: bool = False
    repository: _Repository


class _Error(_Shape):
    type: str | None = None


class _Data(_Shape):
    repository: dict[str, _Issue | None] | None = None


class _Answer(_Shape):
    data: _Data | None = None
    errors: list[_Error] = []


def parse_issue_states(data: Any, *, what: str) -> dict[int, IssueState]:
    """The answer to :func:`issue_states_query` → number → :class:`IssueState`; the numbers
    GitHub answers ``null`` are left out.

    Raises:
        GitHubUnreadable: not that shape, no repository, or an error other than ``NOT_FOUND``
            (the state of a candidate is then unknown, and it must not be taken for gone).
    """
    try:
        answer = _Answer.model_validate(data)
    except ValidationError as exc:
        raise GitHubUnreadable(f"{what}: GitHub's answer is not a list of issues ({exc})") from None
    other = sorted({e.type or "unnamed" for e in answer.errors if e.type != "NOT_FOUND"})
    if other:
        raise GitHubUnreadable(f"{what}: GitHub's answer holds errors ({', '.join(other)})")
    if answer.data is None or answer.data.repository is None:
        raise GitHubUnreadable(f"{what}: GitHub's answer holds no repository")
    return {
        node.number: IssueState(
            number=node.number,
            state=node.state,
            locked=node.locked,
            repository=node.repository.name_with_owner,
            state_reason=node.state_reason,
        )
        for node in answer.data.repository.values()
        if node is not None
    }


def usable(states: Mapping[int, IssueState], repo: str, numbers: Sequence[int]) -> list[int]:
    """``numbers`` that are open or closed issues of ``repo`` and not locked, in their order."""
    kept = []
    for number in numbers:
        state = states.get(number)
        if (
            state is not None
            and state.state in ("OPEN", "CLOSED")
            and state.repository.lower() == repo.lower()
            and not state.locked
        ):
            kept.append(number)
    return kept
