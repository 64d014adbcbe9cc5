"""The dataset pipeline: a repository's closed issues → labelled rows in the eval format.

A run costs a little over one request per issue (docs/measure-your-model.md).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from bot.clients.github_port import (
    EditHistory,
    IssueHistoryPort,
    ListedIssue,
    RateLimit,
    TimelineItem,
)
from bot.dataset.files import DatasetFiles, PageMark, RowKind, row_id
from bot.dataset.rules import (
    Decision,
    LabelRules,
    SkipReason,
    decide,
    early_skip,
    first_response,
    kind_of,
    transferred,
)
from bot.dataset.text import body_at, title_at
from bot.dataset.type_rows import TypeRow, decide_type, early_type_skip, type_text
from bot.errors import ConfigError, GitHubError
from bot.evaluation.sets import EvalIssue
from bot.gate.labels import DEFAULT_LABELS, GateLabels
from bot.neutralise import log_value
from bot.repo_file import TYPE_NAMES, DatasetConfig, TypeLabels

__all__ = ["DatasetProgress", "DatasetReport", "page_key", "run_dataset"]


_VERDICTS = ("VALID", "NEEDS_REFINEMENT")


@dataclass
class DatasetProgress:
    """What a run has done so far; counts are this run's, except ``rows`` (the file's).

    ``labelled`` counts the rows by verdict, or by type for type rows (``kinds``).
    """

    kinds: tuple[str, ...] = _VERDICTS
    read: int = 0
    labelled: Counter[str] = field(default_factory=Counter)
    borderline: int = 0
    skipped: Counter[SkipReason] = field(default_factory=Counter)
    earlier: int = 0
    unchanged_pages: int = 0
    rows: int = 0
    rate_limit: RateLimit | None = None
    waiting_s: float = 0.0

    def line(self) -> str:
        """One progress line: read, labelled, skipped by reason, requests left, any wait."""
        skipped = ", ".join(f"{reason.name.lower()} {n}" for reason, n in self.skipped.items())
        known = self.rate_limit
        parts = [
            f"read {self.read}",
            *(f"{kind} {self.labelled[kind]}" for kind in self.kinds),
            f"skipped {sum(self.skipped.values())}" + (f" ({skipped})" if skipped else ""),
            "requests left " + ("?" if known is None else f"{known.remaining}/{known.limit}"),
        ]
        if self.waiting_s > 0:
            parts.append(f"waiting {self.waiting_s:.0f} s for GitHub's rate limit")
        return " · ".join(parts)


@dataclass(frozen=True)
class DatasetReport:
    """A finished run: where the rows are and what it did.

    ``no_issues``: no closed issue in scope, so nothing was written.
    """

    repo: str
    out: Path
    state_file: Path
    progress: DatasetProgress
    no_issues: bool
    dropped_torn_line: bool = False
    since: datetime | None = None

    def lines(self) -> list[str]:
        """What a finished run tells people, ending with the next command to run."""
        out = log_value(str(self.out))
        done = self.progress
        if self.no_issues:
            scope = f" opened since {self.since.date().isoformat()}" if self.since else ""
            return [
                f"{self.repo} has no closed issues{scope} (pull requests are not issues): "
                "nothing to label, nothing written."
            ]
        lines = [f"{done.rows} row(s) in {out} from {self.repo}."]
        if self.dropped_torn_line:
            lines.append(
                "A row cut short by an earlier crash was dropped; its issue was read again."
            )
        if done.kinds == _VERDICTS:
            labelled = (
                f"labelled {done.labelled['VALID']} VALID and "
                f"{done.labelled['NEEDS_REFINEMENT']} NEEDS_REFINEMENT "
                f"({done.borderline} borderline)"
            )
        else:
            counts = ", ".join(f"{done.labelled[kind]} {kind}" for kind in done.kinds)
            labelled = f"typed {counts}"
        lines.append(
            f"This run: read {done.read} closed issue(s); {labelled}; "
            f"left out {sum(done.skipped.values())}."
        )
        for reason, count in done.skipped.most_common():
            lines.append(f"  {count:>5}  {reason.value}")
        if done.earlier or done.unchanged_pages:
            lines.append(
                f"Done by an earlier run: {done.earlier} issue(s), {done.unchanged_pages} "
                "unchanged page(s) of the list: not read again."
            )
        if done.skipped or done.earlier:
            lines.append(f"Issues left out, with their reason: {log_value(str(self.state_file))}")
        if done.rows and done.kinds == _VERDICTS:
            lines.append(
                f"Next: triage-bot eval --only gate --split --issues {out} "
                "--save-replies replies.jsonl (add your model's flags, e.g. --ollama-host URL "
                "--model NAME); then triage-bot calibrate --issues "
                f"{out} --replies replies.jsonl --out policy.json"
            )
        elif done.rows:
            lines.append(
                f"Next: triage-bot types fit --issues {out} --repo {self.repo} "
                "--out .github/triage-bot-types.json (needs the types-fit extra)"
            )
        return lines


def page_key(since: datetime | None, page: int) -> str:
    """The state file's key of a list page."""
    return f"since={since.isoformat() if since else ''}&page={page}"


def _timeline(
    github: IssueHistoryPort, repo: str, issue: ListedIssue
) -> list[TimelineItem] | SkipReason:
    """The issue's timeline, or why there is none to read here (gone, or transferred)."""
    timeline = github.issue_timeline(repo, issue.number)
    if timeline is None:
        return SkipReason.GONE
    if transferred(issue, timeline, repo):
        return SkipReason.TRANSFERRED
    return timeline


def _row(
    github: IssueHistoryPort,
    repo: str,
    issue: ListedIssue,
    history: EditHistory | None,
    rules: LabelRules,
) -> EvalIssue | SkipReason:
    timeline = _timeline(github, repo, issue)
    if isinstance(timeline, SkipReason):
        return timeline
    decision = decide(issue, timeline, history, rules)
    if not isinstance(decision, Decision):
        return decision
    seen = first_response(issue, timeline, rules)
    body = body_at(issue, history, seen.at)
    if body is None:
        return SkipReason.TEXT_UNKNOWN
    return EvalIssue(
        id=row_id(repo, issue.number),
        kind=kind_of(issue.labels),
        title=title_at(issue, timeline, seen.index),
        body=body,
        expected=decision.expected,
        rationale=f"{repo}#{issue.number}: {decision.rationale}",
        borderline=decision.borderline,
    )


def _type_row(
    github: IssueHistoryPort,
    repo: str,
    issue: ListedIssue,
    history: EditHistory | None,
    rules: LabelRules,
    mapping: TypeLabels,
) -> TypeRow | SkipReason:
    timeline = _timeline(github, repo, issue)
    if isinstance(timeline, SkipReason):
        return timeline
    kind = decide_type(issue, timeline, mapping, rules)
    if isinstance(kind, SkipReason):
        return kind
    title, body = type_text(issue, timeline, history)
    return TypeRow(
        id=row_id(repo, issue.number),
        title=title,
        body=body,
        type=kind,
        repo=repo,
        created_at=issue.created_at,
    )


def run_dataset(
    github: IssueHistoryPort,
    repo: str,
    out: Path,
    *,
    config: DatasetConfig | None = None,
    gate: GateLabels = DEFAULT_LABELS,
    bot_login: str | None = None,
    since: datetime | None = None,
    limit: int | None = None,
    on_progress: Callable[[DatasetProgress], None] | None = None,
    files: DatasetFiles | None = None,
    types: TypeLabels | None = None,
) -> DatasetReport:
    """Label ``repo``'s closed issues and append the rows to ``out``, resuming a stopped run.

    With ``types`` (the repository's type labels) the rows are type rows
    (:mod:`bot.dataset.type_rows`). ``since`` is UTC; ``limit`` counts the file's rows;
    ``files`` may be opened beforehand (with the same kind of rows).

    Raises:
        ConfigError: ``out`` or its state file is not this command's, or cannot be written.
        GitHubError: a read failed, or the list does not end; what was done is kept.
    """
    rules = LabelRules.from_config(config, gate=gate, bot_login=bot_login)
    kind: RowKind = "eval" if types is None else "types"
    files = DatasetFiles(out, repo, rows=kind) if files is None else files
    if files.rows != kind:
        raise ValueError(f"{out}: opened for {files.rows} rows, written with {kind} rows")
    progress = DatasetProgress(
        rows=len(files.row_ids), kinds=_VERDICTS if types is None else TYPE_NAMES
    )

    def early_skip_of(issue: ListedIssue) -> SkipReason | None:
        return early_skip(issue) if types is None else early_type_skip(issue, types)

    def row_of(issue: ListedIssue, history: EditHistory | None) -> EvalIssue | TypeRow | SkipReason:
        if types is None:
            return _row(github, repo, issue, history, rules)
        return _type_row(github, repo, issue, history, rules, types)

    seen_issue = bool(files.row_ids) or bool(files.skipped_reasons())

    def tell() -> None:
        progress.rate_limit = github.rate_limit()
        if on_progress is not None:
            on_progress(progress)

    page = 1
    listed: set[int] = set()  # every number the list gave in this run (pull requests too)
    try:
        while limit is None or progress.rows < limit:
            key = page_key(since, page)
            mark = files.page(key)
            answer = github.closed_issues_page(
                repo, page, since=since, etag=mark.etag if mark else None
            )
            if answer.issues is None:  # 304: done in an earlier run, unchanged since
                assert mark is not None  # a page without a mark was asked unconditionally
                progress.unchanged_pages += 1
                seen_issue = seen_issue or mark.issues
                tell()
                if mark.last:
                    break
                page += 1
                continue
            if answer.issues and all(i.number in listed for i in answer.issues):
                raise GitHubError(
                    f"list closed issues of {repo} (page {page}): the page holds only what "
                    "earlier pages held, so the list would not end; stopped (the rows so far "
                    "are kept, and the same command resumes)"
                )
            listed.update(i.number for i in answer.issues)
            issues = [issue for issue in answer.issues if not issue.pull_request]
            in_scope = [i for i in issues if since is None or i.created_at >= since]
            seen_issue = seen_issue or bool(in_scope)
            pending = [i for i in in_scope if not files.done(i.number)]
            progress.earlier += len(in_scope) - len(pending)
            early = {i.number: early_skip_of(i) for i in pending}
            histories = github.edit_histories(
                [i.node_id for i in pending if early[i.number] is None]
            )
            finished = True
            for issue in pending:
                if limit is not None and progress.rows >= limit:
                    finished = False
                    break
                progress.read += 1
                outcome = early[issue.number] or row_of(issue, histories.get(issue.node_id))
                if isinstance(outcome, SkipReason):
                    files.skip(row_id(repo, issue.number), outcome.value)
                    progress.skipped[outcome] += 1
                    tell()
                    continue
                files.append(outcome)
                progress.rows += 1
                if isinstance(outcome, TypeRow):
                    progress.labelled[outcome.type] += 1
                else:
                    progress.labelled[outcome.expected] += 1
                    progress.borderline += outcome.borderline
                tell()
            # GitHub names no next page, the page is empty, or its older issues predate --since
            last = not answer.has_next or not answer.issues or len(in_scope) < len(issues)
            if finished and answer.etag:
                files.mark_page(key, PageMark(etag=answer.etag, last=last, issues=bool(in_scope)))
            if seen_issue:
                files.save()
            if last:
                break
            page += 1
    except BaseException:
        if seen_issue:  # what was done is kept; the fault that stopped the run is the one told
            with contextlib.suppress(ConfigError):
                files.save()
        raise
    if seen_issue:  # a repository with no closed issue leaves no file behind
        files.save()
    return DatasetReport(
        repo=repo,
        out=out,
        state_file=files.state_file,
        progress=progress,
        no_issues=not seen_issue,
        dropped_torn_line=files.dropped_torn_line,
        since=since,
    )
