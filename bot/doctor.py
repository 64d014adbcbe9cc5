"""``triage-bot doctor``: is this runner ready for a job?

Four checks, each one line ``ok  ``, ``warn`` or ``FAIL`` with what was found, in this order:

- **python**: the interpreter is at least :data:`MIN_PYTHON` (``requires-python`` in
  pyproject.toml).
- **model**: what the backend the settings select says of itself on this runner (the ``check``
  of its :data:`bot.factory.BACKENDS` row, the table the jobs build their models from): with
  ``OLLAMA_HOST``, Ollama answers and has the validator's and the auditor's models pulled; else
  the embedded GGUF is present and its prompt cache folder is this user's alone.
- **store**: the store ``TRIAGE_DB`` names is reachable, records as applied exactly the
  migrations this installed package ships (none missing, none unknown: a newer triage-bot
  migrated it), and has every table the bot uses. A package that ships no migrations for the
  store fails too. A SQLite file that does not exist yet is fine: the first job creates it. A
  store that records only a first part of the shipped migrations (none: a fresh database; some:
  an older triage-bot's), with the tables those create and none that only later ones create, is
  a warning: the first job migrates it. A gap in the record, or a table missing, still fails.
- **token**: GitHub accepts ``GITHUB_TOKEN``, and a classic token's ``X-OAuth-Scopes`` include
  ``repo`` (or ``public_repo``, enough for public repositories). Fine-grained, Actions and App
  tokens carry no such header: GitHub does not list their permissions to the token, so the
  check can only say that the token works and where its permissions are set.

A check never raises: a :class:`~bot.errors.BotError` becomes its ``FAIL`` line. Only a
``FAIL`` fails the doctor: a ``warn`` says what the first job will do.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from bot.clients.probes import token_scopes
from bot.config import Settings
from bot.errors import BotError
from bot.factory import backend_for, load, store_for
from bot.history.protocol import SchemaState

__all__ = ["MIN_PYTHON", "Check", "run_checks"]

MIN_PYTHON = (3, 11)
"""pyproject.toml's ``requires-python``."""

WRITE_SCOPES = ("repo", "public_repo")
"""Classic-token scopes that let the bot label issues and comment (``public_repo``: public
repositories only)."""


@dataclass(frozen=True)
class Check:
    """One check's outcome: ``name`` (``python``, ``model``, ``store``, ``token``), whether it
    passed, what was found (never a secret), and whether it passed with a warning."""

    name: str
    ok: bool
    detail: str
    warning: bool = False

    def line(self) -> str:
        """``ok   store: …``, ``warn store: …`` or ``FAIL store: …``."""
        mark = "FAIL" if not self.ok else "warn" if self.warning else "ok  "
        return f"{mark} {self.name}: {self.detail}"


def check_python(version: tuple[int, ...] | None = None) -> Check:
    """The interpreter's version against :data:`MIN_PYTHON`."""
    found = tuple(version or sys.version_info[:3])
    shown = ".".join(str(n) for n in found)
    if found[:2] >= MIN_PYTHON:
        return Check("python", True, shown)
    need = ".".join(str(n) for n in MIN_PYTHON)
    return Check("python", False, f"{shown}; triage-bot needs {need} or newer")


def check_model(settings: Settings) -> Check:
    """The model backend these settings select, as its :data:`bot.factory.BACKENDS` row checks
    it (Ollama's pulled models, or the embedded GGUF file and its prompt cache folder)."""
    ok, detail = backend_for(settings).check(settings)
    return Check("model", ok, detail)


def check_store(settings: Settings) -> Check:
    """The store is reachable and holds exactly the migrations and tables this installation
    ships (see the module doc), as its :data:`bot.stores.STORES` row reads it."""
    kind, target = store_for(settings)
    where = f"{kind.name} {kind.shown(target)}"
    schema: SchemaState | None = load(kind.schema)(target)
    if schema is None:
        return Check("store", True, f"{where} does not exist yet (the first job creates it)")
    problem = _schema_problem(schema)
    if problem:
        return Check("store", False, f"{where} is reachable but {problem}")
    if schema.behind:
        done = len(schema.shipped) - len(schema.missing)
        return Check(
            "store",
            True,
            f"{where} is reachable and not migrated yet: the first job migrates it ({done} of "
            f"{len(schema.shipped)} migrations applied; {', '.join(schema.missing)} pending)",
            warning=True,
        )
    return Check(
        "store", True, f"{where} is reachable and migrated ({len(schema.shipped)} migrations)"
    )


def _schema_problem(schema: SchemaState) -> str | None:
    """What is wrong with a store's schema, worst first; ``None`` when nothing is (a store
    :attr:`~bot.history.protocol.SchemaState.behind` is not wrong: the next job migrates it)."""
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
    if schema.missing and not schema.behind:
        return (
            f"lacks migrations {', '.join(schema.missing)} while it records later ones (the "
            "record has a gap: no triage-bot release leaves one)"
        )
    if schema.missing_tables:
        recorded = "every migration" if not schema.missing else "its migrations"
        return (
            f"records {recorded} yet lacks tables {', '.join(schema.missing_tables)} "
            "(dropped, or created in another schema of the search path)"
        )
    if schema.early_tables:
        return (
            f"holds tables {', '.join(schema.early_tables)} that only migrations it does not "
            f"record create ({', '.join(schema.missing)}): its record was lost, or another "
            "program made them, and the first job's migration would fail on them"
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
