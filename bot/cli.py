"""The ``triage-bot`` command line: with bot/action.py, the only code that talks to people.

A :class:`~bot.errors.BotError` becomes one ``error:`` line and its exit code
(:mod:`bot.errors`); a ``validator-error`` label or a rejected audit is a done run (exit 0).
Pipeline imports sit inside the commands so ``--help`` stays fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import click

from bot.setting_spec import SettingSpec, readme_default
from bot.settings_table import SETTINGS

if TYPE_CHECKING:
    from bot.config import Settings

__all__ = ["main"]

F = TypeVar("F", bound=Callable[..., Any])


_URL_SECRETS = "triage-bot.url-secrets"
"""The click context ``meta`` key of the secrets already handed to the runner's masking."""

REDACT_MIN_CHARS = 4
"""A shorter URL secret is not redacted (it would star out common text); none is ever shown."""


def _token_forms(raw: str) -> set[str]:
    # As set, stripped (what is sent), and each line stripped.
    forms = {raw, raw.strip(), *(line.strip() for line in raw.splitlines())}
    return {form for form in forms if len(form) >= 8}


def _secret_values() -> set[str]:
    # Every variable a secret may be given by, whether or not it wins.
    return {
        form
        for spec in SETTINGS
        if spec.secret
        for var in spec.env_vars
        for form in _token_forms(os.environ.get(var, ""))
    }


def _url_secrets(flags: dict[str, Any]) -> set[str]:
    # Every URL a setting is given, by flag or variable, whether or not it wins.
    from bot.urls import read_url

    given = [str(v) for v in flags.values() if v is not None]
    given += [os.environ.get(var, "") for spec in SETTINGS for var in spec.env_vars]
    urls = [value for value in given if "://" in value or "=" in value]  # or a keyword string
    return {secret for value in urls for secret in read_url(value).secrets}


def _register_secrets(flags: dict[str, Any]) -> None:
    """Keep the URL secrets for :func:`_redact`; in Actions, mask every secret before printing."""
    from bot.neutralise import command_data

    context = click.get_current_context(silent=True)
    known: set[str] = context.meta.setdefault(_URL_SECRETS, set()) if context else set()
    new_urls = _url_secrets(flags) - known
    new_values = _secret_values() - known - new_urls
    known |= new_urls | new_values
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for secret in sorted(new_urls) + sorted(new_values):
            click.echo(f"::add-mask::{command_data(secret)}")


def _redact(text: str) -> str:
    """``text`` without the secret settings' values or the configured URLs' secrets."""
    from bot.urls import redact

    context = click.get_current_context(silent=True)
    secrets: set[str] = context.meta.get(_URL_SECRETS, set()) if context else set()
    text = redact(text, _secret_values())
    return redact(text, secrets, min_chars=REDACT_MIN_CHARS)


def _fail(exc: Exception) -> None:
    from bot.errors import BotError
    from bot.neutralise import log_text

    code = exc.exit_code if isinstance(exc, BotError) else 1
    click.echo(f"triage-bot: error: {log_text(_redact(str(exc)))}", err=True)
    sys.exit(code)


def setting_options(command: str) -> Callable[[F], F]:
    """The settings table's flags for ``command``; an unset flag passes ``None`` to resolve."""

    def add(fn: F) -> F:
        for spec in reversed([s for s in SETTINGS if s.flag and command in s.commands]):
            fn = _setting_option(spec)(fn)
        return fn

    return add


def _setting_option(spec: SettingSpec) -> Callable[[F], F]:
    # No envvar=: click would type-convert variables and keep blanks; Settings.resolve reads them.
    assert spec.flag is not None  # setting_options passes flags only
    text = spec.help.replace("`", "")
    shown = readme_default(spec).replace("`", "")
    where = f"env {spec.env}" if shown == "–" else f"env {spec.env}; default {shown}"
    help_text = f"{text[0].upper()}{text[1:]} [{where}]."
    if spec.type is bool:
        switch = f"{spec.flag}/--no-{spec.flag.removeprefix('--')}"
        return click.option(switch, spec.name, default=None, help=help_text)
    return click.option(spec.flag, spec.name, type=_click_type(spec), help=help_text)


def _click_type(spec: SettingSpec) -> click.ParamType[Any, Any]:
    if spec.choices:
        return click.Choice(spec.choices)
    if spec.type is Path:  # every path flag names a file
        return click.Path(path_type=Path, dir_okay=False)
    if spec.type is str:
        return click.STRING
    if spec.type is int:
        return click.INT
    if spec.type is float:
        return click.FLOAT
    raise TypeError(f"setting {spec.name}: no CLI flag for values of type {spec.type}")


def _settings(flags: dict[str, Any]) -> Settings:
    from bot.config import Settings

    _register_secrets(flags)
    names = {spec.name for spec in SETTINGS}
    return Settings.resolve({k: v for k, v in flags.items() if k in names}, os.environ)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="triage-bot")
def main() -> None:
    """triage-bot: gate issues and audit pull requests with a local LLM."""


def _print_walled(text: str) -> None:
    # Redacted; in Actions inside ::stop-commands::, a second wall after each line's escaping.
    import secrets

    in_actions = os.environ.get("GITHUB_ACTIONS") == "true"
    resume = secrets.token_hex(16)
    if in_actions:
        click.echo(f"::stop-commands::{resume}")
    click.echo(_redact(text))
    if in_actions:
        click.echo(f"::{resume}::")


def _emit(report: Any, settings: Any) -> None:
    from bot.action import write_outputs, write_summary
    from bot.neutralise import command_data, log_text

    in_actions = os.environ.get("GITHUB_ACTIONS") == "true"
    _print_walled(report.text)
    for warning in report.warnings:
        # A workflow command annotates the run in GitHub's UI; plain stderr elsewhere.
        message = log_text(_redact(warning))
        if in_actions:
            click.echo(f"::warning title=triage-bot::{command_data(message)}")
        else:
            click.echo(f"triage-bot: warning: {message}", err=True)
    write_summary(settings.step_summary_path, _redact(report.summary))
    write_outputs(settings.output_path, report.outputs)


def _check_repo(repo: str) -> None:
    from bot.errors import ConfigError
    from bot.events import REPO_PATTERN

    if not REPO_PATTERN.match(repo):
        raise ConfigError(f"--repo must be OWNER/NAME, got {repo!r}")


def _guarded(job: Callable[[], None]) -> None:
    from bot.errors import BotError

    try:
        job()
    except BotError as exc:
        _fail(exc)


@main.command()
@setting_options("run")
def run(**flags: Any) -> None:
    """Handle the webhook event this workflow run was triggered by.

    `issues` opened/edited/reopened runs the issue gate (edited only when the title or body
    changed); `pull_request_target`/`pull_request` opened/synchronize/reopened/ready_for_review
    runs the PR audit (drafts are skipped); `issue_comment` created runs a maintainer command;
    `schedule` re-judges the validator-error issues of GITHUB_REPOSITORY (backlog
    --retry-errors), then settles its live record within settle-budget requests; every other
    event is skipped with a one-line reason.
    """

    def job() -> None:
        from bot.factory import preload_chat_model

        settings = _settings(flags)
        preload = preload_chat_model(settings)
        try:
            from bot.runner import run_event

            report = run_event(settings)
        finally:
            # while llama.cpp loads, stdout and stderr go to the null device (both file
            # descriptors and sys.stdout/err): nothing is printed before the load has ended
            if preload is not None:
                preload.join()
        _emit(report, settings)

    _guarded(job)


@main.command()
@click.option("--repo", required=True, help="Repository as OWNER/NAME.")
@click.option("--pr", "number", required=True, type=click.IntRange(min=1), help="PR number.")
@click.option(
    "--range",
    "requested_range",
    help="Audit only PATH:START-END (≤ 200 lines of a changed file), e.g. src/app.py:10-80.",
)
@setting_options("audit")
def audit(repo: str, number: int, requested_range: str | None, **flags: Any) -> None:
    """Audit a pull request by hand: selected changed ranges, or one explicit range."""

    def job() -> None:
        from bot.runner import run_pull

        settings = _settings(flags)
        _check_repo(repo)
        _emit(run_pull(settings, repo, number, requested_range=requested_range), settings)

    _guarded(job)


UNBOUNDED_WIDTH = 100_000
"""The width a table is measured in on a pipe or in a CI log."""


def store_options(fn: F) -> F:
    """``--repo`` and ``--json`` for the read-only store commands."""
    fn = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(fn)
    fn = click.option("--repo", required=True, help="Repository as OWNER/NAME.")(fn)
    return fn


def _show(title: str, columns: Sequence[str], cells: Sequence[Sequence[str]]) -> None:
    # Cells are plain, log-safe text; nothing is cut: without a terminal, natural width.
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    from bot.neutralise import log_value

    table = Table(title=Text(log_value(title)))
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in cells:
        table.add_row(*(Text(log_value(cell)) for cell in row))
    console = Console()
    if not console.is_terminal:
        natural = Measurement.get(console, console.options.update_width(UNBOUNDED_WIDTH), table)
        console = Console(width=natural.maximum)
    console.print(table)


def _store_rows(db_path: str | None, read: Callable[[Any], list[Any]]) -> list[Any]:
    from bot.factory import make_store

    store = make_store(_settings({"db_path": db_path}), read_only=True)
    try:
        return read(store)
    finally:
        store.close()


@main.command()
@store_options
@setting_options("history")
@click.option("--limit", default=10, type=click.IntRange(1, 1000), help="How many rows.")
def history(repo: str, db_path: str | None, as_json: bool, limit: int) -> None:
    """The last accepted audits of a repository (newest first)."""

    def job() -> None:
        from bot.neutralise import json_line

        _check_repo(repo)
        rows = _store_rows(db_path, lambda store: store.audits(repo, limit=limit))
        if as_json:
            click.echo(json_line([{k: v for k, v in r.items() if k != "markdown"} for r in rows]))
            return
        cells = [
            (str(r["id"]), r["verdict"], r["confidence"],
             f"{r['path']}:{r['line_start']}-{r['line_end']}",
             "yes" if r["retried"] else "no", r["created_at"])
            for r in rows
        ]  # fmt: skip
        columns = ("#", "verdict", "confidence", "range", "retry", "UTC time")
        _show(f"Accepted audits of {repo}", columns, cells)

    _guarded(job)


@main.command()
@store_options
@setting_options("stats")
@click.option("--weeks", default=8, type=click.IntRange(1, 52), help="How many weeks back.")
@click.option("--gate", is_flag=True, help="Gate decisions instead of accepted audits.")
@click.option(
    "--record",
    is_flag=True,
    help="The live record instead of weekly figures: per model, prompt version (and policy, "
    "with --gate) the settled decisions, agreement and precision, or the defects reported and "
    "the share acted on; each share with its count and 95% interval.",
)
def stats(
    repo: str,
    db_path: str | None,
    as_json: bool,
    weeks: int,
    gate: bool,
    record: bool,
    **flags: Any,
) -> None:
    """Weekly statistics of accepted audits (verdict shares, retry rate, confidence mix), or
    with --gate of gate decisions (verdict mix, errors by kind, p50/p95 model time, versions);
    with --record, the live record.
    """

    def job() -> None:
        from bot.audit.stats import stats_cells, stats_columns, weekly_stats
        from bot.neutralise import json_line

        _check_repo(repo)
        if record:
            _record_stats(repo, _settings({"db_path": db_path, **flags}), as_json, gate)
            return
        if gate:
            _gate_stats(repo, db_path, as_json, weeks)
            return
        rows = _store_rows(db_path, lambda store: weekly_stats(store, repo, weeks))
        if as_json:
            click.echo(json_line([s.as_dict() for s in rows]))
            return
        cells = [stats_cells(s, short=True, text=str) for s in rows]
        columns = stats_columns(short=True)
        _show(f"Accepted audits of {repo}, last {weeks} week(s)", columns, cells)

    _guarded(job)


def _record_stats(repo: str, settings: Settings, as_json: bool, gate: bool) -> None:
    from bot.audit.stats import NO_DEFECT_RECORD, defect_cells, defect_columns, defect_dict
    from bot.factory import make_store
    from bot.gate.stats import (
        NO_LIVE_RECORD,
        duplicate_record_line,
        record_cells,
        record_columns,
        record_dict,
    )
    from bot.history.record import defect_records, gate_records
    from bot.neutralise import log_value

    aliases: dict[str, str] = {}  # the CLI reads no repository file: records by model name
    bound, acted = settings.comment_min_precision, settings.line_comments_min_acted
    store = make_store(settings, read_only=True)
    try:
        gates = gate_records(store, repo, aliases) if gate else []
        defects = [] if gate else defect_records(store, repo, aliases)
        duplicates = duplicate_record_line(store, repo, bound) if gate else ""
    finally:
        store.close()
    if as_json:
        from bot.neutralise import json_line

        rows = (
            [record_dict(r, min_precision=bound) for r in gates]
            if gate
            else [defect_dict(r, min_acted=acted) for r in defects]
        )
        click.echo(json_line(rows))
        return
    if gate:
        if not gates:
            click.echo(NO_LIVE_RECORD)
        else:
            cells = [record_cells(r, min_precision=bound, text=str) for r in gates]
            _show(f"Live record of {repo}: gate decisions", record_columns(), cells)
        click.echo(log_value(duplicates))
        return
    if not defects:
        click.echo(NO_DEFECT_RECORD)
        return
    cells = [defect_cells(r, min_acted=acted, text=str) for r in defects]
    _show(f"Live record of {repo}: reported defects", defect_columns(), cells)


def _gate_stats(repo: str, db_path: str | None, as_json: bool, weeks: int) -> None:
    from bot.gate.stats import (
        gate_cells,
        gate_columns,
        gate_health,
        version_cells,
        version_columns,
    )
    from bot.neutralise import json_line

    (health,) = _store_rows(db_path, lambda store: [gate_health(store, repo, weeks)])
    if as_json:
        click.echo(json_line([w.as_dict() for w in health.weeks]))
        return
    cells = [gate_cells(w, text=str) for w in health.weeks]
    _show(f"Gate decisions of {repo}, last {weeks} week(s)", gate_columns(), cells)
    if health.versions:
        per_version = [version_cells(v, text=str) for v in health.versions]
        title = "Per model and prompt version, same weeks (share of its decisions)"
        _show(title, version_columns(), per_version)


@main.command()
@click.option("--repo", required=True, help="Repository as OWNER/NAME.")
@click.option(
    "--limit",
    default=50,  # gate.backlog.BACKLOG_LIMIT (a test keeps them equal; the CLI starts without it)
    show_default=True,
    type=click.IntRange(1, 10_000),
    help="Most issues judged.",
)
@click.option(
    "--retry-errors",
    is_flag=True,
    help="Re-judge the open issues whose last decision was validator-error (after an outage), "
    "oldest first; a validator-error label a maintainer set by hand is left alone.",
)
@setting_options("backlog")
def backlog(repo: str, limit: int, retry_errors: bool, **flags: Any) -> None:
    """Run the gate over open issues that carry no gate label (resumable).

    With --retry-errors, over those whose last decision was validator-error instead.
    """

    def job() -> None:
        from rich.progress import Progress

        from bot.runner import run_backlog

        settings = _settings(flags)
        _check_repo(repo)
        with Progress(transient=True) as progress:
            task = progress.add_task("gating issues", total=None)
            report = run_backlog(
                settings,
                repo,
                limit=limit,
                retry_errors=retry_errors,
                on_progress=lambda done, total: progress.update(task, completed=done, total=total),
            )
        _emit(report, settings)

    _guarded(job)


def _walk_options(budget: int) -> Callable[[F], F]:
    """``--repo``, ``--since`` and ``--budget`` of the commands that walk updated issues."""

    def wrap(command: F) -> F:
        options = [
            click.option("--repo", required=True, help="Repository as OWNER/NAME."),
            click.option(
                "--since",
                type=click.DateTime(formats=["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"]),
                help="Start at issues updated on or after this date (UTC) instead of where "
                "the last run stopped.",
            ),
            click.option(
                "--budget",
                default=budget,
                show_default=True,
                type=click.IntRange(1, 100_000),
                help="Most GitHub requests; past it the run stops, and the same command resumes.",
            ),
        ]
        for option in reversed(options):
            command = option(command)
        return command

    return wrap


def _walk_start(since: datetime | None) -> datetime | None:
    """``--since`` as UTC; :exc:`ConfigError` when it is in the future."""
    from bot.errors import ConfigError

    start = since.replace(tzinfo=UTC) if since else None
    if start is not None and start > datetime.now(UTC):
        raise ConfigError(f"--since {start:%Y-%m-%d %H:%M:%S} UTC is in the future")
    return start


SETTLE_BUDGET = 5000
"""Requests ``triage-bot settle`` may spend by default: a backfill from a shell, not the hourly
run's share of the token."""


@main.command()
@_walk_options(SETTLE_BUDGET)
@setting_options("settle")
def settle(repo: str, since: datetime | None, budget: int, **flags: Any) -> None:
    """Settle the bot's gate decisions and reported defects on REPO from what happened after
    them (backfill).

    Reads the issues updated since the last run (or --since), and for each whose latest
    decision is not yet settled, its timeline and edit history: agreement when the
    maintainers' actions (the dataset rules, the bot's own labels and comments left out) or
    the author's answer to the bot's comment match the verdict, disagreement when they do not,
    an override when a maintainer replaced or removed the bot's label on unchanged text, and
    unsettled, counted by reason, when the rules cannot tell. Then, with what is left of the
    budget, the closed pull requests with defects the audit reported: acted on when a later
    commit changed the cited line. Resumable and idempotent; the schedule run does the same
    within settle-budget requests (docs/live-record.md).
    """

    def job() -> None:
        from bot.runner import run_settle

        settings = _settings(flags)
        _check_repo(repo)
        report = run_settle(settings, repo, budget=budget, since=_walk_start(since))
        _print_walled("\n".join(report.lines()))

    _guarded(job)


INDEX_BUDGET = 5000
"""Requests ``triage-bot index`` may spend by default: 500,000 issues at 100 a page."""


@main.command()
@_walk_options(INDEX_BUDGET)
@setting_options("index")
def index(repo: str, since: datetime | None, budget: int, **flags: Any) -> None:
    """Backfill the store's duplicate index with REPO's issues of every state (resumable).

    Reads the issues updated since the last run (or --since), least recently updated first,
    100 a page, and writes each one's title, body (its first 4,000 characters) and opening
    time to the index the duplicate search reads; an issue now in another repository is
    dropped. One request a page, nothing else; it stops at --budget or GitHub's rate limit,
    keeping what is written, and the same command resumes. Needs a store that outlives the
    job: PostgreSQL, or a SQLite file the runner keeps.
    """

    def job() -> None:
        from bot.runner import run_index

        settings = _settings(flags)
        _check_repo(repo)
        report = run_index(settings, repo, budget=budget, since=_walk_start(since))
        _print_walled("\n".join(report.lines()))

    _guarded(job)


@main.command()
@setting_options("doctor")
def doctor(**flags: Any) -> None:
    """Check this runner: Python, the model (Ollama and its models, or the GGUF), the store
    (reachable, migrated) and the GitHub token; one ok/warn/FAIL line each, exit 1 on a FAIL
    (a store no job has migrated yet is a warning: the first job migrates it)."""
    from bot.doctor import run_checks
    from bot.neutralise import log_value

    def job() -> None:
        checks = run_checks(_settings(flags))
        for check in checks:
            click.echo(log_value(_redact(check.line())))
        if not all(check.ok for check in checks):
            sys.exit(1)

    _guarded(job)


replies_option = click.option(
    "--replies",
    "replies_path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="Judge each issue on its recorded reply (JSONL {id, reply}) instead of calling a model.",
)


@main.command(name="eval")
@click.option(
    "--issues",
    "issues_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("evals/issues.jsonl"),
    show_default=True,
    help="Labelled issues.",
)
@click.option(
    "--segments",
    "segments_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("evals/segments.jsonl"),
    show_default=True,
    help="Labelled segments.",
)
@click.option(
    "--only",
    type=click.Choice(["gate", "audit", "both", "types", "duplicates"]),
    default="both",
    help="What to measure; types: a type model (--types-model) on type rows (--issues); "
    "duplicates: the duplicate ranking on --pool and --pairs.",
)
@click.option(
    "--pool",
    type=click.Path(path_type=Path, dir_okay=False),
    help="With --only duplicates: the reports (JSONL of id, title, body, created_at).",
)
@click.option(
    "--pairs",
    type=click.Path(path_type=Path, dir_okay=False),
    help="With --only duplicates: the resolved pairs (JSONL of id, dup_of).",
)
@click.option(
    "--earlier-only",
    is_flag=True,
    help="With --only duplicates: rank each report against those created before it.",
)
@click.option(
    "--min-precision",
    type=click.FloatRange(0.5, 1.0),
    default=0.9,
    show_default=True,
    help="With --only duplicates: the precision the statement's threshold must reach.",
)
@click.option(
    "--words-only",
    is_flag=True,
    help="With --only duplicates: rank without the title model (its words only).",
)
@click.option(
    "--split",
    is_flag=True,
    help="Report the development set's fixed halves (tune, check) beside the whole.",
)
@click.option("--limit", type=click.IntRange(min=1), help="Use the first N items of each set.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("eval-report.json"),
    show_default=True,
    help="JSON report.",
)
@click.option(
    "--compare",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="An earlier JSON report to print side by side.",
)
@click.option("--min-agreement", type=float, help="Fail (exit 6) below this gate agreement.")
@click.option("--max-validator-error", type=float, help="Fail above this validator-error rate.")
@click.option("--max-injection-valid", type=int, help="Fail above this many injection VALIDs.")
@click.option("--min-acceptance", type=float, help="Fail below this after-repair acceptance.")
@click.option("--min-fix-recall", type=float, help="Fail below this FIX recall.")
@click.option(
    "--min-pair-accuracy", type=float, help="Fail below this defect/fixed-twin pair accuracy."
)
@click.option("--min-line-hit", type=float, help="Fail below this defect-line hit rate (±1 line).")
@click.option("--min-clean-go", type=float, help="Fail below this GO/GO_WITH_NOTES rate on clean.")
@replies_option
@click.option(
    "--save-replies",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the replies as JSONL {id, prompt_version, model, reply, turn} (for --replies): "
    "the gate's, and each audit's first and repair turn.",
)
@setting_options("eval")
def eval_command(**flags: Any) -> None:  # fmt: skip
    """Measure the gate and the auditor on labelled sets; print markdown, write JSON.

    With --only types: a type model (--types-model, from triage-bot types fit) on type rows
    (--issues): macro-F1, per type precision, recall and F1, precision and coverage at the
    model's thresholds, and each row's guess; a model file that cannot be applied: exit 2.
    With --only duplicates: recall@1, 5, 10 and MRR of the duplicate ranking on --pool and
    --pairs, and the precision and coverage of "the top candidate is a duplicate" by score.
    """

    def job() -> None:
        if flags["only"] == "duplicates":
            from bot.evaluation.duplicate_ranking import run_duplicates_eval

            encoder, no_encoder = None, None
            if not flags["words_only"]:
                from bot.duplicates.minilm import title_encoder
                from bot.errors import ModelError

                try:
                    encoder = title_encoder(_settings(flags).models_dir)
                except ModelError as exc:
                    no_encoder = str(exc)
            _print_walled(run_duplicates_eval(flags, encoder, no_encoder))
            return
        if flags["only"] == "types":
            from bot.evaluation.type_model import run_types_eval

            _print_walled(run_types_eval(flags))
            return
        from bot.evaluation.command import run_eval

        _print_walled(run_eval(_settings(flags), flags))

    _guarded(job)


@main.command()
@click.option(
    "--issues",
    "issues_path",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="Labelled issues (the eval format: JSONL of id, kind, title, body, expected, "
    "rationale, borderline; see docs/measure-your-model.md).",
)
@replies_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="Where to write the chosen policy (JSON, for --gate-policy or TRIAGE_GATE_POLICY).",
)
@click.option(
    "--model-name",
    help="The model's name as runs report it (default: the model's, or the replies').",
)
@click.option("--name", help="The policy's name (default: calibrated-MODEL).")
@click.option("--yaml", is_flag=True, help="Also print the .github/triage-bot.yml gate: block.")
@click.option(
    "--force",
    is_flag=True,
    help="Write the policy even when the measurement cannot support it (a half under 30 items "
    "or 10 NEEDS_REFINEMENT, replies to another prompt, a tie on the tune half, a choice the "
    "check half contradicts): each reason is printed and kept in its chosen_on. A tune half "
    "with no NEEDS_REFINEMENT is refused whatever.",
)
@setting_options("calibrate")
def calibrate(**flags: Any) -> None:
    """Choose the gate's decision policy for a model by measurement.

    Runs the gate over the labelled issues once (on the model, or on --replies), scores every
    candidate policy (the model's own verdict or the bot's guards, and which guards) on the
    fixed tune/check halves, prints a table per candidate (each share with its 95% interval)
    and writes the best on the tune half, with its figures on both halves, to --out. Refuses
    (exit 2) a choice the measurement cannot support, unless --force.
    """

    def job() -> None:
        from bot.evaluation.command import run_calibrate

        _print_walled(run_calibrate(_settings(flags), flags))

    _guarded(job)


@main.group()
def types() -> None:
    """Issue types (bug, feature, question): a model learned from type rows."""


@types.command(name="fit")
@click.option(
    "--issues",
    "issues_path",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="Type rows (JSONL {id, title, body, type, repo}: triage-bot dataset --types).",
)
@click.option("--repo", help="Only the rows of this repository (OWNER/NAME).")
@click.option(
    "--min-precision",
    type=click.FloatRange(min=0.0, max=1.0, min_open=True),
    default=0.9,
    show_default=True,
    help="The precision each type's confidence threshold is chosen to reach.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="Where to write the model (JSON).",
)
def types_fit(**flags: Any) -> None:
    """Fit a type model on type rows, measure it, write it.

    Needs the types-fit extra (pip install 'triage-bot[types-fit]'). Prints 5-fold
    cross-validated precision, recall and F1 per type and macro-F1, and per type the lowest
    confidence at which its guesses reached --min-precision in inner folds (nested
    cross-validation), with the precision and coverage that threshold gave on the outer folds.
    The model is fitted on all rows, its thresholds chosen on the outer folds' guesses. Refuses
    (exit 2) fewer than 30 rows or a type with fewer than 10. The same rows give the same file.
    """

    def job() -> None:
        from bot.evaluation.type_model import run_types_fit

        if flags.get("repo") is not None:
            _check_repo(flags["repo"])
        _print_walled(run_types_fit(flags))

    _guarded(job)


@main.command()
@click.option("--repo", required=True, help="Repository as OWNER/NAME.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="The rows (JSONL: the eval format, or type rows with --types); appended by issue id, "
    "so a rerun resumes. With --duplicates, a folder.",
)
@click.option(
    "--since",
    type=click.DateTime(formats=["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"]),
    help="Only issues opened on or after this date (UTC).",
)
@click.option("--limit", type=click.IntRange(min=1), help="Stop once --out holds N rows.")
@click.option(
    "--types",
    is_flag=True,
    help="Write type rows to --out instead: each closed issue's type (bug, feature, "
    "question) from its maintainers' type label (below).",
)
@click.option(
    "--duplicates",
    is_flag=True,
    help="Write OUT/pool.jsonl (every issue, any state) and OUT/pairs.jsonl (issues closed as "
    "duplicates of others) instead (below).",
)
@setting_options("dataset")
def dataset(
    repo: str,
    out: Path,
    since: datetime | None,
    limit: int | None,
    types: bool,
    duplicates: bool,
    **flags: Any,
) -> None:
    """Label REPO's closed issues by what its maintainers did, for eval and calibrate.

    Reads through the GitHub API (GITHUB_TOKEN with read access): each closed issue's
    timeline and its body's edit history. Maintainers are commenters who are OWNER, MEMBER
    or COLLABORATOR (bots only when dataset.triager_bots lists them), and whoever adds a
    label. The bot's own labels and comments (by TRIAGE_BOT_LOGIN, default
    github-actions[bot], or with its marker) and the gate labels (the bot's names and those
    of labels: in .github/triage-bot.yml) never count.
    Requests count before any fix (a commit or merged pull request that references the
    issue); the first signal decides:

    \b
    NEEDS_REFINEMENT  a needs-info label was added (needs-info, needs-repro,
                      waiting-for-author ..., plus dataset.needs_info_labels in
                      .github/triage-bot.yml); or a maintainer asked a question
                      and the reporter answered (comment or body edit); or the
                      issue was closed as not planned after it went unanswered.
                      A duplicate check ("Is this the same as #12?": the
                      question ends on an issue and says little else) is no
                      question
    VALID             closed by a commit or merged pull request, or labelled
                      confirmed, accepted or reproduced (plus
                      dataset.accepted_labels), with no request before that
    borderline        the signals disagree (fixed although the request went
                      unanswered; asked for more after accepting it)
    skipped           the rest, counted by reason: bots' and maintainers'
                      issues, locked as spam/off-topic/too heated, deleted,
                      transferred since listed, unanswered questions, closed
                      with no decision, edited after the first response with
                      no earlier text kept

    Events are read in the timeline's order (two in one second as GitHub lists them). A row
    keeps the title and body as a maintainer first saw them, the kind from the labels, and a
    rationale naming the deciding event. OUT.state.json keeps the skipped issues and page
    ETags; GitHub's rate limit is waited for, not failed on.

    With --types, a row is {id, title, body, type, repo, created_at} for each closed issue
    whose labels name exactly one type by types.labels in .github/triage-bot.yml (default:
    bug, type: bug, kind/bug ...; enhancement, feature-request ...; question, support ...;
    case-insensitive, whole names). The label counts when a maintainer added it (anyone
    else than the reporter, the reporter when OWNER, MEMBER or COLLABORATOR, a listed
    triager bot), or when the reporter (an issue form) or an app added it and a maintainer
    then added another label or closed the issue as completed. The bot's own type label
    never counts. The text is the issue's as opened. Issues with no type label, type
    labels of two types, or an unconfirmed one are left out, counted by reason.

    With --duplicates, OUT is a folder: pool.jsonl holds {id, title, body, created_at} for
    every issue of any state (pull requests are no issues; the text as it is now), and
    pairs.jsonl {id, dup_of, direction_basis} for each issue closed as a duplicate (or as not
    planned) of another issue of the pool: the canonical issue of its marked_as_duplicate
    event (GraphQL), else a comment by an OWNER, MEMBER or COLLABORATOR whose first line is
    "Duplicate of #N". Canonicals in another repository, pull requests and issues missing
    from the pool are left out, counted. Only the closed-as-duplicate and not-planned issues'
    timelines are read (docs/requests.md); pool.jsonl.state.json keeps the progress, and
    pairs.jsonl is written again at the end of each run. Takes no --since or --types.
    """

    def job() -> None:
        from bot.dataset import DatasetProgress
        from bot.errors import ConfigError
        from bot.repo_file import TYPE_NAMES
        from bot.runner import run_dataset

        settings = _settings(flags)
        _check_repo(repo)
        if not settings.github_token:
            raise ConfigError(
                "dataset reads GitHub's API, whose GraphQL part (the edit history) needs a "
                "token: set GITHUB_TOKEN (read access to the repository's issues is enough)"
            )
        if duplicates:
            if since is not None or types:
                raise ConfigError(
                    "--duplicates takes no --since or --types: the pool holds every issue"
                )
            _duplicates_dataset(settings, repo, out, limit)
            return
        start = since.replace(tzinfo=UTC) if since else None
        report = _with_progress(
            DatasetProgress(kinds=TYPE_NAMES) if types else DatasetProgress(),
            "reading closed issues",
            lambda show, sleep: run_dataset(
                settings,
                repo,
                out,
                since=start,
                limit=limit,
                on_progress=show,
                sleep=sleep,
                types=types,
            ),
            lambda rows: f"{rows} row(s) are in {_plain(str(out))}",
        )
        for line in report.lines():
            click.echo(line)

    _guarded(job)


def _duplicates_dataset(settings: Settings, repo: str, out: Path, limit: int | None) -> None:
    from bot.dataset.duplicate_run import DuplicatesProgress
    from bot.runner import run_duplicates_dataset

    report = _with_progress(
        DuplicatesProgress(),
        "reading issues",
        lambda show, sleep: run_duplicates_dataset(
            settings, repo, out, limit=limit, on_progress=show, sleep=sleep
        ),
        lambda rows: f"{rows} issue(s) are in the pool in {_plain(str(out))}",
    )
    for line in report.lines():
        click.echo(line)


class _Progress(Protocol):
    waiting_s: float
    rows: int

    def line(self) -> str: ...


P = TypeVar("P", bound=_Progress)
R = TypeVar("R")


def _with_progress(
    shown: P,
    what: str,
    run: Callable[[Callable[[P], None], Callable[[float], None]], R],
    kept: Callable[[int], str],
) -> R:
    """``run(show, sleep)`` under a progress line that shows rate-limit waits; Ctrl-C says
    what is ``kept`` (by the rows so far) and exits 130."""
    import time

    from rich.progress import Progress, SpinnerColumn, TextColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), transient=True) as bar:
        task = bar.add_task(what, total=None)

        def show(progress: P) -> None:
            nonlocal shown
            shown = progress
            bar.update(task, description=progress.line())

        def sleep(seconds: float) -> None:
            shown.waiting_s = seconds
            bar.update(task, description=shown.line())
            time.sleep(seconds)
            shown.waiting_s = 0.0

        try:
            return run(show, sleep)
        except KeyboardInterrupt:
            bar.stop()
            click.echo(
                f"triage-bot: interrupted; {kept(shown.rows)}, and the same command resumes",
                err=True,
            )
            sys.exit(130)


def _plain(text: str) -> str:
    from bot.neutralise import log_value

    return log_value(text)
