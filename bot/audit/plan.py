"""The PR audit in two steps: :func:`plan_audit` reads and audits, :func:`apply_audit` writes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.audit.auditor import Auditor, AuditResult, Outcome
from bot.audit.earned import LineRule
from bot.audit.enclosing import enclosing_context
from bot.audit.pr_comment import MARKER, audited_head, render_audit_comment
from bot.audit.ranges import check_range_in_file, parse_range_spec
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
from bot.history.record import DefectRow, put_defects

__all__ = [
    "AppliedAudit",
    "AuditPlan",
    "apply_audit",
    "defect_rows",
    "plan_audit",
    "superseded",
]


@dataclass(frozen=True)
class AuditPlan:
    """The audit's plan for one PR at one head SHA; ``rows`` hold accepted outcomes only.

    ``already_audited``: a replayed event whose comment covers this head; nothing to write.
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
    lines: LineRule | None = None
    """The line comments' stop rule as the live record decided it (``None``: not consulted)."""

    @property
    def accepted(self) -> int:
        return len(self.rows)

    @property
    def rejected(self) -> int:
        return len(self.outcomes) - len(self.rows)


@dataclass(frozen=True)
class AppliedAudit:
    """What :func:`apply_audit` did to the rows, the comment and the review."""

    plan: AuditPlan
    rows_written: int
    comment: str
    review: str = "none"
    defects_recorded: int = 0


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
    lines: LineRule | None = None,
) -> AuditPlan:
    """Select, read and audit a PR's changed lines; plan the rows, comment and review.

    With ``skip_if_audited``, a comment naming this head SHA makes the plan ``already_audited``.
    Up to ``concurrency`` segments are audited at once; outcomes keep segment order. Line
    comments are planned only with ``review_comments`` and unless ``lines`` stopped them.

    Raises:
        InvalidRange: the requested range breaks a rule.
        GitHubError: the files, a requested file or the comments cannot be read.
        Any non-model error of an audit: the first segment's, once every audit has ended.
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
    stopped = lines.stopped if review_comments and lines is not None else None
    comment = render_audit_comment(
        head_sha=pull.head_sha,
        selection=final,
        outcomes=outcomes,
        model=model,
        lines_stopped=stopped,
    )
    diff_lines = {f.path: right_side_lines(f.patch) for f in files if f.patch}
    review = line_comments(outcomes, diff_lines) if review_comments and not stopped else ()
    return AuditPlan(
        pull, final, outcomes, rows, comment, audit_format, existing, False, review, lines
    )


def superseded(
    pull: PullRef, now: Mapping[str, Any] | None, current_head: Callable[[], str]
) -> str | None:
    """Why an audit planned before the PR's lock must not be written, or ``None``.

    ``current_head`` reads the PR's head from GitHub, only when ``now`` audits another head.
    """
    if now is None:
        return None
    if now["head_sha"] == pull.head_sha:
        return f"superseded by the audit of this head SHA written at {now['created_at']}"
    head = current_head()
    if head != pull.head_sha:
        return f"the pull request moved on to {head[:12]}; the run for that push audits it"
    return None


def defect_rows(plan: AuditPlan) -> tuple[DefectRow, ...]:
    """Each verified defect of the accepted audits that cites a line, one per line of a file:
    the live record's rows, whether or not the defect gets a line comment."""
    pull = plan.pull
    found: dict[tuple[str, int], DefectRow] = {}
    for result in plan.outcomes:
        if not isinstance(result, AuditResult):
            continue
        for claim in result.defects:
            if claim.line is None or (result.segment.path, claim.line) in found:
                continue
            found[(result.segment.path, claim.line)] = DefectRow(
                repo=pull.repo,
                pr=pull.number,
                head_sha=pull.head_sha,
                path=result.segment.path,
                line=claim.line,
                category=str(claim.category or ""),
                model=result.model,
                prompt_version=result.prompt_version,
            )
    return tuple(found.values())


def apply_audit(plan: AuditPlan, github: GitHubPort, store: HistoryStore) -> AppliedAudit:
    """Write the accepted rows and the reported defects, then create or edit the comment, then
    post the review.

    Nothing accepted and no comment: nothing is posted; an older comment is edited to the
    coverage line. An identical body is not written again. Rows and defects go first: after a
    failed post the next run replaces them and posts, never a second row or comment; a failed
    store write posts nothing.

    Raises:
        StoreError: the rows or defects could not be written (nothing is posted then).
        GitHubError: the comment could not be read or written.
    """
    if plan.already_audited:
        return AppliedAudit(plan, 0, "unchanged")
    written = store.record_audits(plan.rows)
    defects = defect_rows(plan)
    put_defects(store, defects)
    existing = plan.existing
    if not plan.rows and existing is None:
        return AppliedAudit(plan, 0, "not posted (nothing accepted)")
    if existing is not None and existing.body == plan.comment:
        review = _apply_review(plan, github)
        return AppliedAudit(plan, written, "unchanged", review, len(defects))
    action = github.upsert_comment(plan.pull.repo, plan.pull.number, existing, plan.comment)
    return AppliedAudit(plan, written, action, _apply_review(plan, github), len(defects))


def _apply_review(plan: AuditPlan, github: GitHubPort) -> str:
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
