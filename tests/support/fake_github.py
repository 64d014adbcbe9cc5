"""A stateful in-memory GitHub for replay, crash and fault tests (implements ``GitHubPort``).

It keeps what a repository would keep between runs: each issue's labels, the repository's
labels, each issue's comments (with authors), each issue's ``labeled`` events (with the actor:
the bot's ``add_labels`` records ``github-actions[bot]``, type ``Bot``, as the Actions token
does; :meth:`FakeGitHub.label_by_hand` records a person), PR files and file contents. Every
write is logged in ``writes``; ``fail`` queues an exception for the next call of a method, so a
test can put a fault or a crash between any two steps of a pipeline and then run it again.

The bot's own login is ``bot_login`` (what its writes record); :meth:`FakeGitHub.login` returns
``configured_login`` when the runner's settings name one (the ``github`` fixture passes
``Settings.bot_login``, as the factory gives it to the real client), else ``bot_login`` after
one ``login`` request, the GraphQL ``viewer`` read of the real client, once per client.

``requests`` logs every port call by method name: each :class:`PyGithubClient` method makes one
HTTP request per call (lists: one page of 100; checked on the recordings in ``cassettes/``), so
its length is what a run costs in GitHub requests, reads and writes (:data:`WRITE_METHODS`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.clients.github_port import (
    BotComment,
    ChangedFile,
    Comparison,
    IssueState,
    LabelEvent,
    PostedReviewComment,
    PullHistory,
    PullRef,
    ReviewComment,
)
from bot.errors import GitHubNotFound

CONFIG_READ = ("repo_file", ".github/triage-bot.yml@master")
"""The one read every webhook gate or audit run makes first: the repository's configuration on
its default branch (``master`` in the real example payloads)."""

WRITE_METHODS = frozenset(
    {
        "ensure_label",
        "add_labels",
        "remove_label",
        "upsert_comment",
        "post_comment",
        "edit_comment",
        "add_reaction",
    }
)
"""The port methods that write (POST, PATCH, DELETE); every other method is one GET."""

CONFIG_READ_DEFAULT = ("repo_file", ".github/triage-bot.yml@None")
"""The same read when no payload names the default branch (``backlog``, the schedule): GitHub
reads the default branch when the request names no ``ref``."""


@dataclass
class StoredComment:
    """One issue comment as GitHub would keep it."""

    id: int
    body: str
    author_type: str = "Bot"
    author: str = "github-actions[bot]"


@dataclass
class FakeGitHub:
    """In-memory :class:`~bot.clients.github_port.GitHubPort` with fault injection."""

    repo_labels: set[str] = field(default_factory=set)
    issue_labels: dict[int, list[str]] = field(default_factory=lambda: defaultdict(list))
    comments: dict[int, list[StoredComment]] = field(default_factory=lambda: defaultdict(list))
    files: dict[int, list[ChangedFile]] = field(default_factory=dict)
    contents: dict[str, list[str]] = field(default_factory=dict)
    heads: dict[int, str] = field(default_factory=dict)
    permissions: dict[str, str] = field(default_factory=dict)
    open_issue_list: list[dict[str, Any]] = field(default_factory=list)
    issue_texts: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    """Issue number → (title, body) as the issue reads now (:meth:`issue`)."""
    events: dict[int, list[LabelEvent]] = field(default_factory=lambda: defaultdict(list))
    label_looks: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Label name → (colour, description) as the bot created it."""
    repo_files: dict[tuple[str, str], str] = field(default_factory=dict)
    """``(ref, path)`` → text: the repository's files by branch (``repo_file`` reads them)."""
    reviews: dict[int, list[tuple[str, str, tuple[ReviewComment, ...]]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    """PR number → its reviews as ``(commit_id, body, comments)``, all the bot's."""
    pull_histories: dict[int, PullHistory] = field(default_factory=dict)
    """PR number → its state, final head and review threads (:meth:`pull_history`)."""
    comparisons: dict[tuple[str, str], Comparison] = field(default_factory=dict)
    """``(base, head)`` → the files changed between them (:meth:`compare`); absent: 404."""
    issue_states_now: dict[int, IssueState] = field(default_factory=dict)
    """Issue number → its state (:meth:`issue_states`); absent: deleted or transferred."""
    bot_login: str = "github-actions[bot]"
    bot_type: str = "Bot"
    configured_login: str | None = None
    """The ``bot-login`` setting the client was built with; ``None``: asked (one request)."""
    _learned: str | None = None
    writes: list[tuple[str, ...]] = field(default_factory=list)
    reads: list[tuple[str, ...]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    faults: dict[str, list[BaseException]] = field(default_factory=lambda: defaultdict(list))
    _next_id: int = 1000

    def fail(self, method: str, exc: BaseException, times: int = 1) -> None:
        """Make the next ``times`` calls of ``method`` raise ``exc`` (before any effect)."""
        self.faults[method].extend([exc] * times)

    def _enter(self, method: str) -> None:
        self.requests.append(method)
        if self.faults[method]:
            raise self.faults[method].pop(0)

    def label_by_hand(self, number: int, name: str, login: str = "octocat") -> None:
        """A person adds ``name`` to issue ``number`` in GitHub's UI (a ``labeled`` event)."""
        if name not in self.issue_labels[number]:
            self.issue_labels[number].append(name)
            self.events[number].append(LabelEvent(name, login, "User"))

    def unlabel_by_hand(self, number: int, name: str, login: str = "octocat") -> None:
        """A person removes ``name`` from issue ``number`` (an ``unlabeled`` event)."""
        if name in self.issue_labels[number]:
            self.issue_labels[number].remove(name)
            self.events[number].append(LabelEvent(name, login, "User", removed=True))

    def bot_comments(self, number: int) -> list[StoredComment]:
        """The bot's comments on issue/PR ``number`` (by its ``bot_login``)."""
        return [c for c in self.comments[number] if c.author.lower() == self.bot_login.lower()]

    # --- GitHubPort -------------------------------------------------------------------------
    def ensure_label(self, repo: str, name: str, *, color: str, description: str) -> None:
        self._enter("ensure_label")
        if name not in self.repo_labels:
            self.repo_labels.add(name)
            self.label_looks[name] = (color, description)
            self.writes.append(("create_label", name))

    def add_labels(self, repo: str, number: int, names: Sequence[str]) -> None:
        self._enter("add_labels")
        self.writes.append(("add_labels", str(number), *names))
        for name in names:
            if name not in self.issue_labels[number]:  # GitHub records no event for a no-op
                self.issue_labels[number].append(name)
                self.events[number].append(LabelEvent(name, self.bot_login, self.bot_type))

    def remove_label(self, repo: str, number: int, name: str) -> None:
        self._enter("remove_label")
        self.writes.append(("remove_label", str(number), name))
        if name in self.issue_labels[number]:
            self.issue_labels[number].remove(name)
            self.events[number].append(
                LabelEvent(name, self.bot_login, self.bot_type, removed=True)
            )

    def label_events(self, repo: str, number: int) -> list[LabelEvent]:
        self._enter("label_events")
        self.reads.append(("label_events", str(number)))
        return list(self.events[number])

    def issue(self, repo: str, number: int) -> dict[str, Any]:
        """The issue now: its text from ``issue_texts`` (else its ``open_issue_list`` entry),
        its labels from ``issue_labels``; 404 when neither knows it."""
        self._enter("issue")
        self.reads.append(("issue", str(number)))
        listed = next((i for i in self.open_issue_list if i["number"] == number), None)
        if number in self.issue_texts:
            title, body = self.issue_texts[number]
        elif listed is not None:
            title, body = listed["title"], listed.get("body")
        else:
            raise GitHubNotFound(f"read issue {number}: GitHub answered 404", 404)
        labels = (
            self.issue_labels[number]
            if number in self.issue_labels
            else [label["name"] for label in (listed or {}).get("labels", [])]
        )
        return {
            "number": number,
            "title": title,
            "body": body,
            "state": "open",
            "labels": [{"name": name} for name in labels],
        }

    def pull(self, repo: str, number: int) -> PullRef:
        self._enter("pull")
        self.reads.append(("pull", str(number)))
        return PullRef(repo, number, self.heads[number])

    def pull_files(self, repo: str, number: int) -> list[ChangedFile]:
        self._enter("pull_files")
        self.reads.append(("pull_files", str(number)))
        return list(self.files.get(number, []))

    def file_lines(self, repo: str, path: str, ref: str) -> list[str]:
        self._enter("file_lines")
        self.reads.append(("file_lines", path))
        return list(self.contents[path])

    def repo_file(self, repo: str, path: str, ref: str | None) -> str | None:
        self._enter("repo_file")
        self.reads.append(("repo_file", f"{path}@{ref}"))
        return self.repo_files.get((ref or "main", path))

    def built_for(self, login: str | None) -> FakeGitHub:
        """This fake as the factory builds a client: with ``login`` (``Settings.bot_login``)."""
        self.configured_login = login
        return self

    def login(self) -> str | None:
        if self.configured_login is not None:
            return self.configured_login
        if self._learned is None:
            self._enter("login")
            self.reads.append(("login", ""))
            self._learned = self.bot_login
        return self._learned

    def _mine(self, author: str) -> bool:
        own = self.login()
        return own is not None and author.lower() == own.lower()

    def find_bot_comment(self, repo: str, number: int, marker: str) -> BotComment | None:
        self._enter("find_bot_comment")
        self.reads.append(("find_bot_comment", str(number)))
        for c in self.comments[number]:
            if c.body.startswith(marker) and self._mine(c.author):
                return BotComment(c.id, c.body)
        return None

    def upsert_comment(self, repo: str, number: int, existing: BotComment | None, body: str) -> str:
        self._enter("upsert_comment")
        if existing is not None:
            self._edit(number, existing.id, body)
            return "edited"
        self._post(number, body)
        return "created"

    def post_comment(self, repo: str, number: int, body: str) -> int:
        self._enter("post_comment")
        return self._post(number, body)

    def edit_comment(self, repo: str, number: int, comment_id: int, body: str) -> None:
        self._enter("edit_comment")
        self._edit(number, comment_id, body)

    def _post(self, number: int, body: str) -> int:
        self._next_id += 1
        self.comments[number].append(
            StoredComment(self._next_id, body, self.bot_type, self.bot_login)
        )
        self.writes.append(("create_comment", str(number)))
        return self._next_id

    def _edit(self, number: int, comment_id: int, body: str) -> None:
        for c in self.comments[number]:
            if c.id == comment_id:
                c.body = body
                self.writes.append(("edit_comment", str(number)))
                return
        raise GitHubNotFound(f"edit comment {comment_id}: GitHub answered 404", 404)

    def bot_review_comments(self, repo: str, number: int, marker: str) -> list[PostedReviewComment]:
        self._enter("bot_review_comments")
        self.reads.append(("bot_review_comments", str(number)))
        return [
            PostedReviewComment(commit, c.body)
            for commit, _, comments in self.reviews[number]
            for c in comments
            if c.body.startswith(marker)
        ]

    def create_review(
        self, repo: str, number: int, head_sha: str, body: str, comments: Sequence[ReviewComment]
    ) -> None:
        self._enter("create_review")
        self.reviews[number].append((head_sha, body, tuple(comments)))
        self.writes.append(("create_review", str(number), head_sha))

    def collaborator_permission(self, repo: str, login: str) -> str:
        self._enter("collaborator_permission")
        self.reads.append(("permission", login))
        return self.permissions.get(login, "none")

    def add_reaction(self, repo: str, number: int, comment_id: int, content: str) -> None:
        self._enter("add_reaction")
        self.writes.append(("reaction", str(comment_id), content))

    def open_issues(self, repo: str) -> list[dict[str, Any]]:
        """``open_issue_list`` as GitHub lists it now: each issue with its current labels
        (``issue_labels``, once the issue has any there; else the labels it was listed with)."""
        self._enter("open_issues")
        self.reads.append(("open_issues", repo))
        return [
            {**issue, "labels": [{"name": name} for name in self.issue_labels[issue["number"]]]}
            if issue["number"] in self.issue_labels
            else dict(issue)
            for issue in self.open_issue_list
        ]

    def pull_history(self, repo: str, number: int) -> PullHistory | None:
        self._enter("pull_history")
        self.reads.append(("pull_history", str(number)))
        return self.pull_histories.get(number)

    def compare(self, repo: str, base: str, head: str) -> Comparison | None:
        self._enter("compare")
        self.reads.append(("compare", f"{base}...{head}"))
        return self.comparisons.get((base, head))

    def issue_states(self, repo: str, numbers: Sequence[int]) -> dict[int, IssueState]:
        if not numbers:
            return {}
        self._enter("issue_states")
        self.reads.append(("issue_states", ",".join(str(n) for n in numbers)))
        return {n: self.issue_states_now[n] for n in numbers if n in self.issue_states_now}
