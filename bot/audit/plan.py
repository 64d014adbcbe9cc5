"""The PR audit as a straight-line function: compute a plan, then apply it.

The audit's reads (PR files, file
contents at the head SHA) and the model calls happen while planning (:func:`plan_audit`: up to
the job's model concurrency of the segments audited at once, the outcomes in segment order); its
writes (rows, then the PR comment, then the review of verified defects on their lines:
:mod:`bot.audit.review`) happen in :func:`apply_audit`. ``--dry-run`` prints the plan instead of
applying it, and tests assert on plans. The issue gate's plan and apply are :mod:`bot.gate.plan`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.audit.auditor import Auditor, AuditResult, Outcome
from bot.audit.context import enclosing_context
from bot.audit.ranges import check_range_in_file, parse_range_spec
from bot.audit.report import MARKER, audited_head, render_audit_comment
from bot.audit.review import FINDING_PREFIX, line_comments, review_summary, to_post
from bot.audit.selection import (
    DEFAULT_SKIP_GLOBS,
    Segment,
    Selection,
    Skipped,
    right_side_lines,
    select_segments,
)
from bot.clients.github_port import BotComment, GitHubPort, PullRef, ReviewComment
from bot.concurrency import map_bounded, results_or_raise
from bot.errors import GitHubError
from bot.history.protocol import AuditRow, HistoryStore

__all__ = [
    "AppliedAudit",
    "AuditPlan",
    "apply_audit",
    "plan_audit",
    "superseded",
]


@dataclass(frozen=True)
class AuditPlan:
    """The audit's plan for one PR at one head SHA.

    Attributes:
        pull: the PR (repo, number, head SHA).
        selection: segments audited and everything skipped (with reasons).
        outcomes: one accepted or rejected outcome per audited segment.
        rows: store rows for the accepted outcomes only.
        comment: the PR comment body (marker first).
        audit_format: ``markdown`` or ``json``.
        existing: the bot's comment on the PR as read while planning, or ``None``.
        already_audited: the existing comment already audits this head SHA and the run was a
            replayed or repeated webhook event: nothing was audited and nothing is to be written.
        review: the line comments of verified defects on diff lines
            (:func:`bot.audit.review.line_comments`); empty when review comments are off.
    """

    pull: PullRef
    selection: Selection
    outcomes: tuple[Outcome, ...]
    rows: tuple[AuditRow, ...]
    comment: str
    audit_format: str
    existing: BotComment | None = None
    already_audited: bool = False
    review: tuple[ReviewComment, ...] = ()

    @property
    def accepted(self) -> int:
        """Number of accepted audits."""
        return len(self.rows)

    @property
    def rejected(self) -> int:
        """Number of rejected audits."""
        return len(self.outcomes) - len(self.rows)


@dataclass(frozen=True)
class AppliedAudit:
    """What :func:`apply_audit` did: rows written, the comment (``created``/``edited``/
    ``unchanged``) and the review (``none``, ``nothing new``, ``N line comment(s) posted``)."""

    plan: AuditPlan
    rows_written: int
    comment: str
    review: str = "none"


def _row(pull: PullRef, result: AuditResult, fmt: str) -> AuditRow:
    return AuditRow(
        repo=pull.repo,
        pr=pull.number,
        head_sha=pull.head_sha,
        path=result.segment.path,
        line_start=result.segment.start,
        line_end=result.segment.end,
        verdict=result.verdict,
        confidence=result.confidence,
        retried=result.retried,
        audit_format=fmt,
        model=result.model,
        prompt_version=result.prompt_version,
        prompt_tokens=result.prompt_tokens,
        output_tokens=result.output_tokens,
        duration_ms=result.duration_ms,
        markdown=result.markdown,
    )


def plan_audit(
    pull: PullRef,
    github: GitHubPort,
    auditor: Auditor,
    *,
    audit_format: str,
    requested_range: str | None = None,
    max_segments: int = 8,
    skip_globs: Sequence[str] = DEFAULT_SKIP_GLOBS,
    skip_if_audited: bool = False,
    review_comments: bool = False,
    concurrency: int = 1,
) -> AuditPlan:
    """Select, read and audit a PR's changed lines; plan the rows and the comment.

    The bot's existing comment is read first. With ``skip_if_audited`` (webhook events, not
    ``/audit``), a comment whose hidden head line names this head SHA means the work is done:
    the plan is ``already_audited``, with no model call and nothing to write (idempotent replay).

    Args:
        pull: the PR at its head SHA.
        github: reads files and contents (no writes here).
        auditor: the auditor with its model.
        audit_format: ``markdown`` or ``json`` (recorded with each row).
        requested_range: ``PATH:START-END`` from a maintainer, or ``None`` for the selection.
        max_segments: per-PR segment cap.
        skip_globs: files never audited.
        skip_if_audited: return an ``already_audited`` plan when the comment covers the head SHA.
        review_comments: plan a line comment per verified defect on a diff line
            (``Settings.review_comments``).
        concurrency: most segments audited at once (:func:`bot.concurrency.map_bounded`; 1:
            one after another); the outcomes keep the segments' order either way.

    Raises:
        InvalidRange: the requested range breaks a rule.
        GitHubError: the PR's files, a requested file or the comments cannot be read.
        Whatever auditing a segment raised beyond a model fault (which rejects the segment):
            the first such segment's, once every audit has ended.
    """
    existing = github.find_bot_comment(pull.repo, pull.number, MARKER)
    if skip_if_audited and existing is not None and audited_head(existing.body) == pull.head_sha:
        return AuditPlan(
            pull, Selection((), ()), (), (), existing.body, audit_format, existing, True
        )
    files = github.pull_files(pull.repo, pull.number)
    if requested_range is not None:
        live = [f.path for f in files if f.status != "removed"]
        selection = Selection((parse_range_spec(requested_range, live),), ())
    else:
        selection = select_segments(files, skip_globs=skip_globs, max_segments=max_segments)
    contents: dict[str, list[str]] = {}
    audited: list[Segment] = []
    skipped = list(selection.skipped)
    for segment in selection.segments:
        if segment.path not in contents:
            try:
                contents[segment.path] = github.file_lines(pull.repo, segment.path, pull.head_sha)
            except GitHubError as exc:
                if requested_range is not None:
                    raise
                skipped.append(Skipped(segment.path, f"unreadable at the head SHA: {exc}"))
                contents[segment.path] = []
                continue
        if requested_range is not None:
            check_range_in_file(segment, len(contents[segment.path]))
        if contents[segment.path] and segment.end <= len(contents[segment.path]):
            audited.append(segment)
        elif contents[segment.path]:
            skipped.append(Skipped(segment.path, "range past the end of the file", segment))
    final = Selection(tuple(audited), tuple(skipped))

    def audit(s: Segment) -> Outcome:
        lines = contents[s.path]
        return auditor.audit(
            s, lines[s.start - 1 : s.end], enclosing_context(lines, s.start, s.end)
        )

    audits: list[Outcome] = results_or_raise(map_bounded(audit, final.segments, limit=concurrency))
    outcomes = tuple(audits)
    rows = tuple(_row(pull, o, audit_format) for o in outcomes if isinstance(o, AuditResult))
    model = outcomes[0].model if outcomes else "no model call"
    comment = render_audit_comment(
        head_sha=pull.head_sha, selection=final, outcomes=outcomes, model=model
    )
    diff_lines = {f.path: right_side_lines(f.patch) for f in files if f.patch}
    review = line_comments(outcomes, diff_lines) if review_comments else ()
    return AuditPlan(pull, final, outcomes, rows, comment, audit_format, existing, False, review)


def superseded(
    pull: PullRef, now: Mapping[str, Any] | None, current_head: Callable[[], str]
) -> str | None:
    """Why an audit planned before the pull request's lock must not be written, or ``None``.

    Asked under the lock of a webhook run when the store's last audit row of the pull request
    is not the one read before planning. ``now`` is that row; ``current_head`` reads the pull
    request's head SHA from GitHub (called only when ``now`` audits another head).
    """
    if now is None:
        return None
    if now["head_sha"] == pull.head_sha:
        return f"superseded by the audit of this head SHA written at {now['created_at']}"
    head = current_head()
    if head != pull.head_sha:
        return f"the pull request moved on to {head[:12]}; the run for that push audits it"
    return None


def apply_audit(plan: AuditPlan, github: GitHubPort, store: HistoryStore) -> AppliedAudit:
    """Persist the accepted rows (one transaction), then create or edit the PR comment.

    Nothing accepted and no comment yet: nothing is posted (a rejected or failed audit is never
    posted; the run's warnings and step summary say why). Nothing accepted but an older comment
    exists: it is edited to the coverage line, so an audit of an older head SHA never passes for
    the current one. The comment found by its hidden marker while planning is edited in place;
    an identical body is not written again. Rows are written first (replacing earlier rows of
    the same segments at the same head SHA), so a failed post leaves the audits recorded and
    the next run audits again, replaces them and posts: never a duplicate row or a second
    comment. Last, when the plan has line comments, the bot's review comments are listed once
    and one ``COMMENT`` review holds those not posted before (:func:`bot.audit.review.to_post`:
    none when this head SHA already has the bot's review).

    Raises:
        StoreError: the rows could not be written (nothing is posted then).
        GitHubError: the comment could not be read or written.
    """
    if plan.already_audited:
        return AppliedAudit(plan, 0, "unchanged")
    written = store.record_audits(plan.rows)
    existing = plan.existing
    if not plan.rows and existing is None:
        return AppliedAudit(plan, 0, "not posted (nothing accepted)")
    if existing is not None and existing.body == plan.comment:
        return AppliedAudit(plan, written, "unchanged", _apply_review(plan, github))
    action = github.upsert_comment(plan.pull.repo, plan.pull.number, existing, plan.comment)
    return AppliedAudit(plan, written, action, _apply_review(plan, github))


def _apply_review(plan: AuditPlan, github: GitHubPort) -> str:
    """Post the plan's new line comments as one ``COMMENT`` review; say what was done."""
    if not plan.review:
        return "none"
    pull = plan.pull
    posted = github.bot_review_comments(pull.repo, pull.number, FINDING_PREFIX)
    new = to_post(plan.review, posted, pull.head_sha)
    if not new:
        return "nothing new"
    summary = review_summary(len(new), pull.head_sha)
    github.create_review(pull.repo, pull.number, pull.head_sha, summary, new)
    return f"{len(new)} line comment(s) posted"
