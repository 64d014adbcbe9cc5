"""The one exception tree of triage-bot.

Library code raises these; only the CLI (``bot/cli.py``) turns them into messages and exit codes.
Upstream errors (PyGithub, ollama, httpx, pydantic, llama-cpp) are translated at exactly one choke
point per client (``clients/ollama_client.py``, ``clients/openai_client.py``,
``clients/embedded.py``, ``clients/github_client.py``, ``events.py``) with
``raise ... from exc``::

    BotError                              exit 1 unless a subclass says otherwise
    ├── ConfigError                       exit 2  bad flag, missing env var, unreadable setting
    ├── EventError                        exit 3  event file missing/unreadable/malformed payload
    ├── InvalidRange                      exit 2  a PATH:START-END the audit refuses
    ├── ModelError                        (gate: validator-error label, never an exit)
    │   ├── ModelUnavailable                      unreachable, timeout, 429, 5xx after retries
    │   ├── ModelNotFound                         404: the model is not pulled / GGUF missing
    │   ├── ModelRequestRejected                  400 and other 4xx: bad options, schema, key
    │   │   └── ModelPromptTooLong                prompt + num_predict over num_ctx (found after)
    │   ├── ModelLoadError                        llama.cpp could not load the GGUF
    │   ├── ModelTruncated                        reply cut at num_predict: never a result
    │   └── ModelOutputError                      empty / unparseable / schema-invalid output
    │       └── ModelCopiedInput                  the verdict's reason is copied from the issue
    ├── StoreError                        exit 5  the store (a file or a server) cannot be opened
    ├── EvalBelowThreshold                exit 6  ``triage-bot eval`` missed a --min/--max bound
    └── GitHubError                       exit 4
        ├── GitHubAuthError                       401, or 403 that is not a rate limit
        ├── GitHubNotFound                        404 (issue deleted, repo renamed, no access)
        ├── GitHubRateLimited                     403/429 primary or secondary rate limit
        └── GitHubUnavailable                     5xx or transport error after retries

The ``kind`` attribute is a short stable string stored with gate decisions (``error_kind``).
"""

from __future__ import annotations

__all__ = [
    "BotError",
    "ConfigError",
    "EvalBelowThreshold",
    "EventError",
    "GitHubAuthError",
    "GitHubError",
    "GitHubNotFound",
    "GitHubRateLimited",
    "GitHubUnavailable",
    "InvalidRange",
    "ModelCopiedInput",
    "ModelError",
    "ModelLoadError",
    "ModelNotFound",
    "ModelOutputError",
    "ModelPromptTooLong",
    "ModelRequestRejected",
    "ModelTruncated",
    "ModelUnavailable",
    "StoreError",
]


class BotError(Exception):
    """Base of every error triage-bot raises on purpose."""

    exit_code: int = 1
    kind: str = "error"


class ConfigError(BotError):
    """A setting is missing or invalid (flag, action input or environment variable)."""

    exit_code = 2
    kind = "config"


class EventError(BotError):
    """The webhook event file is missing, unreadable, not JSON, or not the payload shape we need."""

    exit_code = 3
    kind = "event"


class InvalidRange(BotError):
    """A maintainer's ``PATH:START-END`` breaks a path or range rule; the message names it."""

    exit_code = 2
    kind = "invalid_range"


class ModelError(BotError):
    """The model could not produce a usable answer. The gate maps every one to validator-error.

    When the call itself ran (a reply cut at ``num_predict``, a prompt over ``num_ctx`` found
    after the call), the error carries what it cost, for the decision or audit row: prompt and
    output tokens, and the model's time (ms); 0 when no call ran or the backend did not say.
    ``prompt_eval_tokens``: of the prompt, the tokens evaluated rather than reused from the
    prompt cache, ``None`` when unknown (``bot.chat.CallUsage``).
    """

    kind = "model"

    def __init__(
        self, message: str = "", *, prompt_tokens: int = 0, output_tokens: int = 0,
        duration_ms: float = 0.0, prompt_eval_tokens: int | None = None,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.output_tokens = output_tokens
        self.duration_ms = duration_ms
        self.prompt_eval_tokens = prompt_eval_tokens


class ModelUnavailable(ModelError):
    """The model server is unreachable, timed out, or answered 5xx (503 busy) after retries."""

    kind = "model_unavailable"


class ModelNotFound(ModelError):
    """The server has no such model (Ollama's 404 for a model not pulled, an OpenAI-compatible
    server's 404), or the GGUF file does not exist."""

    kind = "model_not_found"


class ModelRequestRejected(ModelError):
    """The model server refused the request: a 4xx other than 404 (bad options, a schema it
    cannot read, a key it refuses), or a redirect to another origin."""

    kind = "model_request_rejected"


class ModelPromptTooLong(ModelRequestRejected):
    """The prompt and the role's ``num_predict`` do not fit in its ``num_ctx``, found from the
    prompt tokens the backend reports after the call (:func:`bot.chat.check_prompt_fits`, the
    rule and why). The call ran, so it carries its cost; like a truncated reply it is never a
    result, but a repair turn would only make the prompt longer, so the audit rejects at once."""

    kind = "prompt_too_long"


class ModelLoadError(ModelError):
    """llama.cpp could not load the GGUF file (corrupt file, wrong format, out of memory)."""

    kind = "model_load"


class ModelTruncated(ModelError):
    """Generation stopped at ``num_predict`` (``done_reason == "length"``): never a result.
    The call ran, so the error carries its cost (see :class:`ModelError`)."""

    kind = "truncated"


class ModelOutputError(ModelError):
    """The model's text is empty, not the expected JSON, or fails the strict schema."""

    kind = "unparseable"


class ModelCopiedInput(ModelOutputError):
    """The reply's reason is a verbatim copy of text inside the issue: a pre-filled verdict was
    echoed (prompt injection), so the reply is not the model's judgment."""

    kind = "copied_from_issue"


class StoreError(BotError):
    """The store (a SQLite file or a PostgreSQL server) cannot be opened, migrated or written
    (locked, disk full, corrupt, unreachable)."""

    exit_code = 5
    kind = "store"


class EvalBelowThreshold(BotError):
    """An eval run missed one of its thresholds (``--min-agreement`` and friends)."""

    exit_code = 6
    kind = "eval_threshold"


class GitHubError(BotError):
    """A GitHub API call failed; ``status`` is the HTTP status or ``None`` for transport errors."""

    exit_code = 4
    kind = "github"

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GitHubAuthError(GitHubError):
    """401 bad credentials, or 403 that is not a rate limit (token lacks a permission)."""

    kind = "github_auth"


class GitHubNotFound(GitHubError):
    """404: the issue, label or repository does not exist or the token cannot see it."""

    kind = "github_not_found"


class GitHubRateLimited(GitHubError):
    """403/429 primary or secondary rate limit that outlasted the retry policy."""

    kind = "github_rate_limited"


class GitHubUnavailable(GitHubError):
    """5xx or a transport error (DNS, reset, timeout) that outlasted the retry policy."""

    kind = "github_unavailable"
