"""The ``triage-bot`` command line: the only place (with bot/action.py) that talks to people.

Library code raises :class:`~bot.errors.BotError`; this module turns it into one ``error:`` line on
stderr and the error's exit code. Exit codes: 0 done or deliberately skipped (a ``validator-error``
label or a rejected audit is a done run: each is a defined outcome), 1 unexpected bot error,
2 configuration or a refused ``--range`` (:class:`~bot.errors.ConfigError`,
:class:`~bot.errors.InvalidRange`, click's usage errors), 3 malformed or missing event payload,
4 GitHub refused or failed after retries, 5 the SQLite store cannot be opened or written.

Imports of the pipeline happen inside the commands so ``triage-bot --help`` stays fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = ["main"]

F = TypeVar("F", bound=Callable[..., Any])


def _secret_forms(raw: str) -> set[str]:
    """Every form of a token that may be sent or echoed: as set, stripped (what
    :meth:`Settings.resolve` keeps and the client sends) and each line of it stripped."""
    forms = {raw, raw.strip(), *(line.strip() for line in raw.splitlines())}
    return {form for form in forms if len(form) >= 8}


def _redact(text: str) -> str:
    """Remove the GitHub token, in every form it may take, from text that may echo it."""
    for var in ("INPUT_TOKEN", "GITHUB_TOKEN"):
        for secret in sorted(_secret_forms(os.environ.get(var, "")), key=len, reverse=True):
            text = text.replace(secret, "***")
    return text


def _fail(exc: Exception) -> None:
    from bot.errors import BotError
    from bot.neutralise import log_value

    code = exc.exit_code if isinstance(exc, BotError) else 1
    click.echo(f"triage-bot: error: {log_value(_redact(str(exc)))}", err=True)
    sys.exit(code)


def model_options(fn: F) -> F:
    """Shared model flags: ``--ollama-host``, ``--model``, ``--model-path``."""
    fn = click.option(
        "--model-path",
        type=click.Path(path_type=Path, dir_okay=False),
        help="GGUF file for the embedded backend (default: Qwen2.5-Coder 1.5B, which "
        "scripts/setup.sh fetches into ~/.cache/triage-bot/models or TRIAGE_MODELS) "
        "[env TRIAGE_MODEL_PATH].",
    )(fn)
    fn = click.option(
        "--model",
        "validator_model",
        help="Ollama model tag for the validator (default gemma3:270m) "
        "[env TRIAGE_VALIDATOR_MODEL].",
    )(fn)
    fn = click.option(
        "--ollama-host",
        help="Ollama URL; when set the Ollama backend is used, else the embedded one "
        "[env OLLAMA_HOST].",
    )(fn)
    return fn


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="triage-bot")
def main() -> None:
    """triage-bot: gate issues and audit pull requests with a local LLM."""


def common_options(fn: F) -> F:
    """Flags every job takes: dry run, store path."""
    fn = click.option(
        "--db",
        "db_path",
        type=click.Path(path_type=Path, dir_okay=False),
        help="SQLite store [env TRIAGE_DB; default ~/.local/share/triage-bot/triage.db].",
    )(fn)
    fn = click.option(
        "--dry-run/--no-dry-run",
        default=None,
        help="Print the plan (verdict, labels or audits, model, tokens, ms); write nothing "
        "[env TRIAGE_DRY_RUN].",
    )(fn)
    return fn


def audit_options(fn: F) -> F:
    """Flags of the PR audit: format, segment cap, audit model."""
    fn = click.option(
        "--audit-model", help="Ollama model tag for the auditor [env TRIAGE_AUDIT_MODEL]."
    )(fn)
    fn = click.option(
        "--max-segments", type=int, help="Per-PR segment cap (default 8) [env TRIAGE_MAX_SEGMENTS]."
    )(fn)
    fn = click.option(
        "--audit-format",
        type=click.Choice(["markdown", "json"]),
        help="markdown: the model writes the seven sections; json: it fills their JSON schema "
        "and the bot renders them [env TRIAGE_AUDIT_FORMAT].",
    )(fn)
    return fn


def _emit(report: Any, settings: Any) -> None:
    """Print the report; in Actions, inside ``::stop-commands::`` so no line of it can be read
    as a workflow command (the report's own lines already escape every untrusted value:
    this is the second wall), then the warnings as annotations."""
    import secrets

    from bot.action import write_outputs, write_summary
    from bot.neutralise import log_value

    in_actions = os.environ.get("GITHUB_ACTIONS") == "true"
    resume = secrets.token_hex(16)
    if in_actions:
        click.echo(f"::stop-commands::{resume}")
    click.echo(_redact(report.text))
    if in_actions:
        click.echo(f"::{resume}::")
    for warning in report.warnings:
        # A workflow command annotates the run in GitHub's UI; plain stderr elsewhere.
        message = log_value(_redact(warning))
        if in_actions:
            click.echo(f"::warning title=triage-bot::{message}")
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
@click.option("--event-name", help="Webhook event name [env GITHUB_EVENT_NAME].")
@click.option(
    "--event-path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Webhook payload JSON [env GITHUB_EVENT_PATH].",
)
@click.option(
    "--max-body-chars",
    type=int,
    help="Longest issue body judged, in characters (default 6000) [env TRIAGE_MAX_BODY_CHARS].",
)
@common_options
@audit_options
@model_options
def run(**flags: Any) -> None:
    """Handle the webhook event this workflow run was triggered by.

    `issues` opened/edited/reopened runs the issue gate (edited only when the title or body
    changed); `pull_request_target`/`pull_request` opened/synchronize/reopened/ready_for_review
    runs the PR audit (drafts are skipped); every other event is skipped with a one-line reason.
    """

    def job() -> None:
        from bot.config import Settings
        from bot.runner import run_event

        settings = Settings.resolve(flags, os.environ)
        _emit(run_event(settings), settings)

    _guarded(job)


@main.command()
@click.option("--repo", required=True, help="Repository as OWNER/NAME.")
@click.option("--pr", "number", required=True, type=click.IntRange(min=1), help="PR number.")
@click.option(
    "--range",
    "requested_range",
    help="Audit only PATH:START-END (≤ 200 lines of a changed file), e.g. src/app.py:10-80.",
)
@common_options
@audit_options
@model_options
def audit(repo: str, number: int, requested_range: str | None, **flags: Any) -> None:
    """Audit a pull request by hand: selected changed ranges, or one explicit range."""

    def job() -> None:
        from bot.config import Settings
        from bot.errors import ConfigError
        from bot.factory import make_github
        from bot.runner import run_audit

        settings = Settings.resolve(flags, os.environ)
        _check_repo(repo)
        github = make_github(settings, token_required=not settings.dry_run)
        pull = github.pull(repo, number)
        if pull.state != "open":
            raise ConfigError(f"{repo}#{number} is {pull.state}; only open PRs are audited")
        _emit(run_audit(pull, settings, github, requested_range=requested_range), settings)

    _guarded(job)


def store_options(fn: F) -> F:
    """``--repo``, ``--db`` and ``--json`` for the read-only store commands."""
    fn = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(fn)
    fn = click.option(
        "--db",
        "db_path",
        type=click.Path(path_type=Path, dir_okay=False),
        help="SQLite store [env TRIAGE_DB; default ~/.local/share/triage-bot/triage.db].",
    )(fn)
    fn = click.option("--repo", required=True, help="Repository as OWNER/NAME.")(fn)
    return fn


def _show(title: str, columns: Sequence[str], cells: Sequence[Sequence[str]]) -> None:
    """A rich table of store rows: cells are plain text (no rich markup) passed through
    :func:`~bot.neutralise.log_value` (a stored path may hold a line break or ``##[``)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from bot.neutralise import log_value

    table = Table(title=Text(log_value(title)))
    for column in columns:
        table.add_column(column)
    for row in cells:
        table.add_row(*(Text(log_value(cell)) for cell in row))
    Console().print(table)


def _store_rows(db_path: Path | None, read: Callable[[Any], list[Any]]) -> list[Any]:
    from bot.config import Settings
    from bot.factory import make_store

    store = make_store(Settings.resolve({"db_path": db_path}, os.environ), read_only=True)
    try:
        return read(store)
    finally:
        store.close()


@main.command()
@store_options
@click.option("--limit", default=10, type=click.IntRange(1, 1000), help="How many rows.")
def history(repo: str, db_path: Path | None, as_json: bool, limit: int) -> None:
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
@click.option("--weeks", default=8, type=click.IntRange(1, 52), help="How many weeks back.")
def stats(repo: str, db_path: Path | None, as_json: bool, weeks: int) -> None:
    """Weekly statistics of accepted audits (verdict shares, retry rate, confidence mix)."""

    def job() -> None:
        from dataclasses import asdict

        from bot.history.stats import weekly_stats
        from bot.neutralise import json_line

        _check_repo(repo)
        rows = _store_rows(db_path, lambda store: weekly_stats(store, repo, weeks))
        if as_json:
            click.echo(json_line([asdict(s) for s in rows]))
            return
        cells = [
            (s.week, str(s.audits), f"{s.share(s.go):.0%}", f"{s.share(s.go_with_notes):.0%}",
             f"{s.share(s.fix):.0%}", f"{s.share(s.retried):.0%}", f"{s.high}/{s.medium}/{s.low}")
            for s in rows
        ]  # fmt: skip
        columns = ("week", "audits", "GO", "GO_WITH_NOTES", "FIX", "retried", "H/M/L")
        _show(f"Accepted audits of {repo}, last {weeks} week(s)", columns, cells)

    _guarded(job)


@main.command()
@click.option("--repo", required=True, help="Repository as OWNER/NAME.")
@click.option("--limit", default=50, type=click.IntRange(1, 10_000), help="Most issues judged.")
@click.option(
    "--max-body-chars", type=int, help="Longest issue body judged (default 6000 characters)."
)
@common_options
@model_options
def backlog(repo: str, limit: int, **flags: Any) -> None:
    """Run the gate over open issues that carry no gate label (resumable)."""

    def job() -> None:
        from rich.progress import Progress

        from bot.config import Settings
        from bot.factory import make_github
        from bot.runner import run_backlog

        settings = Settings.resolve(flags, os.environ)
        _check_repo(repo)
        github = make_github(settings, token_required=not settings.dry_run)
        with Progress(transient=True) as progress:
            task = progress.add_task("gating issues", total=None)
            report = run_backlog(
                repo,
                settings,
                github,
                limit=limit,
                on_progress=lambda done, total: progress.update(task, completed=done, total=total),
            )
        _emit(report, settings)

    _guarded(job)


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
@click.option("--only", type=click.Choice(["gate", "audit", "both"]), default="both")
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
@audit_options
@model_options
def eval_command(**flags: Any) -> None:  # fmt: skip
    """Measure the gate and the auditor on labelled sets; print markdown, write JSON."""

    def job() -> None:
        from bot.config import Settings
        from bot.evaluation.command import run_eval

        keys = ("validator_model", "ollama_host", "model_path", "audit_model", "audit_format",
                "max_segments")  # fmt: skip
        settings = Settings.resolve({k: flags.get(k) for k in keys}, os.environ)
        click.echo(run_eval(settings, flags))

    _guarded(job)
