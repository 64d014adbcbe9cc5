"""The reads ``triage-bot doctor`` makes of a runner's services: Ollama's pulled models, an
OpenAI-compatible server's models and a one-token call to it, and the GitHub token's OAuth
scopes (issue 18, the fleet guide). One request each, no retry: a doctor reports what it finds
now.

Errors map through the same choke points as the jobs' clients
(:func:`~bot.clients.ollama_client.translate_ollama_error`,
:func:`~bot.clients.openai_client.translate_openai_error`,
:func:`~bot.clients.github_errors.translate_github_error`).
"""

from __future__ import annotations

import contextlib
import time

import ollama
from github import Auth, Github

from bot.chat import ChatMessage, RoleOptions
from bot.clients.github_errors import translate_github_error
from bot.clients.ollama_client import translate_ollama_error
from bot.errors import ModelTruncated
from bot.retry import RetryPolicy

__all__ = ["ollama_models", "openai_models", "openai_one_token", "token_scopes"]

_ONE_TOKEN = RoleOptions(temperature=0.0, num_predict=1, num_ctx=4096)
_NO_RETRY = RetryPolicy(attempts=1)


def ollama_models(host: str, *, timeout_s: float = 10.0) -> list[str]:
    """``GET {host}/api/tags``: the tags of the models pulled there (``qwen2.5-coder:1.5b``).

    Raises:
        ModelError: Ollama is unreachable or answered an error
            (:class:`~bot.errors.ModelUnavailable` when it is down).
    """
    try:
        response = ollama.Client(host=host, timeout=timeout_s).list()
    except Exception as exc:  # ollama and httpx raise many kinds; the translator sorts them
        raise translate_ollama_error(exc, model="(list)", host=host) from exc
    return [m.model for m in response.models if m.model]


def openai_models(base_url: str, api_key: str | None, *, timeout_s: float = 10.0) -> list[str]:
    """``GET {base_url}/models``: the ids of the models an OpenAI-compatible server serves.

    Raises:
        ModelError: the server is unreachable, refuses the key or answered an error.
    """
    from bot.clients.openai_client import OpenAIChatModel  # openai only when used

    server = OpenAIChatModel(base_url=base_url, model="(list)", api_key=api_key,
                             timeout_s=timeout_s, retry=_NO_RETRY)  # fmt: skip
    return server.models()


def openai_one_token(
    base_url: str, api_key: str | None, model: str, *, timeout_s: float = 60.0
) -> float:
    """One chat call that asks for one token of ``model``: the server loads it and generates.
    A reply cut at that token is the expected outcome.

    Returns:
        The call's wall time in ms.

    Raises:
        ModelError: the call failed (the model is not served, the server errs or times out).
    """
    from bot.clients.openai_client import OpenAIChatModel  # openai only when used

    server = OpenAIChatModel(base_url=base_url, model=model, api_key=api_key,
                             timeout_s=timeout_s, retry=_NO_RETRY)  # fmt: skip
    started = time.perf_counter()
    with contextlib.suppress(ModelTruncated):
        server.chat([ChatMessage("user", "Say OK.")], options=_ONE_TOKEN)
    return (time.perf_counter() - started) * 1000


def token_scopes(token: str, *, base_url: str = "https://api.github.com") -> list[str] | None:
    """``GET /rate_limit`` (costs no rate limit): the token's scopes from GitHub's
    ``X-OAuth-Scopes`` header, e.g. ``["repo", "workflow"]``.

    Only classic personal access tokens (and OAuth app tokens) get that header. A fine-grained
    token, the Actions ``GITHUB_TOKEN`` and a GitHub App's token do not: their permissions are
    set where they are made (the workflow's ``permissions:`` block, the App's settings), and
    GitHub does not list them to the token. Then this returns ``None``.

    Raises:
        GitHubError: the token is refused (:class:`~bot.errors.GitHubAuthError`) or GitHub is
            unreachable.
    """
    gh = Github(auth=Auth.Token(token), base_url=base_url, retry=0, timeout=15)
    try:
        gh.get_rate_limit()
    except Exception as exc:  # PyGithub and requests raise many kinds
        raise translate_github_error(exc, what="read the token's scopes") from exc
    return gh.oauth_scopes
