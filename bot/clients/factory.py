"""Build the clients from settings: the one place that chooses a backend.

Backend choice (design.md, "Models"): Ollama when a host is configured (``--ollama-host`` /
``OLLAMA_HOST``), else the embedded llama.cpp backend with ``--model-path`` or the embedded
default (Qwen2.5-Coder 1.5B, :data:`bot.clients.embedded.DEFAULT_MODEL`). Heavy imports
(llama_cpp) happen only when the embedded model is first used.
"""

from __future__ import annotations

from typing import Literal

from bot.clients.embedded import EmbeddedChatModel
from bot.clients.github_client import PyGithubClient
from bot.clients.model_client import ChatModel, OllamaChatModel
from bot.config import EMBEDDED_N_CTX, Settings
from bot.errors import ConfigError
from bot.history.store import Store

__all__ = ["make_chat_model", "make_github", "make_store"]


def make_chat_model(settings: Settings, role: Literal["validator", "auditor"]) -> ChatModel:
    """The :class:`ChatModel` for a role (no I/O until the first call).

    With Ollama, the validator uses ``validator_model`` and the auditor ``audit_model`` (falling
    back to the validator's). The embedded backend serves both roles from one loaded GGUF.
    """
    if settings.ollama_host:
        tag = settings.validator_model
        if role == "auditor" and settings.audit_model:
            tag = settings.audit_model
        return OllamaChatModel(
            host=settings.ollama_host,
            model=tag,
            timeout_s=settings.model_timeout_s,
            retry=settings.model_retry,
        )
    return EmbeddedChatModel(
        model_path=settings.model_path, models_dir=settings.models_dir, n_ctx=EMBEDDED_N_CTX
    )


def make_github(settings: Settings, *, token_required: bool = True) -> PyGithubClient:
    """The GitHub client for these settings.

    Args:
        token_required: ``False`` for read-only dry runs (public repositories can be read
            without a token, at GitHub's low anonymous rate limit).

    Raises:
        ConfigError: no token (``GITHUB_TOKEN`` or the Action's ``token`` input).
    """
    if not settings.github_token and token_required:
        raise ConfigError(
            "no GitHub token: set GITHUB_TOKEN (or the action's token input), or use --dry-run"
        )
    return PyGithubClient(
        token=settings.github_token,
        base_url=settings.github_api_url,
        retries=settings.github_retries,
        backoff_s=settings.github_backoff_s,
    )


def make_store(settings: Settings, *, read_only: bool = False) -> Store:
    """Open the store at ``settings.db_path``: for writing (created ``0600`` and migrated), or
    ``read_only`` (dry runs, ``history``, ``stats``: nothing created, migrated or written; a
    missing file reads as empty). See :mod:`bot.history.store`.

    Raises:
        StoreError: the file cannot be opened or migrated, or a newer triage-bot wrote it.
    """
    return Store(settings.db_path or ":memory:", read_only=read_only)
