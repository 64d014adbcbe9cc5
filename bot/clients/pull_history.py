"""The wire shapes of what settling reads of a pull request, parsed into the port's data.

Two answers, each validated by a pydantic model that ignores what it does not name (GitHub
adds fields): the GraphQL pull request with its review threads (``PullRequest.state``,
``headRefOid``, ``reviewThreads``: each ``PullRequestReviewThread.isResolved`` and its
``PullRequestReviewComment`` nodes, whose ``databaseId`` is the REST review comment id), and
REST "Compare two commits" (docs.github.com, "Commits" → "Compare two commits": ``status`` and
up to 300 ``files`` with their patches, on the first page only).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.clients.github_port import (
    ChangedFile,
    Comparison,
    PullHistory,
    ReviewThread,
    ThreadComment,
)
from bot.errors import GitHubUnreadable

__all__ = [
    "COMPARE_MAX_FILES",
    "PULL_HISTORY_QUERY",
    "parse_comparison",
    "parse_pull_history",
]

MAX_THREADS = 100
"""Review threads, and comments per thread, one query reads (GitHub's cap on ``first``)."""

COMPARE_MAX_FILES = 300
"""Files GitHub lists in one comparison; a comparison listing this many may have more."""

PULL_HISTORY_QUERY = f"""query($owner: String!, $name: String!, $number: Int!) {{
  repository(owner: $owner, name: $name) {{
    pullRequest(number: $number) {{
      number
      state
      headRefOid
      mergedAt
      closedAt
      reviewThreads(first: {MAX_THREADS}) {{
        pageInfo {{ hasNextPage }}
        nodes {{
          isResolved
          comments(first: {MAX_THREADS}) {{
            pageInfo {{ hasNextPage }}
            nodes {{ databaseId author {{ login }} path originalLine originalCommit {{ oid }} }}
          }}
        }}
      }}
    }}
  }}
}}"""
"""GraphQL: a pull request's state, final head SHA and review threads in one request."""


class _Shape(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _PageInfo(_Shape):
    has_next_page: bool = Field(False, alias="hasNextPage")


class _Login(_Shape):
    login: str | None = None


class _Oid(_Shape):
    oid: str | None = None


class _Comment(_Shape):
    database_id: int | None = Field(None, alias="databaseId")
    author: _Login | None = None
    path: str = ""
    original_line: int | None = Field(None, alias="originalLine")
    original_commit: _Oid | None = Field(None, alias="originalCommit")


class _Comments(_Shape):
    page_info: _PageInfo | None = Field(None, alias="pageInfo")
    nodes: list[_Comment | None] = []


class _Thread(_Shape):
    is_resolved: bool = Field(False, alias="isResolved")
    comments: _Comments = _Comments.model_validate({})


class _Threads(_Shape):
    page_info: _PageInfo | None = Field(None, alias="pageInfo")
    nodes: list[_Thread | None] = []


class _Pull(_Shape):
    number: int
    state: str
    head_ref_oid: str = Field(alias="headRefOid")
    merged_at: datetime | None = Field(None, alias="mergedAt")
    closed_at: datetime | None = Field(None, alias="closedAt")
    review_threads: _Threads = Field(_Threads.model_validate({}), alias="reviewThreads")


class _Repository(_Shape):
    pull_request: _Pull | None = Field(None, alias="pullRequest")


class _Data(_Shape):
    repository: _Repository | None = None


class _Error(_Shape):
    type: str | None = None


class _Answer(_Shape):
    data: _Data | None = None
    errors: list[_Error] = []


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _more(page: _PageInfo | None) -> bool:
    return page is not None and page.has_next_page


def _comment(node: _Comment) -> ThreadComment | None:
    if node.database_id is None:
        return None
    return ThreadComment(
        id=node.database_id,
        author=node.author.login if node.author else None,
        path=node.path,
        line=node.original_line,
        commit_id=node.original_commit.oid if node.original_commit else None,
    )


def parse_pull_history(data: Any, *, what: str) -> PullHistory | None:
    """The answer to :data:`PULL_HISTORY_QUERY` → :class:`PullHistory`; ``None`` when GitHub
    answers that the repository or pull request is not there (``NOT_FOUND``).

    Raises:
        GitHubUnreadable: the answer is not that shape, or holds another error and no pull
            request.
    """
    try:
        answer = _Answer.model_validate(data)
    except ValidationError as exc:
        raise GitHubUnreadable(f"{what}: GitHub's answer is not a pull request ({exc})") from None
    pull = answer.data.repository.pull_request if answer.data and answer.data.repository else None
    if pull is None:
        if answer.errors and all(e.type == "NOT_FOUND" for e in answer.errors):
            return None
        kinds = ", ".join(sorted({e.type or "unnamed" for e in answer.errors})) or "none"
        raise GitHubUnreadable(f"{what}: GitHub's answer holds no pull request (errors: {kinds})")
    threads = []
    complete = not _more(pull.review_threads.page_info)
    for thread in pull.review_threads.nodes:
        if thread is None:
            continue
        complete = complete and not _more(thread.comments.page_info)
        comments = [_comment(c) for c in thread.comments.nodes if c is not None]
        threads.append(ReviewThread(thread.is_resolved, tuple(c for c in comments if c)))
    return PullHistory(
        number=pull.number,
        state=pull.state,
        head_sha=pull.head_ref_oid,
        merged_at=_iso(pull.merged_at),
        closed_at=_iso(pull.closed_at),
        threads=tuple(threads),
        complete=complete,
    )


class _File(_Shape):
    filename: str
    status: str
    patch: str | None = None
    previous_filename: str | None = None


class _Comparison(_Shape):
    status: str
    files: list[_File] = []


def parse_comparison(data: Any, *, what: str) -> Comparison:
    """A "Compare two commits" answer → :class:`Comparison`.

    Raises:
        GitHubUnreadable: the answer is not that shape.
    """
    try:
        answer = _Comparison.model_validate(data)
    except ValidationError as exc:
        raise GitHubUnreadable(f"{what}: GitHub's answer is not a comparison ({exc})") from None
    files = tuple(
        ChangedFile(f.filename, f.status, f.patch or None, f.previous_filename or None)
        for f in answer.files
    )
    return Comparison(answer.status, files, truncated=len(files) >= COMPARE_MAX_FILES)
