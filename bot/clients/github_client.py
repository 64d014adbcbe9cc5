"""The PyGithub adapter of the GitHub port, and its one choke point for errors.

Each request a job sends, the retry policy and the rate-limit waits are in docs/requests.md;
tests/gate/test_request_budget.py counts them on recorded traffic. The dataset's reads and a patient
client's waits are in docs/measure-your-model.md. PyGithub runs lazily, so ``get_repo``,
``get_issue`` and ``get_comment`` cost no request.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import quote, urljoin, urlsplit

import requests
from github import Auth, Github, GithubException, GithubRetry
from github.GithubException import RateLimitExceededException
from github.PullRequest import ReviewComment as GithubReviewComment
from requests.utils import parse_header_links
from urllib3.util import Retry

from bot.clients.github_errors import (
    is_already_exists,
    rate_limit_answer,
    rate_limit_wait_s,
    rate_limited,
    transient,
    translate_github_error,
)
from bot.clients.github_port import (
    BotComment,
    ChangedFile,
    Comparison,
    DuplicateMark,
    EditHistory,
    IssuePage,
    IssueState,
    LabelEvent,
    PostedReviewComment,
    PullHistory,
    PullRef,
    RateLimit,
    ReviewComment,
    TimelineItem,
)
from bot.clients.issue_history import (
    DUPLICATE_MARKS_QUERY,
    EDIT_HISTORY_QUERY,
    MAX_NODES,
    parse_duplicate_marks,
    parse_edit_histories,
    parse_issue_page,
    parse_timeline_item,
)
from bot.clients.issue_states import MAX_ISSUE_STATES, issue_states_query, parse_issue_states
from bot.clients.pull_history import PULL_HISTORY_QUERY, parse_comparison, parse_pull_history
from bot.errors import (
    ConfigError,
    GitHubError,
    GitHubNotFound,
    GitHubUnavailable,
    GitHubUnreadable,
)
from bot.retry import RetryPolicy, call_with_retries
from bot.urls import NO_SECRETS, Redactor, shown_url

__all__ = [
    "MAX_LIST_PAGES",
    "MAX_TIMELINE_PAGES",
    "PyGithubClient",
    "rate_limit_wait_s",
    "translate_github_error",
]

# PyGithub's package logger prints INFO lines (redirect URLs, retried answers) to stderr, raw.
_PYGITHUB_LOG = logging.getLogger("github")
for _handler in list(_PYGITHUB_LOG.handlers):
    _PYGITHUB_LOG.removeHandler(_handler)
_PYGITHUB_LOG.addHandler(logging.NullHandler())
_PYGITHUB_LOG.propagate = False

PER_PAGE = 100
"""Items per page for list endpoints (GitHub's maximum)."""

MAX_LIST_PAGES = 1_000
"""The most pages of the closed-issues list a dataset run reads: 100,000 issues and pull
requests (``--since`` reads a part of a larger repository). A list that goes on is GitHub's
fault, not a repository's size."""

MAX_TIMELINE_PAGES = 100
"""The most pages of one issue's timeline: 10,000 events, beyond the longest issues GitHub
holds."""


T = TypeVar("T")

DEFAULT_SECONDS_BETWEEN_WRITES = 1.0
"""GitHub's best practices for integrations: at least one second between mutating requests."""

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"})

VIEWER_QUERY = "query { viewer { login } }"
"""GraphQL: the login the token acts as (every token kind; REST ``GET /user`` refuses an
installation token)."""

VIEWER_WHAT = "learn the bot's own login (GraphQL viewer; set bot-login to skip this request)"

REST_MEDIA_TYPE = "application/vnd.github+json"
"""The media type GitHub's REST docs ask every request to accept."""

RATE_LIMIT_RESERVE = 50
"""A patient client waits for the reset once GitHub says this many requests or fewer are left,
so the bot's own jobs on the same token still have some."""

SECONDARY_WAIT_S = 60.0
"""A rate-limit answer that names no wait: GitHub's docs ask for at least a minute."""

RATE_LIMIT_WINDOW_S = 3660.0
"""The longest wait a rate limit can ask for: GitHub's primary limit resets within the hour."""

PATIENT_ATTEMPTS = 8
"""Tries of one request in a patient client: each rate-limit answer costs one."""


def _issue_payload(issue: Any) -> dict[str, Any]:
    return {
        "number": issue.number,
        "title": issue.title,
        "body": issue.body,
        "state": issue.state,
        "labels": [{"name": label.name} for label in issue.labels],
        "created_at": _iso(issue.created_at),
    }


def _iso(moment: Any) -> str | None:
    # PyGithub gives an aware datetime; an older release gave a naive one in UTC
    if moment is None:
        return None
    aware: datetime = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.isoformat()


class PyGithubClient:
    """:class:`GitHubPort` and :class:`IssueHistoryPort` over PyGithub.

    Args:
        token: never logged; ``None`` reads anonymously.
        retries: HTTP retries of idempotent methods.
        backoff_s, timeout_s, max_rate_limit_wait_s: seconds.
        seconds_between_writes: ``None`` is GitHub's advice for integrations, 1 s.
        login: the login the token writes as; ``None`` asks GitHub once, when needed.
        sleep: makes the client patient: a rate limit is waited for, not failed on.
            ``None`` (every job) keeps PyGithub's own handling.
        clock: epoch seconds now, for a patient client's waits.
        redact: applied to every comment and review body it writes.
    """

    def __init__(
        self,
        *,
        token: str | None,
        base_url: str = "https://api.github.com",
        retries: int = 3,
        backoff_s: float = 1.0,
        timeout_s: float = 15.0,
        max_rate_limit_wait_s: float = 60.0,
        seconds_between_writes: float | None = None,
        login: str | None = None,
        sleep: Callable[[float], None] | None = None,
        clock: Callable[[], float] = time.time,
        redact: Redactor = NO_SECRETS,
    ) -> None:
        retry: Retry
        if sleep is None:
            retry = GithubRetry(
                total=retries,
                backoff_factor=backoff_s,
                allowed_methods=IDEMPOTENT_METHODS,
                status_forcelist=[500, 502, 503, 504],
                secondary_rate_wait=min(60.0, max_rate_limit_wait_s),
                max_rate_limit_wait=max_rate_limit_wait_s,
            )
        else:  # 5xx only: a rate-limit answer reaches _call, which waits through ``sleep``
            retry = Retry(
                total=retries,
                backoff_factor=backoff_s,
                allowed_methods=IDEMPOTENT_METHODS,
                status_forcelist=[500, 502, 503, 504],
                respect_retry_after_header=False,
            )
        self._gh = Github(
            auth=Auth.Token(token) if token else None,
            base_url=base_url,
            retry=retry,
            timeout=int(timeout_s),
            lazy=True,
            per_page=PER_PAGE,
            seconds_between_requests=None,
            seconds_between_writes=(
                DEFAULT_SECONDS_BETWEEN_WRITES
                if seconds_between_writes is None
                else seconds_between_writes
            ),
        )
        self._write_retry = RetryPolicy(
            attempts=retries + 1 if sleep is None else max(retries + 1, PATIENT_ATTEMPTS),
            wait_initial_s=backoff_s,
            wait_max_s=8.0,
        )
        self._max_rate_limit_wait_s = max_rate_limit_wait_s
        self._base_url = base_url
        self._anonymous = not token
        self._login = login
        self._sleep = sleep
        self._clock = clock
        self._waited_for_reset = 0
        self._redact = redact

    def _server_wait(self, exc: BaseException) -> float | None:
        if not rate_limited(exc):
            return None
        return rate_limit_wait_s(exc, now_s=self._clock(), max_s=self._max_rate_limit_wait_s)

    def _patient_wait(self, exc: BaseException) -> float | None:
        """The wait a rate-limit answer names (a minute if none), else ``None``."""
        if not rate_limit_answer(exc):
            return None
        # the answer's reset is waited for here: _pace must not wait for it again
        self._waited_for_reset = int(self._gh.requester.rate_limiting_resettime)
        wait = rate_limit_wait_s(exc, now_s=self._clock())
        return SECONDARY_WAIT_S if wait is None else wait

    def _patient_retry(self, exc: BaseException) -> bool:
        wait = self._patient_wait(exc)
        if wait is not None:
            return wait <= self._max_rate_limit_wait_s
        return transient(exc)

    def _call(self, what: str, fn: Callable[[], T], *, safe_to_repeat: bool = False) -> T:
        """Run one request; non-``safe_to_repeat`` ones retry only rate limits."""
        patient = self._sleep is not None and safe_to_repeat
        try:
            return call_with_retries(
                fn,
                policy=self._write_retry,
                transient=(
                    self._patient_retry
                    if patient
                    else (transient if safe_to_repeat else rate_limited)
                ),
                server_wait_s=self._patient_wait if patient else self._server_wait,
                sleep=self._sleep,
            )
        except GithubException as exc:
            raise translate_github_error(exc, what=what) from exc
        except requests.RequestException as exc:
            raise translate_github_error(exc, what=what) from exc
        except ValueError as exc:  # a body that is not JSON (json.JSONDecodeError)
            raise GitHubUnavailable(
                f"{what}: GitHub answered with a body that is not JSON"
            ) from exc
        except RuntimeError as exc:  # PyGithub refuses a redirect to another host
            raise GitHubError(f"{what}: unexpected response from GitHub: {exc}") from exc

    def ensure_label(self, repo: str, name: str, *, color: str, description: str) -> None:
        def create() -> None:
            try:
                self._gh.get_repo(repo).create_label(name, color, description)
            except GithubException as exc:
                if not is_already_exists(exc):
                    raise

        self._call(f"create label {name!r} in {repo}", create, safe_to_repeat=True)

    def add_labels(self, repo: str, number: int, names: Sequence[str]) -> None:
        if not names:
            return
        issue = self._gh.get_repo(repo).get_issue(number)
        self._call(
            f"add labels to {repo}#{number}",
            lambda: issue.add_to_labels(*names),
            safe_to_repeat=True,
        )

    def remove_label(self, repo: str, number: int, name: str) -> None:
        issue = self._gh.get_repo(repo).get_issue(number)
        try:
            self._call(
                f"remove label {name!r} from {repo}#{number}",
                lambda: issue.remove_from_labels(name),
            )
        except GitHubNotFound:
            return

    def label_events(self, repo: str, number: int) -> list[LabelEvent]:
        """Pages are read forward: one request below 100 events (``.reversed`` costs two)."""

        def fetch() -> list[LabelEvent]:
            found = []
            for event in self._gh.get_repo(repo).get_issue(number).get_events():
                if event.event not in ("labeled", "unlabeled") or event.label is None:
                    continue
                actor = event.actor
                found.append(
                    LabelEvent(
                        label=event.label.name,
                        actor_login=actor.login if actor is not None else None,
                        actor_type=actor.type if actor is not None else None,
                        created_at=event.created_at.isoformat() if event.created_at else "",
                        removed=event.event == "unlabeled",
                    )
                )
            return found

        return self._call(f"list events of {repo}#{number}", fetch, safe_to_repeat=True)

    def issue(self, repo: str, number: int) -> dict[str, Any]:
        def fetch() -> dict[str, Any]:
            issue = self._gh.get_repo(repo).get_issue(number)
            return _issue_payload(issue)

        return self._call(f"read {repo}#{number}", fetch, safe_to_repeat=True)

    def pull(self, repo: str, number: int) -> PullRef:
        def fetch() -> PullRef:
            pr = self._gh.get_repo(repo).get_pull(number)
            return PullRef(
                repo=repo,
                number=number,
                head_sha=pr.head.sha,
                draft=bool(pr.draft),
                state=pr.state,
                public_repo=not pr.base.repo.private,
            )

        return self._call(f"read pull request {repo}#{number}", fetch, safe_to_repeat=True)

    def pull_files(self, repo: str, number: int) -> list[ChangedFile]:
        def fetch() -> list[ChangedFile]:
            files = self._gh.get_repo(repo).get_pull(number).get_files()
            return [
                ChangedFile(f.filename, f.status, f.patch or None, f.previous_filename or None)
                for f in files
            ]

        return self._call(f"list files of {repo}#{number}", fetch, safe_to_repeat=True)

    def file_lines(self, repo: str, path: str, ref: str) -> list[str]:
        """``GET .../contents/{path}?ref=``; the blob endpoint past 1 MB.

        Raises:
            GitHubNotFound: no such file at ``ref``.
            GitHubError: the path is a folder or a submodule.
        """

        def fetch() -> list[str]:
            handle = self._gh.get_repo(repo)
            content = handle.get_contents(path, ref=ref)
            if isinstance(content, list) or content.type != "file":
                raise GitHubError(f"{path} at {ref[:12]} is not a file")
            if content.encoding == "base64" and content.content:
                raw = content.decoded_content
            else:
                raw = base64.b64decode(handle.get_git_blob(content.sha).content)
            return raw.decode("utf-8", errors="replace").splitlines()

        return self._call(f"read {path} at {ref[:12]} in {repo}", fetch, safe_to_repeat=True)

    def repo_file(self, repo: str, path: str, ref: str | None) -> str | None:
        def fetch() -> str | None:
            handle = self._gh.get_repo(repo)
            try:
                content = handle.get_contents(path, ref=ref) if ref else handle.get_contents(path)
            except GithubException as exc:
                if exc.status == 404:
                    return None
                raise
            if isinstance(content, list) or content.type != "file":
                raise GitHubError(f"{path} in {repo} is not a file")
            if content.encoding != "base64":  # over 1 MB: "none", and no content
                raise ConfigError(
                    f"{path}: {content.size} bytes, more than GitHub's contents API serves "
                    "(1 MB): the bot reads no file that large"
                )
            return content.decoded_content.decode("utf-8", errors="replace")

        where = f" at {ref}" if ref else ""
        return self._call(f"read {path}{where} in {repo}", fetch, safe_to_repeat=True)

    def login(self) -> str | None:
        """The given login, else one GraphQL ``viewer`` query, kept for the client's life.

        ``GET /user`` refuses installation tokens; ``viewer`` answers every token kind.
        """
        if self._login is None and not self._anonymous:
            self._login = self._call(VIEWER_WHAT, self._viewer_login, safe_to_repeat=True)
        return self._login

    def _viewer_login(self) -> str:
        _, data = self._gh.requester.graphql_query(VIEWER_QUERY, {})
        found = (data.get("data") or {}).get("viewer") or {}
        login = found.get("login") if isinstance(found, dict) else None
        if not isinstance(login, str) or not login:
            raise GitHubError(f"{VIEWER_WHAT}: GitHub's answer names no login")
        return login

    def _is_mine(self, login: str | None) -> bool:
        own = self.login()
        return own is not None and login is not None and login.lower() == own.lower()

    def find_bot_comment(self, repo: str, number: int, marker: str) -> BotComment | None:
        """``GET .../comments``; a marker quoted by a person or another app is ignored."""

        def fetch() -> BotComment | None:
            for comment in self._gh.get_repo(repo).get_issue(number).get_comments():
                if comment.body.startswith(marker) and self._is_mine(comment.user.login):
                    return BotComment(comment.id, comment.body)
            return None

        return self._call(f"list comments of {repo}#{number}", fetch, safe_to_repeat=True)

    def upsert_comment(self, repo: str, number: int, existing: BotComment | None, body: str) -> str:
        if existing is not None:
            self.edit_comment(repo, number, existing.id, body)
            return "edited"
        self.post_comment(repo, number, body)
        return "created"

    def post_comment(self, repo: str, number: int, body: str) -> int:
        """Never retried on 5xx: the comment may exist, and the next run edits it."""
        issue = self._gh.get_repo(repo).get_issue(number)
        text = self._redact(body)
        comment = self._call(f"comment on {repo}#{number}", lambda: issue.create_comment(text))
        return int(comment.id)

    def edit_comment(self, repo: str, number: int, comment_id: int, body: str) -> None:
        comment = self._gh.get_repo(repo).get_issue(number).get_comment(comment_id)
        text = self._redact(body)
        self._call(f"edit comment {comment_id} in {repo}", lambda: comment.edit(text))

    def bot_review_comments(self, repo: str, number: int, marker: str) -> list[PostedReviewComment]:
        def fetch() -> list[PostedReviewComment]:
            found = []
            for comment in self._gh.get_repo(repo).get_pull(number).get_review_comments():
                if comment.body.startswith(marker) and self._is_mine(comment.user.login):
                    found.append(PostedReviewComment(comment.original_commit_id, comment.body))
            return found

        return self._call(f"list review comments of {repo}#{number}", fetch, safe_to_repeat=True)

    def create_review(
        self, repo: str, number: int, head_sha: str, body: str, comments: Sequence[ReviewComment]
    ) -> None:
        """Retried on a rate limit only, never on 5xx (no double review)."""
        handle = self._gh.get_repo(repo)
        pull = handle.get_pull(number)
        commit = handle.get_commit(head_sha)  # lazy: names the SHA, no request
        payload: list[GithubReviewComment] = [
            {"path": c.path, "line": c.line, "side": "RIGHT", "body": self._redact(c.body)}
            for c in comments
        ]
        text = self._redact(body)
        self._call(
            f"review {repo}#{number}",
            lambda: pull.create_review(commit=commit, body=text, event="COMMENT", comments=payload),
        )

    def collaborator_permission(self, repo: str, login: str) -> str:
        """A 404 (no such user, or hidden from the token) reads as ``none``."""
        try:
            permission = self._call(
                f"read the permission of {login} in {repo}",
                lambda: self._gh.get_repo(repo).get_collaborator_permission(login),
                safe_to_repeat=True,
            )
        except GitHubNotFound:
            return "none"
        return str(permission)

    def add_reaction(self, repo: str, number: int, comment_id: int, content: str) -> None:
        comment = self._gh.get_repo(repo).get_issue(number).get_comment(comment_id)
        self._call(
            f"react to comment {comment_id} in {repo}",
            lambda: comment.create_reaction(content),
            safe_to_repeat=True,
        )

    def open_issues(self, repo: str) -> list[dict[str, Any]]:
        def fetch() -> list[dict[str, Any]]:
            return [
                _issue_payload(issue)
                for issue in self._gh.get_repo(repo).get_issues(state="open")
                # html_url is in the list answer; reading pull_request would cost a GET per issue
                if "/pull/" not in issue.html_url
            ]

        return self._call(f"list open issues of {repo}", fetch, safe_to_repeat=True)

    def pull_history(self, repo: str, number: int) -> PullHistory | None:
        """One GraphQL query (``PULL_HISTORY_QUERY``); a ``NOT_FOUND`` answer is ``None``."""
        owner, _, name = repo.partition("/")
        what = f"read the review threads of {repo}#{number}"

        def fetch() -> PullHistory | None:
            variables = {"owner": owner, "name": name, "number": number}
            return parse_pull_history(self._graphql(PULL_HISTORY_QUERY, variables), what=what)

        return self._call(what, fetch, safe_to_repeat=True)

    def compare(self, repo: str, base: str, head: str) -> Comparison | None:
        """``GET .../compare/{base}...{head}?per_page=1``: the files come with the first page
        whatever its size, so one commit a page keeps the answer small."""
        what = f"compare {base[:12]}...{head[:12]} in {repo}"
        path = f"/repos/{repo}/compare/{quote(base, safe='')}...{quote(head, safe='')}"

        def fetch() -> Comparison | None:
            try:
                _, data = self._gh.requester.requestJsonAndCheck(
                    "GET", path, parameters={"per_page": 1}, headers={"Accept": REST_MEDIA_TYPE}
                )
            except GithubException as exc:
                if exc.status == 404:
                    return None
                raise
            return parse_comparison(data, what=what)

        return self._call(what, fetch, safe_to_repeat=True)

    def issue_states(self, repo: str, numbers: Sequence[int]) -> dict[int, IssueState]:
        """One GraphQL query (:func:`~bot.clients.issue_states.issue_states_query`); no request
        for no numbers.

        Raises:
            ValueError: more than :data:`MAX_ISSUE_STATES` numbers.
        """
        wanted = list(dict.fromkeys(numbers))
        if len(wanted) > MAX_ISSUE_STATES:
            raise ValueError(f"at most {MAX_ISSUE_STATES} issues a query, got {len(wanted)}")
        if not wanted:
            return {}
        owner, _, name = repo.partition("/")
        what = f"read the state of {len(wanted)} issue(s) of {repo}"
        query = issue_states_query(wanted)

        def fetch() -> dict[int, IssueState]:
            data = self._graphql(query, {"owner": owner, "name": name})
            return parse_issue_states(data, what=what)

        return self._call(what, fetch, safe_to_repeat=True)

    def rate_limit(self) -> RateLimit | None:
        remaining, limit = self._gh.requester.rate_limiting
        if remaining < 0:
            return None
        return RateLimit(remaining, limit, int(self._gh.requester.rate_limiting_resettime))

    def _pace(self) -> None:
        """Wait for the reset once a reset, when the last answer left the reserve or fewer."""
        known = self.rate_limit()
        if self._sleep is None or known is None or known.remaining > RATE_LIMIT_RESERVE:
            return
        if known.reset == self._waited_for_reset:
            return
        self._waited_for_reset = known.reset
        wait = known.reset - self._clock() + 1.0
        if wait > 0:
            self._sleep(min(wait, self._max_rate_limit_wait_s))

    def closed_issues_page(
        self, repo: str, page: int, *, since: datetime | None = None, etag: str | None = None
    ) -> IssuePage:
        parameters: dict[str, Any] = {
            "state": "closed",
            "sort": "created",
            "direction": "desc",
            "per_page": PER_PAGE,
            "page": page,
        }
        if since is not None:
            parameters["since"] = since.strftime("%Y-%m-%dT%H:%M:%SZ")
        what = f"list closed issues of {repo} (page {page})"
        if page > MAX_LIST_PAGES:
            raise GitHubError(
                f"{what}: the list goes on past {MAX_LIST_PAGES} pages "
                f"({MAX_LIST_PAGES * PER_PAGE:,} issues and pull requests); stopped there "
                "(give --since to read a part)"
            )
        return self._issues_page(repo, parameters, what, etag)

    def all_issues_page(self, repo: str, page: int, *, etag: str | None = None) -> IssuePage:
        """``GET /repos/{o}/{r}/issues?state=all``, newest first (``dataset --duplicates``).

        Raises:
            GitHubError: past :data:`MAX_LIST_PAGES`, or as :meth:`closed_issues_page`.
        """
        parameters: dict[str, Any] = {
            "state": "all",
            "sort": "created",
            "direction": "desc",
            "per_page": PER_PAGE,
            "page": page,
        }
        what = f"list the issues of {repo} (page {page})"
        if page > MAX_LIST_PAGES:
            raise GitHubError(f"{what}: the list goes on past {MAX_LIST_PAGES} pages")
        return self._issues_page(repo, parameters, what, etag)

    def updated_issues_page(self, repo: str, page: int, *, since: datetime | None) -> IssuePage:
        """``GET /repos/{o}/{r}/issues?state=all&sort=updated&direction=asc``; GitHub's
        ``since`` keeps the issues updated at or after it.

        Raises:
            GitHubError: past :data:`MAX_LIST_PAGES`, or as :meth:`closed_issues_page`.
        """
        parameters: dict[str, Any] = {
            "state": "all",
            "sort": "updated",
            "direction": "asc",
            "per_page": PER_PAGE,
            "page": page,
        }
        if since is not None:
            parameters["since"] = since.strftime("%Y-%m-%dT%H:%M:%SZ")
        what = (
            f"list issues of {repo} updated since {parameters.get('since', 'ever')} (page {page})"
        )
        if page > MAX_LIST_PAGES:
            raise GitHubError(f"{what}: the list goes on past {MAX_LIST_PAGES} pages")
        return self._issues_page(repo, parameters, what, None)

    def _issues_page(
        self, repo: str, parameters: dict[str, Any], what: str, etag: str | None
    ) -> IssuePage:
        path = f"/repos/{repo}/issues"

        def fetch() -> IssuePage:
            self._pace()
            headers, data = self._gh.requester.requestJsonAndCheck(
                "GET",
                path,
                parameters=parameters,
                headers={"Accept": REST_MEDIA_TYPE, **({"If-None-Match": etag} if etag else {})},
            )
            if data is None:  # 304 Not Modified: no body
                return IssuePage(None, etag, has_next=False)
            has_next = self._next_link(headers, self._base_url + path, what) is not None
            return IssuePage(parse_issue_page(data, what=what), headers.get("etag"), has_next)

        return self._call(what, fetch, safe_to_repeat=True)

    def _next_link(self, headers: dict[str, Any], current: str, what: str) -> str | None:
        """The ``Link`` header's ``next`` URL, resolved against ``current``, or ``None``.

        Raises:
            GitHubError: it leaves the API's origin or base path (the token would go there).
        """
        value = headers.get("link")
        links = parse_header_links(value) if isinstance(value, str) and value else []
        found = next((link["url"] for link in links if link.get("rel") == "next"), None)
        if found is None:
            return None
        url = urljoin(current, found)
        base_path = urlsplit(self._base_url).path.rstrip("/")
        path = urlsplit(url).path
        if _origin(url) != _origin(self._base_url) or not (
            path == base_path or path.startswith(base_path + "/")
        ):
            raise GitHubUnreadable(
                f"{what}: GitHub's next page is not on the API's host "
                f"({shown_url(url)}, not {shown_url(self._base_url)}); not followed"
            )
        return url

    def issue_timeline(self, repo: str, number: int) -> list[TimelineItem] | None:
        """Pages read here, not by PyGithub, whose pagination follows any ``next``.

        A transferred issue is answered 301, which PyGithub follows to the other repository.
        """
        what = f"read the timeline of {repo}#{number}"

        def fetch() -> list[TimelineItem] | None:
            first = f"/repos/{repo}/issues/{number}/timeline?per_page={PER_PAGE}"
            url: str | None = self._base_url + first
            read: set[str] = set()
            items = []
            while url is not None:
                if url in read:
                    raise GitHubUnreadable(
                        f"{what}: GitHub's next page is one already read; not followed"
                    )
                if len(read) == MAX_TIMELINE_PAGES:
                    raise GitHubUnreadable(
                        f"{what}: the timeline goes on past {MAX_TIMELINE_PAGES} pages "
                        f"({MAX_TIMELINE_PAGES * PER_PAGE:,} events); stopped there"
                    )
                read.add(url)
                self._pace()
                try:
                    headers, data = self._gh.requester.requestJsonAndCheck(
                        "GET", url, headers={"Accept": REST_MEDIA_TYPE}
                    )
                except GithubException as exc:
                    if exc.status in (404, 410):
                        return None
                    raise
                if not isinstance(data, list):
                    raise GitHubUnreadable(f"{what}: GitHub's answer is not a list of events")
                items += [item for raw in data if (item := parse_timeline_item(raw, repo))]
                url = self._next_link(headers, url, what) if data else None
            return items

        return self._call(what, fetch, safe_to_repeat=True)

    def edit_histories(self, node_ids: Sequence[str]) -> dict[str, EditHistory]:
        """A GraphQL ``RATE_LIMITED`` error is waited for like a REST rate limit.

        Raises:
            ValueError: more than 100 ids.
            GitHubError: the query failed or its answer holds no data.
        """
        what = f"read the edit history of {len(node_ids)} issue(s)"
        return self._nodes(EDIT_HISTORY_QUERY, node_ids, what, parse_edit_histories)

    def duplicate_marks(self, node_ids: Sequence[str]) -> dict[str, tuple[DuplicateMark, ...]]:
        """As :meth:`edit_histories`, for :data:`DUPLICATE_MARKS_QUERY`."""
        what = f"read the duplicate marks of {len(node_ids)} issue(s)"
        return self._nodes(DUPLICATE_MARKS_QUERY, node_ids, what, parse_duplicate_marks)

    def _nodes(
        self,
        query: str,
        node_ids: Sequence[str],
        what: str,
        parse: Callable[..., dict[str, T]],
    ) -> dict[str, T]:
        """One GraphQL ``nodes(ids:)`` query over up to :data:`MAX_NODES` ids, parsed."""
        if len(node_ids) > MAX_NODES:
            raise ValueError(f"at most {MAX_NODES} issues a query, got {len(node_ids)}")
        if not node_ids:
            return {}

        def fetch() -> dict[str, T]:
            self._pace()
            return parse(self._graphql(query, {"ids": list(node_ids)}), what=what)

        return self._call(what, fetch, safe_to_repeat=True)

    def _graphql(self, query: str, variables: dict[str, Any]) -> Any:
        """One GraphQL POST; its answer, a ``RATE_LIMITED`` error raised as a rate limit."""
        requester = self._gh.requester
        headers, data = requester.requestJsonAndCheck(
            "POST", requester.graphql_url, input={"query": query, "variables": variables}
        )
        errors = data.get("errors") if isinstance(data, dict) else None
        if any(isinstance(e, dict) and e.get("type") == "RATE_LIMITED" for e in errors or []):
            raise RateLimitExceededException(403, data, headers)
        return data


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or _DEFAULT_PORTS.get(scheme)
