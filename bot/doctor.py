"""``triage-bot doctor``: is this runner ready for a job? (issue 18, the fleet guide)

Four checks, each one line ``ok  `` or ``FAIL`` with what was found, in this order:

- **python**: the interpreter is at least :data:`MIN_PYTHON` (``requires-python`` in
  pyproject.toml).
- **model**: with an OpenAI-compatible base URL, the server answers ``/v1/models``, lists the
  validator's and the auditor's models, and generates a token of each; with ``OLLAMA_HOST``,
  Ollama answers and has the validator's and the auditor's models pulled (a tag without ``:``
  means ``:latest``, as in Ollama); else the embedded GGUF is
  present (``--model-path``, or the default in ``TRIAGE_MODELS`` at its expected size), and its
  prompt cache folder is this user's alone (:mod:`bot.clients.prompt_cache`).
- **store**: the store ``TRIAGE_DB`` names is reachable, records as applied exactly the
  migrations this installed package ships (none missing, none unknown: a newer triage-bot
  migrated it), and has every table the bot uses. A package that ships no migrations for the
  store fails too. A SQLite file that does not exist yet is fine: the first job creates it.
- **token**: GitHub accepts ``GITHUB_TOKEN``, and a classic token's ``X-OAuth-Scopes`` include
  ``repo`` (or ``public_repo``, enough for public repositories). Fine-grained, Actions and App
  tokens carry no such header: GitHub does not list their permissions to the token, so the
  check can only say that the token works and where its permissions are set.

A check never raises: a :class:`~bot.errors.BotError` becomes its ``FAIL`` line.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bot.clients.embedded import default_model_path
from bot.clients.probes import ollama_models, openai_models, openai_one_token, token_scopes
from bot.clients.prompt_cache import PromptCache
from bot.config import Settings, is_database_url
from bot.errors import BotError, ConfigError
from bot.history.protocol import SchemaState
from bot.history.store import file_schema
from bot.neutralise import shown_url

__all__ = ["MIN_PYTHON", "Check", "run_checks"]

MIN_PYTHON = (3, 11)
"""pyproject.toml's ``requires-python``."""

WRITE_SCOPES = ("repo", "public_repo")
"""Classic-token scopes that let the bot label issues and comment (``public_repo``: public
repositories only)."""


@dataclass(frozen=True)
class Check:
    """One check's outcome: ``name`` (``python``, ``model``, ``store``, ``token``), whether it
    passed, and what was found (never a secret)."""

    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        """``ok   store: …`` or ``FAIL store: …``."""
        return f"{'ok  ' if self.ok else 'FAIL'} {self.name}: {self.detail}"


def check_python(version: tuple[int, ...] | None = None) -> Check:
    """The interpreter's version against :data:`MIN_PYTHON`."""
    found = tuple(version or sys.version_info[:3])
    shown = ".".join(str(n) for n in found)
    if found[:2] >= MIN_PYTHON:
        return Check("python", True, shown)
    need = ".".join(str(n) for n in MIN_PYTHON)
    return Check("python", False, f"{shown}; triage-bot needs {need} or newer")


def _tag(name: str) -> str:
    return name if ":" in name else f"{name}:latest"


def _wanted(settings: Settings) -> list[str]:
    """The server models the jobs call: the validator's and the auditor's."""
    return sorted({settings.validator_model, settings.audit_model or settings.validator_model})


def check_openai(settings: Settings, base_url: str) -> Check:
    """An OpenAI-compatible server: reachable, serving both roles' models, generating."""
    where = f"OpenAI-compatible server {shown_url(base_url)}"
    served = openai_models(base_url, settings.openai_api_key, timeout_s=settings.model_timeout_s)
    missing = [m for m in _wanted(settings) if m not in served]
    if missing:
        listed = ", ".join(sorted(served)[:10]) or "none"
        return Check(
            "model",
            False,
            f"{where} answers but does not serve {', '.join(missing)} (it lists: {listed}); "
            "set --model / --audit-model to a listed id",
        )
    key, timeout_s = settings.openai_api_key, settings.model_timeout_s
    times = [
        f"{m} {openai_one_token(base_url, key, m, timeout_s=timeout_s):.0f} ms"
        for m in _wanted(settings)
    ]
    return Check("model", True, f"{where} answers; one-token call: {', '.join(times)}")


def check_model(settings: Settings) -> Check:
    """The model backend: an OpenAI-compatible server, Ollama's pulled models, or the embedded
    GGUF file (the backend the jobs would use, :data:`bot.factory.BACKENDS`' order)."""
    if settings.openai_base_url:
        return check_openai(settings, settings.openai_base_url)
    if settings.ollama_host:
        wanted = set(_wanted(settings))
        pulled = {_tag(m) for m in ollama_models(settings.ollama_host)}
        missing = sorted(m for m in wanted if _tag(m) not in pulled)
        if missing:
            pulls = "; ".join(f"ollama pull {m}" for m in missing)
            return Check("model", False, f"Ollama answers but lacks {', '.join(missing)} ({pulls})")
        return Check("model", True, f"Ollama answers; pulled: {', '.join(sorted(wanted))}")
    path = settings.model_path or default_model_path(settings.models_dir)
    if not Path(path).is_file():
        return Check("model", False, f"no GGUF file at {path}")
    size_mb = Path(path).stat().st_size / 1e6
    found = f"embedded GGUF {path} ({size_mb:.0f} MB)"
    if settings.prompt_cache_mb > 0:
        cache = PromptCache(settings.prompt_cache_dir, max_bytes=settings.prompt_cache_mb << 20)
        try:
            cache.folder()
        except ConfigError as exc:
            return Check("model", False, f"{found}; {exc}")
        found += f"; prompt cache {cache.directory} (private)"
    return Check("model", True, found)


def check_store(settings: Settings) -> Check:
    """The store is reachable and holds exactly the migrations and tables this installation
    ships (see the module doc)."""
    target = str(settings.db_path) if settings.db_path else ":memory:"
    if is_database_url(target):
        from bot.history.pg_store import server_schema  # psycopg and yoyo only when used

        where = f"PostgreSQL {shown_url(target)}"
        schema = server_schema(target)
    else:
        where = f"SQLite {target}"
        if target != ":memory:" and not Path(target).exists():
            return Check("store", True, f"{where} does not exist yet (the first job creates it)")
        schema = file_schema(target)
    problem = _schema_problem(schema)
    if problem:
        return Check("store", False, f"{where} is reachable but {problem}")
    return Check(
        "store", True, f"{where} is reachable and migrated ({len(schema.shipped)} migrations)"
    )


def _schema_problem(schema: SchemaState) -> str | None:
    """What is wrong with a store's schema, worst first; ``None`` when nothing is."""
    if not schema.shipped:
        return (
            "this installation of triage-bot ships no migrations for it (its package lacks "
            "them): reinstall triage-bot"
        )
    if schema.unknown:
        return (
            f"was migrated by a newer triage-bot (migrations {', '.join(schema.unknown)} are "
            "unknown to this version): upgrade triage-bot"
        )
    if schema.missing:
        return (
            f"lacks migrations {', '.join(schema.missing)} (the next job applies them: its "
            "database user needs CREATE on the schema)"
        )
    if schema.missing_tables:
        return (
            f"records every migration yet lacks tables {', '.join(schema.missing_tables)} "
            "(dropped, or created in another schema of the search path)"
        )
    return None


def check_token(settings: Settings) -> Check:
    """The GitHub token works, and a classic token has a scope that can write issues."""
    if not settings.github_token:
        return Check("token", False, "no token: set GITHUB_TOKEN (the action passes its input)")
    scopes = token_scopes(settings.github_token, base_url=settings.github_api_url)
    if scopes is None:
        return Check(
            "token",
            True,
            "GitHub accepts it; no X-OAuth-Scopes (a fine-grained, Actions or App token: GitHub "
            "does not list its permissions; grant issues: write, pull-requests: write and "
            "contents: read where it is made)",
        )
    shown = ", ".join(scopes) or "none"
    if not set(scopes) & set(WRITE_SCOPES):
        return Check(
            "token", False, f"classic token with scopes {shown}: needs repo or public_repo"
        )
    return Check("token", True, f"classic token with scopes {shown}")


CHECKS: tuple[Callable[[Settings], Check], ...] = (
    lambda _settings: check_python(),
    check_model,
    check_store,
    check_token,
)


def run_checks(settings: Settings) -> list[Check]:
    """Every check, in order; a :class:`~bot.errors.BotError` in one is its ``FAIL`` line."""
    names = ("python", "model", "store", "token")
    out = []
    for name, check in zip(names, CHECKS, strict=True):
        try:
            out.append(check(settings))
        except BotError as exc:
            out.append(Check(name, False, str(exc)))
    return out
