"""Settings, resolved once: flags > action inputs > environment > defaults, then frozen.

Nothing below the CLI reads ``os.environ``: the CLI passes the environment mapping to
:meth:`Settings.resolve` and hands the frozen result down. Environment variables read:

==========================  ==========================================================
``GITHUB_TOKEN``            token for the GitHub API (``INPUT_TOKEN`` from the Action first)
``GITHUB_API_URL``          API base URL (GitHub Enterprise), default api.github.com
``GITHUB_EVENT_NAME``       webhook event name (``issues``, ``pull_request_target`` …)
``GITHUB_EVENT_PATH``       path of the webhook payload JSON
``GITHUB_STEP_SUMMARY``     file the step summary (markdown) is appended to
``GITHUB_OUTPUT``           file the step outputs are appended to
``OLLAMA_HOST``             Ollama base URL; when set, the Ollama backend is used
``TRIAGE_VALIDATOR_MODEL``  Ollama tag for the validator role
``TRIAGE_MODEL_PATH``       GGUF for the embedded backend (default: Qwen2.5-Coder 1.5B, set up)
``TRIAGE_MODELS``           folder of the embedded default (``~/.cache/triage-bot/models``)
``TRIAGE_MODEL_TIMEOUT``    seconds per model request (default 120)
``TRIAGE_MAX_BODY_CHARS``   longest issue body judged (default 6000, at least 200 characters)
``TRIAGE_DRY_RUN``          ``true`` prints the plan instead of writing to GitHub
``TRIAGE_AUDIT_MODEL``      Ollama tag for the auditor role (default: the validator's)
``TRIAGE_AUDIT_FORMAT``     ``markdown`` (default) or ``json``
``TRIAGE_MAX_SEGMENTS``     per-PR segment cap (default 8)
``TRIAGE_SKIP_GLOBS``       extra comma-separated globs of files never audited
``TRIAGE_DB``               SQLite store (default ``~/.local/share/triage-bot/triage.db``)
``TRIAGE_BOT_LOGIN``        the login the bot's writes appear as, when not a Bot account
==========================  ==========================================================

The Action passes its inputs as ``INPUT_<NAME>`` variables (GitHub's convention for actions);
they rank above the plain variables.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import HttpUrl, TypeAdapter, ValidationError

from bot.chat import RoleOptions
from bot.errors import ConfigError
from bot.retry import RetryPolicy

__all__ = [
    "AUDITOR_OPTIONS",
    "EMBEDDED_N_CTX",
    "ENV_VARS",
    "VALIDATOR_OPTIONS",
    "Settings",
    "default_db_path",
    "default_models_dir",
]

VALIDATOR_OPTIONS = RoleOptions(temperature=0.0, num_predict=160, num_ctx=4096, seed=42)
"""Validator role (design.md, per-role effort): greedy, ≤ 200 output tokens, small context."""

AUDITOR_OPTIONS = RoleOptions(temperature=0.2, num_predict=1024, num_ctx=8192, seed=42)
"""Auditor role: low temperature, room for seven sections, a context that holds a 200-line
segment, the first reply and the repair turn."""

EMBEDDED_N_CTX = max(VALIDATOR_OPTIONS.num_ctx, AUDITOR_OPTIONS.num_ctx)
"""Context the embedded model is loaded with (tokens): the largest role ``num_ctx``."""

DEFAULT_OLLAMA_MODEL = "gemma3:270m"

# setting name -> environment variables, highest priority first
ENV_VARS: dict[str, tuple[str, ...]] = {
    "github_token": ("INPUT_TOKEN", "GITHUB_TOKEN"),
    "github_api_url": ("GITHUB_API_URL",),
    "event_name": ("GITHUB_EVENT_NAME",),
    "event_path": ("GITHUB_EVENT_PATH",),
    "step_summary_path": ("GITHUB_STEP_SUMMARY",),
    "output_path": ("GITHUB_OUTPUT",),
    "ollama_host": ("INPUT_OLLAMA-HOST", "INPUT_OLLAMA_HOST", "OLLAMA_HOST"),
    "validator_model": (
        "INPUT_VALIDATOR-MODEL",
        "INPUT_VALIDATOR_MODEL",
        "TRIAGE_VALIDATOR_MODEL",
    ),
    "model_path": ("TRIAGE_MODEL_PATH",),
    "models_dir": ("TRIAGE_MODELS",),
    "model_timeout_s": ("TRIAGE_MODEL_TIMEOUT",),
    "max_body_chars": ("TRIAGE_MAX_BODY_CHARS",),
    "dry_run": ("INPUT_DRY-RUN", "INPUT_DRY_RUN", "TRIAGE_DRY_RUN"),
    "audit_model": ("INPUT_AUDIT-MODEL", "INPUT_AUDIT_MODEL", "TRIAGE_AUDIT_MODEL"),
    "audit_format": ("INPUT_AUDIT-FORMAT", "INPUT_AUDIT_FORMAT", "TRIAGE_AUDIT_FORMAT"),
    "max_segments": ("INPUT_MAX-SEGMENTS", "INPUT_MAX_SEGMENTS", "TRIAGE_MAX_SEGMENTS"),
    "skip_globs": ("TRIAGE_SKIP_GLOBS",),
    "db_path": ("INPUT_DB-PATH", "INPUT_DB_PATH", "TRIAGE_DB"),
    "bot_login": ("INPUT_BOT-LOGIN", "INPUT_BOT_LOGIN", "TRIAGE_BOT_LOGIN"),
}


def default_db_path(env: Mapping[str, str]) -> Path:
    """The store's default path, outside the Actions workspace (the runner cleans it):
    ``$XDG_DATA_HOME/triage-bot/triage.db``, falling back to ``~/.local/share``."""
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "triage-bot" / "triage.db"


def default_models_dir() -> Path:
    """``~/.cache/triage-bot/models``: where ``scripts/fetch_qwen.sh`` writes the embedded
    default by default (``TRIAGE_MODELS`` overrides it: ``Settings.models_dir``)."""
    return Path.home() / ".cache" / "triage-bot" / "models"


@dataclass(frozen=True)
class Settings:
    """Every setting the bot uses, frozen after :meth:`resolve`.

    Attributes:
        github_token: API token; required only when the plan is applied (not for ``--dry-run``).
        github_api_url: REST base URL.
        event_name: webhook event name.
        event_path: payload file.
        step_summary_path: step summary file, or ``None`` outside Actions.
        output_path: step outputs file, or ``None`` outside Actions.
        ollama_host: Ollama URL; ``None`` selects the embedded backend.
        validator_model: Ollama model tag for the validator.
        model_path: GGUF for the embedded backend; ``None`` = the embedded default
            (Qwen2.5-Coder 1.5B Q4_K_M) in ``models_dir``.
        models_dir: where ``scripts/setup.sh`` puts the embedded default.
        model_timeout_s: seconds per model request.
        max_body_chars: longest issue body judged (characters); longer ones are cut visibly.
        dry_run: print the plan, write nothing to GitHub.
        model_retry: transient retry policy for model calls.
        github_retries: PyGithub retry count for idempotent requests.
        github_backoff_s: PyGithub back-off factor (seconds).
        audit_model: Ollama tag for the auditor (``None``: the validator's).
        audit_format: ``markdown`` or ``json`` (see bot/audit/structured.py).
        max_segments: per-PR segment cap.
        skip_globs: globs of files never audited, added to the built-in list.
        db_path: the SQLite store; ``None`` = the default outside the workspace.
        bot_login: the login the bot's label writes appear as when the token is a person's
            (a PAT): a gate label that login added is the bot's, not hand-set. ``None``: only
            Bot accounts (``github-actions[bot]``, GitHub Apps) count as the bot.
    """

    github_token: str | None = field(default=None, repr=False)
    github_api_url: str = "https://api.github.com"
    event_name: str | None = None
    event_path: Path | None = None
    step_summary_path: Path | None = None
    output_path: Path | None = None
    ollama_host: str | None = None
    validator_model: str = DEFAULT_OLLAMA_MODEL
    model_path: Path | None = None
    models_dir: Path = field(default_factory=default_models_dir)
    model_timeout_s: float = 120.0
    max_body_chars: int = 6000
    dry_run: bool = False
    model_retry: RetryPolicy = field(default_factory=RetryPolicy)
    github_retries: int = 3
    github_backoff_s: float = 1.0
    audit_model: str | None = None
    audit_format: str = "markdown"
    max_segments: int = 8
    skip_globs: tuple[str, ...] = ()
    db_path: Path | None = None
    bot_login: str | None = None

    @classmethod
    def resolve(cls, flags: Mapping[str, Any], env: Mapping[str, str]) -> Settings:
        """Build settings from CLI flags (``None`` = not given) over the environment.

        Raises:
            ConfigError: a value does not parse (e.g. a non-numeric timeout).
        """
        raw: dict[str, Any] = {}
        for name, variables in ENV_VARS.items():
            for var in variables:
                value = env.get(var)
                if value is not None and value.strip() != "":
                    raw[name] = value.strip()
                    break
        for name, value in flags.items():
            if value is not None:
                raw[name] = value
        raw.setdefault("db_path", default_db_path(env))
        return cls()._with(raw)

    def _with(self, raw: Mapping[str, Any]) -> Settings:
        converted: dict[str, Any] = {}
        for name, value in raw.items():
            try:
                converted[name] = _convert(name, value)
            except (TypeError, ValueError) as exc:
                where = " / ".join(ENV_VARS.get(name, (name,))[-1:] + _FLAGS.get(name, ()))
                shown = _shown(name, value)
                raise ConfigError(f"invalid value for {where}: {shown!r} ({exc})") from exc
        return replace(self, **converted)


def _shown(name: str, value: Any) -> Any:
    """A rejected value as an error message may echo it: an Ollama URL's credentials never."""
    text = str(value)
    if name == "ollama_host" and "@" in text:
        return "***@" + text.rsplit("@", 1)[1]
    return value


_FLAGS: dict[str, tuple[str, ...]] = {
    "event_name": ("--event-name",),
    "event_path": ("--event-path",),
    "ollama_host": ("--ollama-host",),
    "validator_model": ("--model",),
    "model_path": ("--model-path",),
    "max_body_chars": ("--max-body-chars",),
    "dry_run": ("--dry-run",),
    "audit_model": ("--audit-model",),
    "audit_format": ("--audit-format",),
    "max_segments": ("--max-segments",),
    "db_path": ("--db",),
}

_HTTP_URL = TypeAdapter(HttpUrl)
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _convert(name: str, value: Any) -> Any:
    if name in ("event_path", "step_summary_path", "output_path", "db_path"):
        return Path(value)
    if name == "models_dir":
        return Path(value).expanduser()
    if name == "model_timeout_s":
        number = float(value)
        if not math.isfinite(number) or number <= 0:
            raise ValueError("must be a finite number of seconds > 0")
        return number
    if name == "ollama_host":
        text = str(value).strip().rstrip("/")
        try:  # pydantic's URL parser: scheme, host and port as the HTTP client will read them
            _HTTP_URL.validate_python(text)
        except ValidationError as exc:
            why = exc.errors(include_url=False)[0]["msg"]
            # not chained: pydantic's error holds the input, and the URL may hold a password
            raise ValueError(f"must be a URL like http://127.0.0.1:11434 ({why})") from None
        return text
    if name == "model_path":
        path = Path(value).expanduser()
        if not path.is_file():
            raise ValueError("no such GGUF file")
        return path
    if name == "max_body_chars":
        count = int(value)
        if count < 200:
            raise ValueError("must be ≥ 200 characters")
        return count
    if name == "audit_format":
        if value not in ("markdown", "json"):
            raise ValueError("expected markdown or json")
        return value
    if name == "max_segments":
        count = int(value)
        if not 1 <= count <= 50:
            raise ValueError("must be between 1 and 50")
        return count
    if name == "skip_globs":
        if isinstance(value, tuple):
            return value
        return tuple(g.strip() for g in str(value).split(",") if g.strip())
    if name == "bot_login":
        login = str(value).strip()
        core = login.removesuffix("[bot]")  # a GitHub App's account: name[bot]
        if not (
            0 < len(core) <= 39
            and not core.startswith("-")
            and all(c.isascii() and (c.isalnum() or c == "-") for c in core)
        ):
            raise ValueError("must be a GitHub login (letters, digits, hyphens)")
        return login
    if name == "dry_run":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ValueError("expected true/false, yes/no, on/off or 1/0")
    if name in ENV_VARS:
        return str(value)
    raise ValueError(f"unknown setting {name}")
