"""``dataset --duplicates``: a repository's issues of every state → ``pool.jsonl``, and its
issues closed as duplicates of others → ``pairs.jsonl`` (shapes: :mod:`bot.dataset.duplicates`).

Requests: one per page of the issues list (100 issues and pull requests; a page an earlier run
finished is asked with its ETag, and GitHub's 304 is free), one GraphQL query per page for the
duplicate marks of its candidates (issues closed as duplicate or not planned), and one request
per page of each candidate's timeline (its comments). ``pool.jsonl`` is appended as issues are
read, so a stopped run resumes; ``pairs.jsonl`` is written whole at the end of every run, from the
pairs kept in ``pool.jsonl.state.json``, with the pairs whose both ends are in the pool.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bot.clients.github_port import DuplicateMark, DuplicatesPort, ListedIssue, RateLimit
from bot.dataset.build import page_key
from bot.dataset.duplicates import (
    PAIRS_FILE,
    POOL_FILE,
    FoundPair,
    NoPair,
    PairRow,
    PoolRow,
    canonical_of,
    is_candidate,
    stamp,
)
from bot.dataset.files import DatasetFiles, PageMark, row_id
from bot.dataset.rules import SkipReason, transferred
from bot.errors import ConfigError, GitHubError
from bot.neutralise import log_value
from bot.regular_file import write_atomic

__all__ = ["DuplicatesProgress", "DuplicatesReport", "pair_rows", "run_duplicates"]


@dataclass
class DuplicatesProgress:
    """What a run has done so far; counts are this run's, except ``rows`` (the pool's)."""

    read: int = 0
    candidates: int = 0
    found: Counter[str] = field(default_factory=Counter)
    """Pairs found by this run, by basis."""
    no_pair: Counter[NoPair] = field(default_factory=Counter)
    skipped: Counter[SkipReason] = field(default_factory=Counter)
    earlier: int = 0
    unchanged_pages: int = 0
    rows: int = 0
    rate_limit: RateLimit | None = None
    waiting_s: float = 0.0

    def line(self) -> str:
        """One progress line: read, pairs found, requests left, any wait."""
        known = self.rate_limit
        parts = [
            f"read {self.read}",
            f"pool {self.rows}",
            f"pairs found {sum(self.found.values())}",
            "requests left " + ("?" if known is None else f"{known.remaining}/{known.limit}"),
        ]
        if self.waiting_s > 0:
            parts.append(f"waiting {self.waiting_s:.0f} s for GitHub's rate limit")
        return " · ".join(parts)


@dataclass(frozen=True)
class DuplicatesReport:
    """A finished run: where the files are, the pairs written and those left out by reason."""

    repo: str
    out: Path
    progress: DuplicatesProgress
    pairs: int
    left_out: Counter[NoPair]
    dropped_torn_line: bool = False

    def lines(self) -> list[str]:
        """What a finished run tells people, ending with the next command to run."""
        done = self.progress
        pool = log_value(str(self.out / POOL_FILE))
        pairs = log_value(str(self.out / PAIRS_FILE))
        lines = [
            f"{done.rows} issue(s) in {pool}, {self.pairs} pair(s) in {pairs} from {self.repo}."
        ]
        if self.dropped_torn_line:
            lines.append(
                "A row cut short by an earlier crash was dropped; its issue was read again."
            )
        found = ", ".join(f"{n} by {basis}" for basis, n in sorted(done.found.items())) or "none"
        lines.append(
            f"This run: read {done.read} issue(s), {done.candidates} closed as duplicate or "
            f"not planned; pairs found {found}; left out {sum(done.skipped.values())} issue(s)."
        )
        for reason, count in done.skipped.most_common():
            lines.append(f"  {count:>5}  {reason.value}")
        for no_pair, count in (done.no_pair + self.left_out).most_common():
            lines.append(f"  {count:>5}  no pair: {no_pair.value}")
        if done.earlier or done.unchanged_pages:
            lines.append(
                f"Done by an earlier run: {done.earlier} issue(s), {done.unchanged_pages} "
                "unchanged page(s) of the list: not read again."
            )
        if self.pairs:
            lines.append(
                f"Next: triage-bot eval --only duplicates --pool {pool} --pairs {pairs} "
                "--out report.json"
            )
        return lines


def pair_rows(
    repo: str, found: dict[str, FoundPair], pool: set[str], pulls: frozenset[int]
) -> tuple[list[PairRow], Counter[NoPair]]:
    """The pairs whose canonical is an issue of the pool, by id; the rest counted by reason."""
    rows: list[PairRow] = []
    left_out: Counter[NoPair] = Counter()
    for item_id, pair in sorted(found.items()):
        if pair.repo is not None:
            left_out[NoPair.OTHER_REPOSITORY] += 1
        elif pair.pull or pair.dup_of in pulls:
            left_out[NoPair.PULL_REQUEST] += 1
        elif item_id not in pool or row_id(repo, pair.dup_of) not in pool:
            left_out[NoPair.NOT_IN_POOL] += 1
        else:
            rows.append(
                PairRow(id=item_id, dup_of=row_id(repo, pair.dup_of), direction_basis=pair.basis)
            )
    return rows, left_out


def _home(issue: ListedIssue, repo: str) -> bool:
    return issue.repository is None or issue.repository.lower() == repo.lower()


def run_duplicates(
    github: DuplicatesPort,
    repo: str,
    out: Path,
    *,
    limit: int | None = None,
    on_progress: Callable[[DuplicatesProgress], None] | None = None,
    files: DatasetFiles | None = None,
) -> DuplicatesReport:
    """Append ``repo``'s issues to ``out/pool.jsonl`` and write ``out/pairs.jsonl``, resuming a
    stopped run; ``limit`` counts the pool's rows.

    Raises:
        ConfigError: the files in ``out`` are not this command's, or cannot be written.
        GitHubError: a read failed, or the list does not end; what was done is kept.
    """
    files = DatasetFiles(out / POOL_FILE, repo, rows="pool") if files is None else files
    progress = DuplicatesProgress(rows=len(files.row_ids))

    def tell() -> None:
        progress.rate_limit = github.rate_limit()
        if on_progress is not None:
            on_progress(progress)

    page = 1
    listed: set[int] = set()
    try:
        while limit is None or progress.rows < limit:
            key = page_key(None, page)
            mark = files.page(key)
            answer = github.all_issues_page(repo, page, etag=mark.etag if mark else None)
            if answer.issues is None:  # 304: done in an earlier run, unchanged since
                assert mark is not None  # a page without a mark was asked unconditionally
                progress.unchanged_pages += 1
                tell()
                if mark.last:
                    break
                page += 1
                continue
            if answer.issues and all(i.number in listed for i in answer.issues):
                raise GitHubError(
                    f"list the issues of {repo} (page {page}): the page holds only what earlier "
                    "pages held, so the list would not end; stopped (the rows so far are kept, "
                    "and the same command resumes)"
                )
            listed.update(i.number for i in answer.issues)
            files.saw_pulls([i.number for i in answer.issues if i.pull_request])
            issues = [i for i in answer.issues if not i.pull_request]
            pending = [i for i in issues if not files.done(i.number)]
            progress.earlier += len(issues) - len(pending)
            candidates = [i for i in pending if is_candidate(i) and _home(i, repo)]
            marks = github.duplicate_marks([i.node_id for i in candidates])
            finished = True
            for issue in pending:
                if limit is not None and progress.rows >= limit:
                    finished = False
                    break
                progress.read += 1
                outcome = _read_issue(github, repo, issue, marks, progress, files)
                if isinstance(outcome, SkipReason):
                    files.skip(row_id(repo, issue.number), outcome.value)
                    progress.skipped[outcome] += 1
                else:
                    files.append(outcome)
                    progress.rows += 1
                tell()
            last = not answer.has_next or not answer.issues
            if finished and answer.etag:
                files.mark_page(key, PageMark(etag=answer.etag, last=last, issues=bool(issues)))
            files.save()
            if last:
                break
            page += 1
    except BaseException:
        with contextlib.suppress(ConfigError):  # the fault that stopped the run is the one told
            files.save()
            _write_pairs(files, repo, out)
        raise
    files.save()
    pairs, left_out = _write_pairs(files, repo, out)
    return DuplicatesReport(
        repo=repo,
        out=out,
        progress=progress,
        pairs=pairs,
        left_out=left_out,
        dropped_torn_line=files.dropped_torn_line,
    )


def _read_issue(
    github: DuplicatesPort,
    repo: str,
    issue: ListedIssue,
    marks: dict[str, tuple[DuplicateMark, ...]],
    progress: DuplicatesProgress,
    files: DatasetFiles,
) -> PoolRow | SkipReason:
    """The issue's pool row, after reading a candidate's timeline for its pair."""
    if not _home(issue, repo):
        return SkipReason.TRANSFERRED
    if is_candidate(issue):
        progress.candidates += 1
        timeline = github.issue_timeline(repo, issue.number)
        if timeline is None:
            return SkipReason.GONE
        if transferred(issue, timeline, repo):
            return SkipReason.TRANSFERRED
        pair = canonical_of(repo, issue.number, timeline, marks.get(issue.node_id, ()))
        if isinstance(pair, NoPair):
            progress.no_pair[pair] += 1
        else:
            files.found_pair(row_id(repo, issue.number), pair)
            progress.found[pair.basis] += 1
    return PoolRow(
        id=row_id(repo, issue.number), title=issue.title, body=issue.body, created_at=stamp(issue)
    )


def _write_pairs(files: DatasetFiles, repo: str, out: Path) -> tuple[int, Counter[NoPair]]:
    rows, left_out = pair_rows(repo, files.found_pairs(), files.row_ids, files.pulls())
    if not rows and not files.row_ids:
        return 0, left_out  # nothing read: no file left behind
    text = "".join(json.dumps(row.model_dump(), ensure_ascii=False) + "\n" for row in rows)
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_atomic(out / PAIRS_FILE, text.encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{out / PAIRS_FILE}: cannot be written: {exc.strerror or exc}") from None
    return len(rows), left_out
