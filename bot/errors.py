"""The one exception tree; only the CLI turns these into messages and exit codes::

    BotError                              exit 1 unless a subclass says otherwise
    ├── ConfigError                       exit 2  bad flag, missing env var, unreadable setting
    │   └── TypeModelError                        a type model file that cannot be applied
    ├── EventError                        exit 3  event file missing/unreadable/malformed payload
    ├── InvalidRange                      exit 2  a PATH:START-END the audit refuses
    ├── ModelError                        (gate: validator-error label, never an exit)
    │   ├── ModelUnavailable                      unreachable, timeout, 429, 5xx after retries
    │   ├── ModelNotFound                         404: the model is not pulled / a file missing
    │   ├── ModelRequestRejected                  400 and other 4xx: bad options, schema, key
    │   │   └── ModelPromptTooLong                prompt + num_predict over num_ctx (found after)
    │   ├── ModelLoadError                        a model file could not be loaded
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

``kind`` is a stable short string stored with gate decisions (``error_kind``).
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
    "TypeModelError",
]


class BotError(Exception):
    """Base of every error triage-bot raises on purpose."""

    exit_code: int = 1
    kind: str = "error"


class ConfigError(BotError):
    """A setting is missing or invalid (flag, action input or environment variable)."""

    exit_code = 2
    kind = "config"


class TypeModelError(ConfigError):
    """A type model file is unreadable, too large, or not a valid model; the message names the
    file and the problem, never the file's content."""

    kind = "type_model"


class EventError(BotError):
    """The webhook event file is missing, unreadable, or not the payload we need."""

    exit_code = 3
    kind = "event"


class InvalidRange(BotError):
    """A maintainer's ``PATH:START-END`` breaks a path or range rule; the message names it."""

    exit_code = 2
    kind = "invalid_range"


class ModelError(BotError):
    """The model gave no usable answer; the gate labels every one validator-error.

    When the call ran, it carries its cost (tokens, ``duration_ms``); 0 when unknown.
    ``prompt_eval_tokens`` excludes prompt-cache hits; ``None`` when unknown.
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
    """The server answered 404 for the model, or a model file (GGUF, title encoder) is missing."""

    kind = "model_not_found"


class ModelRequestRejected(ModelError):
    """The server answered a 4xx other than 404, or redirected to another origin."""

    kind = "model_request_rejected"


class ModelPromptTooLong(ModelRequestRejected):
    """Prompt plus ``num_predict`` exceeded ``num_ctx``, found after the call (carries its cost)."""

    kind = "prompt_too_long"


class ModelLoadError(ModelError):
    """A model file could not be loaded: the GGUF by llama.cpp (corrupt file, wrong format, out
    of memory), or the title encoder's weights or tokenizer."""

    kind = "model_load"


class ModelTruncated(ModelError):
    """Generation stopped at ``num_predict``: never a result; carries the call's cost."""

    kind = "truncated"


class ModelOutputError(ModelError):
    """The model's text is empty, not the expected JSON, or fails the strict schema."""

    kind = "unparseable"


class ModelCopiedInput(ModelOutputError):
    """The reply's reason copies the issue's text: an injected verdict, not a judgment."""

    kind = "copied_from_issue"


class StoreError(BotError):
    """The store cannot be opened, migrated or written (locked, full, corrupt, unreachable)."""

    exit_code = 5
    kind = "store"


class EvalBelowThreshold(BotError):
    """An eval run missed one of its thresholds (``--min-agreement`` and friends)."""

    exit_code = 6
    kind = "eval_threshold"


class GitHubError(BotError):
    """A GitHub API call failed; ``status`` is ``None`` for a transport error."""

    exit_code = 4
    kind = "github"

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class GitHubUnreadable(GitHubError):
    """GitHub's answer for one resource cannot be read whole, the same on every try: a
    timeline past the client's page limit, pages whose ``next`` loops or leaves the API's
    host, an answer of the wrong shape. Retrying does not help; reading other resources may."""


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
