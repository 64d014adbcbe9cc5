"""The wire shape of the candidates' state read (one GraphQL query, issues by number).

GitHub answers a number it no longer has as an issue (deleted, transferred: apache/devlake#7969
met the latter; a pull request) with ``null`` and a ``NOT_FOUND`` error; it is left out. An
issue answered from another repository is dropped by :func:`usable` all the same.
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
    """The answer to :func:`issue_states_query` → number → :class:`IssueState`.

    Raises:
        GitHubUnreadable: not that shape, no repository, or an error other than ``NOT_FOUND``
            (a state unknown must not be taken for gone).
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
