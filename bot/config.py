"""Settings, resolved once (flags > action inputs > environment > repository file > defaults).

The rows are :mod:`bot.settings_table`'s; nothing below the CLI reads ``os.environ``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from bot.chat import RoleOptions
from bot.errors import ConfigError
from bot.retry import RetryPolicy
from bot.settings_table import (
    DEFAULT_OLLAMA_MODEL,
    ENV_VARS,
    SETTINGS,
    SettingsTable,
    default_db_path,
    default_models_dir,
)
from bot.stores import store_secrets
from bot.urls import Redactor, read_url, shown_url

if TYPE_CHECKING:
    from bot.policy_file import GatePolicy
    from bot.repo_file import RepoFile

__all__ = [
    "AUDITOR_JSON_OPTIONS",
    "AUDITOR_OPTIONS",
    "DEFAULT_OLLAMA_MODEL",
    "EMBEDDED_N_CTX",
    "ENV_VARS",
    "SETTINGS",
    "VALIDATOR_OPTIONS",
    "Settings",
    "default_db_path",
    "default_models_dir",
]

VALIDATOR_OPTIONS = RoleOptions(temperature=0.0, num_predict=160, num_ctx=4096, seed=42)
"""Validator role: greedy, ≤ 200 output tokens, a small context (a verdict is short)."""

AUDITOR_OPTIONS = RoleOptions(temperature=0.2, num_predict=1024, num_ctx=8192, seed=42)
"""Auditor role: low temperature, room for seven sections, a context that holds a 200-line
segment, the first reply and the repair turn."""

AUDITOR_JSON_OPTIONS = replace(AUDITOR_OPTIONS, num_predict=512)
"""Auditor role in the JSON format: the schema's fields take far fewer tokens than seven
markdown sections, so a reply that loops is cut at half the markdown bound and goes to the
repair turn (the replies this was measured on: docs/audit.md, "Auditor role options")."""

EMBEDDED_N_CTX = max(VALIDATOR_OPTIONS.num_ctx, AUDITOR_OPTIONS.num_ctx)
"""Context the embedded model is loaded with (tokens): the largest role ``num_ctx``."""

_BY_NAME = {spec.name: spec for spec in SETTINGS}


SECRET_MIN_CHARS = 8
"""The shortest secret setting's value searched for in output (shorter ones are refused)."""


@dataclass(frozen=True)
class Settings(SettingsTable):
    """Every setting the bot uses, frozen after :meth:`resolve`."""

    model_retry: RetryPolicy = field(default_factory=RetryPolicy)
    github_retries: int = 3
    github_backoff_s: float = 1.0
    explicit: frozenset[str] = frozenset()
    """The settings a flag, action input or variable set: they outrank the repository file."""
    repo_file: RepoFile | None = None
    """``.github/triage-bot.yml`` once read (:meth:`with_repository_file`), ``None`` before."""
    repo_policy: GatePolicy | None = None
    """The policy at ``gate_policy_path`` in the repository, once read with it."""

    def redactor(self) -> Redactor:
        """The redaction of this job's secret settings and the secrets in its URLs."""
        values = [getattr(self, s.name) for s in SETTINGS if s.secret]
        urls = [getattr(self, s.name) for s in SETTINGS if s.echo is shown_url]
        found = [x for u in urls if u for x in read_url(str(u)).secrets]
        found += store_secrets(self.db_path) if self.db_path else ()
        return Redactor.of([str(v) for v in values if v], min_chars=SECRET_MIN_CHARS) + (
            Redactor.of(found, min_chars=4)
        )

    @classmethod
    def resolve(cls, flags: Mapping[str, Any], env: Mapping[str, str]) -> Settings:
        """Settings from CLI flags (``None``: not given) over the environment.

        Raises:
            ConfigError: a value does not parse, or a flag names no setting.
        """
        raw: dict[str, Any] = {}
        for spec in SETTINGS:
            for var in spec.env_vars:
                value = env.get(var)
                if value is not None and value.strip() != "":
                    raw[spec.name] = value.strip()
                    break
        for name, value in flags.items():
            if value is not None:
                raw[name] = value
        explicit = frozenset(raw)
        for spec in SETTINGS:
            if spec.default_from_env is not None and spec.name not in raw:
                raw[spec.name] = spec.default_from_env(env)
        return replace(cls()._with(raw), explicit=explicit)

    def with_repository_file(self, repo_file: RepoFile) -> Settings:
        """These settings with the repository file below flags, inputs and variables.

        Raises:
            ConfigError: a file value breaks its row's value rule.
        """
        raw = {k: v for k, v in repo_file.settings().items() if k not in self.explicit}
        return replace(self._with(raw), repo_file=repo_file)

    def _with(self, raw: Mapping[str, Any]) -> Settings:
        converted: dict[str, Any] = {}
        for name, value in raw.items():
            spec = _BY_NAME.get(name)
            if spec is None:
                raise ConfigError(f"invalid value for {name}: {value!r} (unknown setting {name})")
            try:
                converted[name] = spec.convert(value)
            except (TypeError, ValueError) as exc:
                where = " / ".join([spec.env, *([spec.flag] if spec.flag else [])])
                shown = spec.echo(value)
                raise ConfigError(f"invalid value for {where}: {shown!r} ({exc})") from exc
        return replace(self, **converted)
