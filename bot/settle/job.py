"""Settling in a job: the scheduled run's part (after the backlog) and ``triage-bot settle``."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from bot.clients.github_port import SettlePort
from bot.context import JobContext, store_outlives_job
from bot.errors import BotError, ConfigError
from bot.gate.labels import gate_labels
from bot.history.protocol import HistoryStore
from bot.neutralise import log_value
from bot.run_report import RunReport
from bot.settle.budget import Budget
from bot.settle.pulls import PullsReport, settle_pulls
from bot.settle.settling import PullsStep, SettleReport, settle_repo

__all__ = [
    "NOTHING_TO_SETTLE",
    "NO_LIVE_RECORD",
    "recorded_repo",
    "settle_github",
    "settle_in_job",
    "settle_scheduled",
]

NO_LIVE_RECORD = "no live record: the store does not outlive the job"

NOTHING_TO_SETTLE = (
    "nothing to settle: the store holds no gate decision or reported defect of this repository"
)

_RECORDED_SQL = (
    "select distinct repo from gate_decisions where lower(repo) = lower(?) "
    "union select distinct repo from audit_defects where lower(repo) = lower(?)"
)


def recorded_repo(store: HistoryStore, repo: str) -> bool:
    """Whether the store holds a gate decision or a reported defect of ``repo``.

    Raises:
        ConfigError: it holds them under another case of the name (GitHub's names ignore
            case, the store's do not: settling that name would read the repository for
            nothing).
        StoreError: the read failed.
    """
    names = sorted({str(name) for (name,) in store.fetch(_RECORDED_SQL, [repo, repo])})
    if repo in names or not names:
        return repo in names
    raise ConfigError(
        f"the store records {log_value(repo)} as {log_value(names[0])}: give --repo {names[0]}"
    )


def settle_github(ctx: JobContext) -> SettlePort:
    """The job's GitHub client as settling and the index backfill read it."""
    github = ctx.github()
    if not isinstance(github, SettlePort):
        raise ConfigError("settling needs a GitHub client that reads timelines and edit histories")
    return github


def settle_in_job(
    ctx: JobContext,
    repo: str,
    budget: Budget,
    *,
    since: datetime | None = None,
    pulls: PullsStep | None = None,
) -> SettleReport:
    """Settle ``repo`` with the job's GitHub client and store (writable), within ``budget``.

    Raises:
        ConfigError: no token, or two gate labels share a name.
        GitHubError: other than a rate limit; StoreError.
    """
    settings = ctx.settings
    github = settle_github(ctx)
    login = settings.bot_login
    if login is None:
        budget.spend(1)  # the client asks GitHub once (GraphQL viewer)
        login = ctx.github().login()
    store = ctx.store()
    if pulls is None:
        start = since.isoformat() if since else None

        def pulls(left: Budget) -> PullsReport:
            return settle_pulls(ctx.github(), store, repo, left, since=start, bot_login=login)

    return settle_repo(
        github,
        store,
        repo,
        budget,
        since=since,
        gate=gate_labels(settings),
        bot_login=login,
        max_body_chars=settings.max_body_chars,
        pulls=pulls,
    )


def settle_scheduled(
    ctx: JobContext, repo: str, report: RunReport, *, pulls: PullsStep | None = None
) -> RunReport:
    """The scheduled run's report with settling after it, within ``settle-budget`` requests.

    Settling's own failure is a warning: what the run did before it stands, and the cursor
    keeps what was settled.
    """
    settings = ctx.settings
    if settings.settle_budget == 0:
        return report
    if not store_outlives_job(settings):
        return _with(report, [f"settle:   {NO_LIVE_RECORD}"], f"{NO_LIVE_RECORD}.\n")
    if settings.dry_run:
        line = "settle:   not on a dry run (it writes the store)"
        return _with(report, [line], "Settling: not on a dry run.\n")
    try:
        settled = settle_in_job(ctx, repo, Budget(settings.settle_budget), pulls=pulls)
    except BotError as exc:
        warning = f"settling stopped: {exc}"
        done = _with(report, [f"settle:   {log_value(warning, max_chars=500)}"], "")
        done.warnings.append(warning)
        return done
    return _with(report, settled.lines(), settled.summary())


def _with(report: RunReport, lines: list[str], summary: str) -> RunReport:
    text = report.text + "".join(f"\n{line}" for line in lines)
    summary = report.summary + "\n" + summary
    return replace(report, text=text, summary=summary, warnings=list(report.warnings))
