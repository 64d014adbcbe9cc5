"""Build the clients from settings: the one place that chooses a backend.

Backend choice (design.md, "Models"): Ollama when a host is configured (``--ollama-host`` /
``OLLAMA_HOST``), else the embedded llama.cpp backend with ``--model-path`` or the Gemma 3 270M
default. Heavy imports (llama_cpp) happen only when the embedded model is first used.
"""

from __future__ import annotations

from bot.clients.embedded import EmbeddedChatModel
from bot.clients.github_client import PyGithubClient
from bot.clients.model_client import ChatModel, OllamaChatModel
from bot.config import EMBEDDED_N_CTX, Settings
from bot.errors import ConfigError

__all__ = ["make_chat_model", "make_github"]


def make_chat_model(settings: Settings) -> ChatModel:
    """The validator's :class:`ChatModel` for these settings (no I/O until the first call)."""
    if settings.ollama_host:
        return OllamaChatModel(
            host=settings.ollama_host,
            model=settings.validator_model,
            timeout_s=settings.model_timeout_s,
            retry=settings.model_retry,
        )
    return EmbeddedChatModel(model_path=settings.model_path, n_ctx=EMBEDDED_N_CTX)


def make_github(settings: Settings) -> PyGithubClient:
    """The GitHub client for these settings.

    Raises:
        ConfigError: no token (``GITHUB_TOKEN`` or the Action's ``token`` input).
    """
    if not settings.github_token:
        raise ConfigError(
            "no GitHub token: set GITHUB_TOKEN (or the action's token input), or use --dry-run"
        )
    return PyGithubClient(
        token=settings.github_token,
        base_url=settings.github_api_url,
        retries=settings.github_retries,
        backoff_s=settings.github_backoff_s,
    )
