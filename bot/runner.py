"""One job, from settings to a report: build the job's context once, route the work, close it.

The context (:class:`~bot.context.JobContext`) holds the settings, with the repository file
once read, and builds the GitHub client, the store and the chat models on first use with the
builders of :mod:`bot.factory`, named here so that tests can replace them. The runner routes a
webhook event to its pipeline (:func:`bot.gate.run`, :func:`bot.audit.run`) or to the comment
commands (:func:`bot.commands.comment.run_comment`), and does nothing else: each pipeline owns
its whole sequence and returns a :class:`~bot.report.RunReport`. Nothing here prints or exits:
the CLI does.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from bot import audit, dataset, gate
from bot.commands.comment import run_comment
from bot.config import Settings
from bot.context import JobContext
from bot.errors import ConfigError
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
from bot.report import RunReport, skipped_report

__all__ = ["job_context", "run_backlog", "run_dataset", "run_event", "run_pull"]


def job_context(settings: Settings) -> JobContext:
    """The context of one job over ``settings``, with this module's builders (looked up when
    the job starts, so a test's fakes apply)."""
    return JobContext.build(
        settings,
        make_github=make_github,
        make_store=make_store,
        make_model=make_chat_model,
        model_concurrency=model_concurrency,
    )


def run_event(settings: Settings) -> RunReport:
    """Handle the webhook event named in the settings (``GITHUB_EVENT_NAME``/``_PATH``).

    ``issues`` goes to the gate, ``pull_request_target`` (and ``pull_request``) to the audit,
    both with the repository file read from the payload's default branch; ``issue_comment`` to
    the comment commands; ``schedule`` runs ``backlog --retry-errors`` on
    ``GITHUB_REPOSITORY``; anything else is skipped with its reason.

    Raises:
        ConfigError: no event name or path, no token when writing, or (a ``schedule`` event)
            no ``GITHUB_REPOSITORY``.
        EventError: the payload is missing or malformed.
        GitHubError / StoreError: a read or write failed.
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
            return gate.run(ctx.with_repository_file(repo, None), Backlog(repo, retry_errors=True))
        where = routed.repository
        ctx = ctx.with_repository_file(where.full_name, where.default_branch)
        if isinstance(routed, IssuesEvent):
            return gate.run(ctx, routed)
        return audit.run(ctx, routed.pull_ref(), skip_if_audited=True)


def run_pull(
    settings: Settings, repo: str, number: int, *, requested_range: str | None = None
) -> RunReport:
    """``triage-bot audit``: audit an open pull request by hand, its selected changed ranges or
    ``requested_range``, with the settings as given (the repository file is not read).

    Raises:
        ConfigError: no token when writing, or the pull request is not open.
        InvalidRange: ``requested_range`` breaks a rule.
        GitHubError / StoreError: a read or write failed.
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
    """``triage-bot backlog``: the gate over the open issues of ``repo`` that
    :func:`bot.gate.backlog.select_backlog` chooses, at most ``limit``, with the repository
    file read from its default branch; ``on_progress(done, total)`` after each issue.

    Raises:
        ConfigError: no token when writing.
        GitHubError: the issue list, an issue's events or a label write failed.
        StoreError: the store cannot be opened, read or written.
    """
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
) -> dataset.DatasetReport:
    """``triage-bot dataset``: ``repo``'s closed issues labelled by what its maintainers did,
    appended to ``out`` (:func:`bot.dataset.run_dataset`), through a patient GitHub client
    that waits through ``sleep`` for a rate limit's reset, with the ``dataset:`` labels and
    bots and the gate labels of the repository file read from the default branch, and the
    bot's login (``bot-login``).

    Raises:
        ConfigError: no token, the repository file is broken, or ``out`` is not the
            command's or cannot be written (checked before any request).
        GitHubError: a read failed after the client's retries and waits.
    """
    files = dataset.DatasetFiles(out, repo)  # refused before any request to GitHub
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
        )
