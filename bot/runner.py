"""One job: build its context, route the work to a pipeline or the commands, close it."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from bot import audit, dataset, gate
from bot.commands.comment import run_comment
from bot.config import Settings
from bot.context import JobContext, TitleEncoderLoader, store_outlives_job
from bot.dataset.duplicate_run import DuplicatesProgress, DuplicatesReport, run_duplicates
from bot.dataset.duplicates import POOL_FILE
from bot.errors import ConfigError, ModelError, StoreError
from bot.events import (
    REPO_PATTERN,
    IssueCommentEvent,
    IssuesEvent,
    Scheduled,
    Skip,
    load_payload,
    route_event,
)
from bot.factory import make_chat_model, make_github, make_store, model_concurrency
from bot.gate.backlog import BACKLOG_LIMIT, Backlog
from bot.gate.labels import gate_labels
from bot.repo_file import TypeLabels
from bot.run_report import RunReport, skipped_report
from bot.settle.backfill import IndexReport, backfill_index
from bot.settle.budget import Budget
from bot.settle.job import (
    NOTHING_TO_SETTLE,
    recorded_repo,
    settle_github,
    settle_in_job,
    settle_scheduled,
)
from bot.settle.settling import SettleReport
from bot.type_guess import TypeClassifier, TypeModelLoader

if TYPE_CHECKING:
    from bot.duplicates.title_stage import Encoder
from bot.types.model_file import type_model_from_text

__all__ = [
    "job_context",
    "load_type_model",
    "run_backlog",
    "run_dataset",
    "run_duplicates_dataset",
    "run_event",
    "run_index",
    "run_pull",
    "run_settle",
]


def _type_model(data: bytes, source: str) -> TypeClassifier:
    return type_model_from_text(data, source=source)


load_type_model: TypeModelLoader | None = _type_model
"""The type model loader jobs are built with; ``None``: a configured model is a warning."""


def _title_encoder(settings: Settings) -> Encoder:
    from bot.duplicates.minilm import title_encoder  # the tokenizer and weights: when ranking

    return title_encoder(settings.models_dir)


load_titles: TitleEncoderLoader | None = _title_encoder
"""The duplicate ranking's title model loader jobs are built with; ``None``: words only."""


def job_context(settings: Settings) -> JobContext:
    """The context of one job, with this module's builders (looked up now, so fakes apply)."""
    return JobContext.build(
        settings,
        make_github=make_github,
        make_store=make_store,
        make_model=make_chat_model,
        model_concurrency=model_concurrency,
        load_type_model=load_type_model,
        load_titles=load_titles,
    )


def run_event(settings: Settings) -> RunReport:
    """Handle the webhook event the settings name; ``schedule`` runs the backlog with retries,
    then settles the live record within ``settle-budget`` requests.

    Raises :exc:`ConfigError` for a missing event name, path, token or (``schedule``)
    repository, :exc:`EventError` for a bad payload, GitHub and store errors as they come.
    """
    if not settings.event_name:
        raise ConfigError("no event name: set GITHUB_EVENT_NAME or pass --event-name")
    if settings.event_path is None:
        raise ConfigError("no event payload: set GITHUB_EVENT_PATH or pass --event-path")
    routed = route_event(settings.event_name, load_payload(settings.event_path))
    if isinstance(routed, Skip):
        return skipped_report(routed.reason)
    with job_context(settings) as ctx:
        if isinstance(routed, IssueCommentEvent):
            return run_comment(routed, ctx)
        if isinstance(routed, Scheduled):
            repo = settings.repository or ""
            if not REPO_PATTERN.match(repo):
                raise ConfigError(
                    f"a schedule event needs GITHUB_REPOSITORY as OWNER/NAME, got {repo!r}"
                )
            ctx = ctx.with_repository_file(repo, None)
            return settle_scheduled(ctx, repo, gate.run(ctx, Backlog(repo, retry_errors=True)))
        where = routed.repository
        ctx = ctx.with_repository_file(where.full_name, where.default_branch)
        if isinstance(routed, IssuesEvent):
            return gate.run(ctx, routed)
        return audit.run(ctx, routed.pull_ref(), skip_if_audited=True)


def run_pull(
    settings: Settings, repo: str, number: int, *, requested_range: str | None = None
) -> RunReport:
    """``triage-bot audit``: audit an open pull request; the repository file is not read.

    Raises :exc:`ConfigError` if the pull request is closed, :exc:`InvalidRange` for a bad range.
    """
    with job_context(settings) as ctx:
        pull = ctx.github().pull(repo, number)
        if pull.state != "open":
            raise ConfigError(f"{repo}#{number} is {pull.state}; only open PRs are audited")
        return audit.run(ctx, pull, requested_range=requested_range)


def run_backlog(
    settings: Settings,
    repo: str,
    *,
    limit: int = BACKLOG_LIMIT,
    retry_errors: bool = False,
    on_progress: Callable[[int, int], None] = lambda done, total: None,
) -> RunReport:
    """``triage-bot backlog``: the gate over at most ``limit`` open issues of ``repo``."""
    with job_context(settings) as ctx:
        work = Backlog(repo, limit=limit, retry_errors=retry_errors, on_progress=on_progress)
        return gate.run(ctx.with_repository_file(repo, None), work)


def run_dataset(
    settings: Settings,
    repo: str,
    out: Path,
    *,
    since: datetime | None = None,
    limit: int | None = None,
    on_progress: Callable[[dataset.DatasetProgress], None] | None = None,
    sleep: Callable[[float], None] | None = None,
    types: bool = False,
) -> dataset.DatasetReport:
    """``triage-bot dataset``: append ``repo``'s labelled closed issues to ``out``.

    ``types``: type rows, by the repository file's ``types.labels``. The GitHub client waits
    out rate limits through ``sleep``. Raises :exc:`ConfigError` for a broken repository file
    or an unusable ``out``, before any request.
    """
    # refused before any request to GitHub
    files = dataset.DatasetFiles(out, repo, rows="types" if types else "eval")
    github = make_github(settings, sleep=sleep)
    with JobContext.build(
        settings,
        make_github=lambda settings, **_: github,
        make_store=make_store,
        make_model=make_chat_model,
        model_concurrency=model_concurrency,
    ) as ctx:
        with_file = ctx.with_repository_file(repo, None).settings
        file = with_file.repo_file
        return dataset.run_dataset(
            github,
            repo,
            out,
            config=file.dataset if file is not None else None,
            gate=gate_labels(with_file),
            bot_login=with_file.bot_login,
            since=since,
            limit=limit,
            on_progress=on_progress,
            files=files,
            types=(file.types.labels if file is not None else TypeLabels()) if types else None,
        )


def run_duplicates_dataset(
    settings: Settings,
    repo: str,
    out: Path,
    *,
    limit: int | None = None,
    on_progress: Callable[[DuplicatesProgress], None] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> DuplicatesReport:
    """``triage-bot dataset --duplicates``: ``repo``'s pool and duplicate pairs into the folder
    ``out``; the GitHub client waits out rate limits through ``sleep``.

    Raises :exc:`ConfigError` for an unusable ``out``, before any request.
    """
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: not a folder (with --duplicates it names one)")
    files = dataset.DatasetFiles(out / POOL_FILE, repo, rows="pool")  # refused before a request
    return run_duplicates(
        make_github(settings, sleep=sleep),
        repo,
        out,
        limit=limit,
        on_progress=on_progress,
        files=files,
    )


def _refuse_a_persons_login(login: str | None) -> None:
    """From a shell the token is usually a maintainer's own: GitHub's ``viewer`` then names
    that maintainer, whose labels and questions settling would leave out as the bot's, and
    settled outcomes are final. An app's login (``NAME[bot]``) is the bot's.

    Raises:
        ConfigError: ``login`` is a person's (or unknown).
    """
    if login is not None and login.lower().endswith("[bot]"):
        return
    who = login or "unknown"
    raise ConfigError(
        f"the token is {who}'s, not an app's: settling would take {who}'s labels and comments "
        "for the bot's own and leave them out, and its outcomes are final. Set "
        "TRIAGE_BOT_LOGIN to the login the bot writes as (github-actions[bot] for the Actions "
        f"token, NAME[bot] for an app's; {who} if the bot itself runs with this token)"
    )


def run_settle(
    settings: Settings, repo: str, *, budget: int, since: datetime | None = None
) -> SettleReport:
    """``triage-bot settle``: settle ``repo``'s decisions within ``budget`` requests, from
    ``since`` (``None``: where the last run stopped).

    A repository the store holds nothing of is not read (:data:`NOTHING_TO_SETTLE`).

    Raises :exc:`ConfigError` for no token, a person's token with no ``bot-login`` set, a
    broken repository file or a repository the store names in another case; GitHub and store
    errors as they come (what was settled before stays, and the cursor with it).
    """
    if not settings.github_token:
        raise ConfigError(
            "no GitHub token: settling reads the repository's history; set GITHUB_TOKEN"
        )
    with job_context(settings) as ctx:
        if not recorded_repo(ctx.store(), repo):
            return SettleReport(repo, skipped=NOTHING_TO_SETTLE)
        if settings.bot_login is None:
            _refuse_a_persons_login(ctx.github().login())
        return settle_in_job(
            ctx.with_repository_file(repo, None), repo, Budget(budget), since=since
        )


NO_INDEX = (
    "no index kept: the store does not outlive the job; the duplicate index needs PostgreSQL "
    "or a SQLite file the runner keeps (set TRIAGE_DB)"
)


def run_index(
    settings: Settings, repo: str, *, budget: int, since: datetime | None = None
) -> IndexReport:
    """``triage-bot index``: backfill the store's duplicate index with ``repo``'s issues of
    every state within ``budget`` requests, from ``since`` (``None``: where the last run
    stopped). A store that does not outlive the job is not written (:data:`NO_INDEX`).

    Raises :exc:`ConfigError` on a dry run (the index is a write) or without a token; GitHub
    and store errors as they come (what was indexed stays, and the cursor with it).
    """
    if settings.dry_run:
        raise ConfigError("index writes the store's duplicate index: not on a dry run")
    if not store_outlives_job(settings):
        return IndexReport(repo, skipped=NO_INDEX)
    with job_context(settings) as ctx:
        store = ctx.store()
        report = backfill_index(settle_github(ctx), store, repo, Budget(budget), since=since)
        encoder, report.no_titles = ctx.title_encoder()
        if encoder is not None:
            from bot.duplicates.title_stage import TitleStage  # numpy: only here

            try:
                report.vectors = TitleStage(store, repo, encoder, keep=True).fill()
            except (StoreError, ModelError) as exc:  # the index is written; rankings compute
                report.vectors_stopped = str(exc)  # what is missing
        return report
