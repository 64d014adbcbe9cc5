"""The ``triage-bot`` command line: the only place (with bot/action.py) that talks to people.

Library code raises :class:`~bot.errors.BotError`; this module turns it into one ``error:`` line on
stderr and the error's exit code. Exit codes: 0 done or deliberately skipped (a ``validator-error``
label is a done run: the label is the defined outcome), 1 unexpected bot error, 2 configuration
(:class:`~bot.errors.ConfigError`, and click's usage errors), 3 malformed or missing event payload,
4 GitHub refused or failed after retries.

Imports of the pipeline happen inside the commands so ``triage-bot --help`` stays fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

__all__ = ["main"]

F = TypeVar("F", bound=Callable[..., Any])


def _fail(exc: Exception) -> None:
    from bot.errors import BotError

    code = exc.exit_code if isinstance(exc, BotError) else 1
    click.echo(f"triage-bot: error: {exc}", err=True)
    sys.exit(code)


def model_options(fn: F) -> F:
    """Shared model flags: ``--ollama-host``, ``--model``, ``--model-path``."""
    fn = click.option(
        "--model-path",
        type=click.Path(path_type=Path, dir_okay=False),
        help="GGUF file for the embedded backend (default: Gemma 3 270M from its PyPI package).",
    )(fn)
    fn = click.option(
        "--model",
        "validator_model",
        help="Ollama model tag for the validator [env TRIAGE_VALIDATOR_MODEL].",
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


@main.command()
@click.option("--event-name", help="Webhook event name [env GITHUB_EVENT_NAME].")
@click.option(
    "--event-path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Webhook payload JSON [env GITHUB_EVENT_PATH].",
)
@click.option(
    "--dry-run/--no-dry-run",
    default=None,
    help="Print the plan (verdict, reason, label changes, model, tokens, ms); write nothing.",
)
@click.option(
    "--max-body-chars",
    type=int,
    help="Longest issue body judged, in characters (default 6000) [env TRIAGE_MAX_BODY_CHARS].",
)
@model_options
def run(**flags: Any) -> None:
    """Handle the webhook event this workflow run was triggered by.

    `issues` opened/edited/reopened runs the issue gate (edited only when the title or body
    changed); every other event is skipped with a one-line reason.
    """
    try:
        _run(flags)
    except Exception as exc:
        from bot.errors import BotError

        if not isinstance(exc, BotError):
            raise
        _fail(exc)


def _run(flags: dict[str, Any]) -> None:
    from bot.action import write_outputs, write_summary
    from bot.clients.factory import make_chat_model, make_github
    from bot.config import VALIDATOR_OPTIONS, Settings
    from bot.errors import ConfigError
    from bot.events import Skip, load_payload, route_event
    from bot.flows import apply_gate, plan_gate
    from bot.render import render_gate_plan, render_gate_summary
    from bot.triage.validator import Validator

    settings = Settings.resolve(flags, os.environ)
    if not settings.event_name:
        raise ConfigError("no event name: set GITHUB_EVENT_NAME or pass --event-name")
    if settings.event_path is None:
        raise ConfigError("no event payload: set GITHUB_EVENT_PATH or pass --event-path")
    routed = route_event(settings.event_name, load_payload(settings.event_path))
    if isinstance(routed, Skip):
        click.echo(f"triage-bot: skipped: {routed.reason}")
        write_summary(settings.step_summary_path, f"triage-bot skipped: {routed.reason}\n")
        return
    github = None if settings.dry_run else make_github(settings)
    validator = Validator(
        make_chat_model(settings), VALIDATOR_OPTIONS, max_body_chars=settings.max_body_chars
    )
    plan = plan_gate(routed, validator)
    click.echo(render_gate_plan(plan))
    if github is not None:
        applied = apply_gate(plan, github)
        click.echo(f"applied:  {applied.requests} GitHub write request(s)")
    else:
        click.echo("dry run:  nothing written to GitHub")
    write_summary(settings.step_summary_path, render_gate_summary(plan, applied=github is not None))
    write_outputs(
        settings.output_path,
        {"verdict": plan.decision.verdict or "ERROR", "label": plan.labels.target.name},
    )
