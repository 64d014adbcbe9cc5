"""Settling audits: what happened to each reported defect's line once its pull request closed.

Per pull request with unsettled defects in the store: one GraphQL read of its state, final
head SHA and review threads, then one comparison per distinct earlier head SHA a defect was
reported at (usually one), each counted on the run's :class:`~bot.settle.budget.Budget` before
it is sent. A pull request's outcomes are written in one transaction once all its reads are
in, so a run stopped by the budget, a GitHub fault or a store fault leaves that pull request
pending, whole, for the next run; a second pass over a settled one finds nothing pending.
The rules are in docs/live-record.md, "Settling audits".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from bot.audit.selection import moved_line, removed_lines
from bot.clients.github_port import (
    ChangedFile,
    Comparison,
    GitHubPort,
    PullHistory,
    ReviewThread,
)
from bot.errors import GitHubError, GitHubUnreadable
from bot.history.protocol import HistoryStore
from bot.history.record import (
    DefectOutcome,
    DefectRow,
    DefectSettlement,
    cursor,
    pending_defects,
    put_cursor,
    settle_defects,
)
from bot.neutralise import log_value
from bot.settle.budget import Budget, BudgetSpent

__all__ = ["CURSOR_KIND", "PullsReport", "Settled", "judge_defect", "settle_pulls"]

CURSOR_KIND = "pulls"
"""The ``settle_cursors`` kind whose ``since`` holds the last pull request number visited: the
next run starts after it, so pull requests still open do not take every run's budget."""


@dataclass(frozen=True)
class Settled:
    """One defect's outcome, the reason shown with it, and its review comment when found."""

    outcome: DefectOutcome
    reason: str
    review_comment_id: int | None = None


@dataclass
class PullsReport:
    """What one :func:`settle_pulls` call did.

    ``stopped``: why it ended before every pending pull request was read (the budget, or a
    GitHub fault), else ``None``.
    """

    pulls_read: int = 0
    still_open: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    requests_per_pull: dict[int, int] = field(default_factory=dict)
    """Requests each pull request read cost (the bot's login with the first that needed it)."""
    stopped: str | None = None
    unreadable: int = 0
    """Pull requests whose answer GitHub gave in a shape the client cannot read: passed over,
    still pending (the next visit reads them again)."""

    @property
    def settled(self) -> int:
        return sum(self.outcomes.values())

    def lines(self) -> list[str]:
        """The report as plain log lines (untrusted values through ``log_value``)."""
        settled = ", ".join(f"{n} {o}" for o, n in sorted(self.outcomes.items())) or "none"
        out = [
            f"settle:   pull requests read {self.pulls_read} ({self.still_open} still open); "
            f"defects settled {settled}; {self.requests} request(s)"
        ]
        if self.unreadable:
            out.append(
                f"  passed over {self.unreadable}: GitHub's answer could not be read; "
                "read again on the next visit"
            )
        if self.stopped:
            out.append(f"  stopped: {log_value(self.stopped, max_chars=300)}")
        return out


def settle_pulls(
    github: GitHubPort,
    store: HistoryStore,
    repo: str,
    budget: Budget,
    *,
    since: str | None,
    bot_login: str | None = None,
) -> PullsReport:
    """Settle the pending defects of ``repo`` recorded at or after ``since`` (ISO 8601;
    ``None``: all) whose pull requests have closed, within ``budget``; ``bot_login`` known
    spares asking GitHub for it.

    Raises:
        StoreError: a read or write of the store failed (outcomes written before it stay).
    """
    report = PullsReport()
    by_pull: dict[int, list[DefectRow]] = {}
    for row in pending_defects(store, repo, since or ""):
        by_pull.setdefault(row.pr, []).append(row)
    order = _rotated(sorted(by_pull), cursor(store, repo, CURSOR_KIND))
    start = budget.used
    login = _Login(github, budget, bot_login)
    last: int | None = None
    try:
        for number in order:
            before = budget.used
            try:
                closed = _settle_pull(github, repo, number, by_pull[number], budget, login)
            except GitHubUnreadable:
                # The same answer on every visit: stopping here would stop every run here.
                report.unreadable += 1
                last = number
                continue
            finally:
                report.requests_per_pull[number] = budget.used - before
            report.pulls_read += 1
            if closed is None:
                report.still_open += 1
            else:
                settle_defects(
                    store,
                    [
                        DefectSettlement(
                            row, s.outcome, s.reason, closed.event_at, s.review_comment_id
                        )
                        for row, s in closed.defects
                    ],
                )
                report.outcomes.update(str(s.outcome) for _, s in closed.defects)
            last = number
    except BudgetSpent as exc:
        report.stopped = f"request budget spent ({exc}); the next run resumes"
    except GitHubError as exc:
        report.stopped = f"GitHub: {exc}"
    report.requests = budget.used - start
    if last is not None:
        put_cursor(store, repo, CURSOR_KIND, str(last))
    return report


@dataclass(frozen=True)
class _Closed:
    """A closed pull request's defects with their outcomes, and when it closed or merged."""

    defects: list[tuple[DefectRow, Settled]]
    event_at: str | None


def _rotated(numbers: list[int], after: str | None) -> list[int]:
    """``numbers`` starting after the pull request ``after`` names, wrapping around."""
    if after is None or not after.isdigit():
        return numbers
    split = next((i for i, n in enumerate(numbers) if n > int(after)), len(numbers))
    return numbers[split:] + numbers[:split]


class _Login:
    """The bot's own login, asked of GitHub at most once a call (one request, budgeted)."""

    def __init__(self, github: GitHubPort, budget: Budget, known: str | None = None) -> None:
        self._github, self._budget = github, budget
        self._known = known is not None
        self._login: str | None = known

    def __call__(self) -> str | None:
        if not self._known:
            self._budget.spend()
            self._login = self._github.login()
            self._known = True
        return self._login


def _plain(login: str | None) -> str:
    """A login as both APIs name it: GraphQL names an app ``name``, REST ``name[bot]``."""
    return (login or "").lower().removesuffix("[bot]")


def _settle_pull(
    github: GitHubPort,
    repo: str,
    number: int,
    rows: Sequence[DefectRow],
    budget: Budget,
    login: Callable[[], str | None],
) -> _Closed | None:
    """Each defect of one pull request with its outcome; ``None`` while it is open."""
    budget.spend()
    history = github.pull_history(repo, number)
    if history is None:
        gone = Settled(DefectOutcome.UNMERGED, "the pull request is gone")
        return _Closed([(row, gone) for row in rows], None)
    if history.state == "OPEN":
        return None
    if history.state != "MERGED":
        unmerged = Settled(DefectOutcome.UNMERGED, "closed unmerged")
        return _Closed([(row, unmerged) for row in rows], history.closed_at)
    comparisons: dict[str, Comparison | None] = {}
    for head in dict.fromkeys(r.head_sha for r in rows if r.head_sha != history.head_sha):
        budget.spend()
        comparisons[head] = github.compare(repo, head, history.head_sha)
    own = login() if any(_threads_of(row, history) for row in rows) else None
    judged = [(row, judge_defect(row, history, comparisons.get(row.head_sha), own)) for row in rows]
    return _Closed(_each_once(judged, history, comparisons), history.merged_at)


def _each_once(
    judged: Sequence[tuple[DefectRow, Settled]],
    history: PullHistory,
    comparisons: dict[str, Comparison | None],
) -> list[tuple[DefectRow, Settled]]:
    """``judged`` with a defect reported again at a later head marked repeated: the same file,
    category and line at merge as one reported at an earlier head (audits of later pushes
    read the same changed lines again)."""
    first: dict[tuple[str, str, int], DefectRow] = {}
    out = []
    for row, settled in sorted(judged, key=lambda pair: pair[0].created_at):
        line = _line_at_merge(row, settled, history, comparisons.get(row.head_sha))
        key = None if line is None else (row.path, row.category, line)
        earlier = first.get(key) if key is not None else None
        if earlier is not None and earlier.head_sha != row.head_sha:
            why = f"reported first at {earlier.head_sha[:12]} (line {earlier.line}): counted there"
            out.append((row, Settled(DefectOutcome.REPEATED, why, settled.review_comment_id)))
            continue
        if key is not None:
            first.setdefault(key, row)
        out.append((row, settled))
    return out


def _line_at_merge(
    row: DefectRow, settled: Settled, history: PullHistory, comparison: Comparison | None
) -> int | None:
    """Where the defect's line is at the merged head; ``None`` when it is gone or unknown."""
    if settled.outcome in (DefectOutcome.FILE_GONE, DefectOutcome.UNTRACEABLE):
        return None
    if row.head_sha == history.head_sha:
        return row.line
    if comparison is None:
        return None
    changed = _file_at_merge(row, comparison)
    if changed is None:
        return row.line
    return moved_line(changed.patch, row.line) if changed.patch is not None else None


def _threads_of(row: DefectRow, history: PullHistory) -> list[ReviewThread]:
    """The review threads whose first comment is on ``row``'s line at its head SHA (or is
    its recorded review comment)."""
    position = (row.path, row.line, row.head_sha)
    return [
        thread
        for thread in history.threads
        if thread.comments
        and (
            thread.comments[0].id == row.review_comment_id
            or (thread.comments[0].path, thread.comments[0].line, thread.comments[0].commit_id)
            == position
        )
    ]


def _file_at_merge(row: DefectRow, comparison: Comparison) -> ChangedFile | None:
    return next(
        (f for f in comparison.files if row.path in (f.path, f.previous_path)),
        None,
    )


def judge_defect(
    row: DefectRow,
    history: PullHistory,
    comparison: Comparison | None,
    own_login: str | None,
) -> Settled:
    """One defect's outcome on a merged pull request.

    ``comparison`` is from the defect's head SHA to the merged head (``None`` when they are
    the same commit, or GitHub no longer knows the defect's head); ``own_login`` is the bot's:
    a thread counts only when the bot opened it, and the bot's replies are not answers
    (``None``: threads are matched by line and commit alone).
    """
    threads = [
        t
        for t in _threads_of(row, history)
        if own_login is None or _plain(t.comments[0].author) == _plain(own_login)
    ]
    comment_id = threads[0].comments[0].id if threads else None
    resolved = any(t.resolved for t in threads)
    replied = any(_plain(c.author) != _plain(own_login) for t in threads for c in t.comments[1:])
    where = f"line {row.line}"
    changed = touched = False
    if row.head_sha != history.head_sha:
        if comparison is None or comparison.status not in ("ahead", "identical"):
            state = "unknown to GitHub" if comparison is None else comparison.status
            return Settled(
                DefectOutcome.UNTRACEABLE,
                f"the merged head does not descend from {row.head_sha[:12]} ({state})",
                comment_id,
            )
        changed_file = _file_at_merge(row, comparison)
        if changed_file is None and comparison.truncated:
            why = "the comparison lists GitHub's 300 files, not this one"
            return Settled(DefectOutcome.UNTRACEABLE, why, comment_id)
        if changed_file is not None:
            if changed_file.status == "removed" or changed_file.path != row.path:
                how = "removed" if changed_file.status == "removed" else "renamed"
                return Settled(DefectOutcome.FILE_GONE, f"the file was {how}", comment_id)
            if changed_file.patch is None:
                why = "GitHub shows no patch for the file (binary or too large)"
                return Settled(DefectOutcome.UNTRACEABLE, why, comment_id)
            touched = True
            changed = row.line in removed_lines(changed_file.patch)
    if changed:
        return Settled(DefectOutcome.ACTED_ON, f"a later commit changed {where}", comment_id)
    if resolved and touched:
        why = "its review thread was resolved and a later commit touched the file"
        return Settled(DefectOutcome.ACTED_ON, why, comment_id)
    if replied:
        why = f"its review thread got a reply; {where} stands"
        return Settled(DefectOutcome.ANSWERED, why, comment_id)
    return Settled(DefectOutcome.NOT_ACTED_ON, f"{where} stands unchanged at merge", comment_id)
