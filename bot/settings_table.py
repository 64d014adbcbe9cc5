"""The settings table: every setting a person sets, declared once.

Each field of :class:`SettingsTable` is one row: its name, type and default, then in
:func:`~bot.setting_spec.setting` its variable, CLI flag (and the commands that take it), action
input, value rule and help. From the table come :class:`bot.config.Settings` (which adds the
knobs only code sets), the order variables are read in (:data:`ENV_VARS`), the CLI's flags
(``bot/cli.py``), the README's configuration table and action.yml's inputs-as-env (both printed
by ``scripts/settings_table.py`` and checked by the tests). Adding a setting is one row here,
then its use, then ``scripts/settings_table.py --write``.

Only the standard library loads at import: the CLI reads this table when it starts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bot.setting_spec import (
    Factory,
    SettingSpec,
    api_key,
    comma_list,
    existing_file,
    github_login,
    home_path,
    http_url,
    int_at_least,
    int_between,
    positive_seconds,
    repository_path,
    setting,
    share,
    table_of,
    true_or_false,
)
from bot.stores import shown_store, store_target
from bot.urls import shown_url

__all__ = [
    "DEFAULT_OLLAMA_MODEL",
    "ENV_VARS",
    "SETTINGS",
    "SettingsTable",
    "default_db_path",
    "default_models_dir",
    "default_prompt_cache_dir",
]

DEFAULT_OLLAMA_MODEL = "qwen2.5-coder:1.5b"

# The commands that take a flag (names of bot/cli.py commands; a test checks them).
_JOBS = ("run", "audit", "backlog")  # the jobs that gate or audit
_MODEL = (*_JOBS, "eval", "calibrate", "doctor")  # every job that calls a model, and the doctor
_AUDIT = ("run", "audit", "eval")  # every job that audits
_STORE = (*_JOBS, "history", "stats", "doctor", "settle", "index")  # every job that opens it


def default_store_target(env: Mapping[str, str]) -> str:
    """:func:`default_db_path` as a store target."""
    return str(default_db_path(env))


def default_db_path(env: Mapping[str, str]) -> Path:
    """The store's default path, outside the Actions workspace (the runner cleans it):
    ``$XDG_DATA_HOME/triage-bot/triage.db``, falling back to ``~/.local/share``."""
    base = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "triage-bot" / "triage.db"


def default_models_dir() -> Path:
    """``~/.cache/triage-bot/models``: where ``scripts/fetch_qwen.sh`` and ``fetch_minilm.sh``
    write (the CLI passes ``Settings.models_dir``, which reads ``TRIAGE_MODELS``)."""
    return Path.home() / ".cache" / "triage-bot" / "models"


def default_prompt_cache_dir() -> Path:
    """``~/.cache/triage-bot/prompt-cache``: the embedded backend's prompt cache, beside the
    models (:mod:`bot.clients.prompt_cache`)."""
    return Path.home() / ".cache" / "triage-bot" / "prompt-cache"


ACTIONS_BOT_LOGIN_EXPRESSION = (
    "inputs.bot-login || (inputs.token == github.token && 'github-actions[bot]' || '')"
)
"""What action.yml passes as ``bot-login``: the input when set, else ``github-actions[bot]``
when the ``token`` input is the job's own ``github.token`` (its writes appear as that Bot), else
nothing (an app's or a person's token: the bot asks GitHub who it is)."""


@dataclass(frozen=True)
class SettingsTable:
    """The settings a person sets (flags, action inputs, variables); one field per row.

    Attributes are documented by each row's ``help`` (the README's configuration table).
    """

    github_token: str | None = setting(
        None,
        env="GITHUB_TOKEN",
        action_input="token",
        secret=True,
        help="token; needs `issues: write` (and `pull-requests: write` to audit). "
        "Not needed for a `--dry-run` of an issue event; a dry run of a pull request or a "
        "comment command still reads GitHub (the changed files, the commenter's permission)",
    )
    github_api_url: str = setting(
        "https://api.github.com", env="GITHUB_API_URL", help="GitHub Enterprise base URL"
    )
    event_name: str | None = setting(
        None,
        env="GITHUB_EVENT_NAME",
        flag="--event-name",
        commands=("run",),
        help="webhook event name (`issues`, `pull_request_target` …)",
    )
    event_path: Path | None = setting(
        None,
        env="GITHUB_EVENT_PATH",
        flag="--event-path",
        commands=("run",),
        parse=Path,
        help="webhook payload JSON",
    )
    repository: str | None = setting(
        None,
        env="GITHUB_REPOSITORY",
        help="set by Actions: `OWNER/NAME`; a `schedule` event runs `backlog --retry-errors` on "
        "it, then settles its live record",
    )
    commit_sha: str | None = setting(
        None,
        env="GITHUB_SHA",
        help="set by Actions: the commit the workflow runs for; with `GITHUB_REF` naming the "
        "default branch, the repository file is read at this commit, once per commit",
    )
    git_ref: str | None = setting(
        None,
        env="GITHUB_REF",
        help="set by Actions: the branch or tag the workflow runs for (`refs/heads/NAME`)",
    )
    runner_environment: str | None = setting(
        None,
        env="RUNNER_ENVIRONMENT",
        help="set by Actions: `github-hosted` or `self-hosted`; on a GitHub-hosted runner the "
        "default SQLite store does not outlive the job, so the `schedule` run keeps no live "
        "record",
    )
    step_summary_path: Path | None = setting(
        None,
        env="GITHUB_STEP_SUMMARY",
        parse=Path,
        help="set by Actions: the file the step summary (markdown) is appended to",
    )
    output_path: Path | None = setting(
        None,
        env="GITHUB_OUTPUT",
        parse=Path,
        help="set by Actions: the file the outputs are appended to: `verdict` (`VALID`, "
        "`NEEDS_REFINEMENT`, `ERROR`), `label`, `audits-accepted`, `audits-rejected`; a skipped "
        "event sets them empty/0 and `skipped=true`",
    )
    ollama_host: str | None = setting(
        None,
        env="OLLAMA_HOST",
        flag="--ollama-host",
        commands=_MODEL,
        action_input="ollama-host",
        parse=http_url,
        echo=shown_url,
        help="use Ollama at this URL (no `user:pass@`; a query goes with every request); unset "
        "(and no OpenAI-compatible base URL) = the embedded backend (llama.cpp)",
    )
    openai_base_url: str | None = setting(
        None,
        env="TRIAGE_OPENAI_BASE_URL",
        flag="--openai-base-url",
        commands=_MODEL,
        action_input="openai-base-url",
        parse=http_url,
        echo=shown_url,
        help="use the OpenAI-compatible server at this base URL, up to `/v1` (llama.cpp's "
        "`llama-server`, vLLM, LM Studio, Ollama's `/v1`: `docs/model-servers.md`); wins over the "
        "action's default Ollama host (another Ollama host beside it: exit 2). A query "
        "(`?api-version=…`) goes with every request; no `user:pass@` (the key goes in "
        "`TRIAGE_OPENAI_API_KEY`)",
    )
    openai_api_key: str | None = setting(
        None,
        env="TRIAGE_OPENAI_API_KEY",
        action_input="openai-api-key",
        secret=True,
        parse=api_key,
        help="that server's API key, if it has one (8 or more visible ASCII characters; pass it "
        "from a secret). Never printed: masked and redacted like the token",
    )
    validator_model: str = setting(
        DEFAULT_OLLAMA_MODEL,
        env="TRIAGE_VALIDATOR_MODEL",
        flag="--model",
        commands=_MODEL,
        action_input="validator-model",
        help="the validator's model on a server: an Ollama tag, or the OpenAI-compatible "
        "server's model id (as its `/v1/models` lists it)",
    )
    model_path: Path | None = setting(
        None,
        env="TRIAGE_MODEL_PATH",
        flag="--model-path",
        commands=_MODEL,
        parse=existing_file("GGUF"),
        readme_default="Qwen2.5-Coder 1.5B Q4_K_M in `TRIAGE_MODELS` (set up by "
        "`scripts/setup.sh`)",
        help="GGUF file for the embedded backend",
    )
    models_dir: Path = setting(
        Factory(default_models_dir),
        env="TRIAGE_MODELS",
        parse=home_path,
        readme_default="`~/.cache/triage-bot/models`",
        help="folder `scripts/setup.sh` fetches the embedded default and the title model into",
    )
    prompt_cache_dir: Path = setting(
        Factory(default_prompt_cache_dir),
        env="TRIAGE_PROMPT_CACHE",
        parse=home_path,
        readme_default="`~/.cache/triage-bot/prompt-cache`",
        help="folder where the embedded backend keeps each evaluated system prompt between runs, "
        "so a one-shot run evaluates only the issue's or the code's tokens (created 0700; "
        "another user's folder, or one others may write, is refused with exit 2; every job of "
        "the same OS user can write it: `docs/security.md`)",
    )
    prompt_cache_mb: int = setting(
        512,
        env="TRIAGE_PROMPT_CACHE_MB",
        parse=int_at_least(0, "MB"),
        help="size bound of that folder in MB (oldest entries removed first); 0 turns the cache "
        "off",
    )
    repack_weights: bool = setting(
        False,
        env="TRIAGE_REPACK_WEIGHTS",
        parse=true_or_false,
        help="embedded backend: let llama.cpp copy the weights into its repacked CPU layout at "
        "each load (1.3 s a load with Qwen 1.5B on 2 cores, where it made neither prefill nor "
        "generation faster; try it where `benchmarks/gate.py` says otherwise)",
    )
    model_timeout_s: float = setting(
        120.0,
        env="TRIAGE_MODEL_TIMEOUT",
        parse=positive_seconds,
        help="seconds per request to a model server (Ollama, OpenAI-compatible); the embedded "
        "backend has no deadline",
    )
    model_concurrency: int = setting(
        1,
        env="TRIAGE_MODEL_CONCURRENCY",
        flag="--model-concurrency",
        commands=(*_JOBS, "eval", "calibrate"),
        action_input="model-concurrency",
        parse=int_between(1, 64),
        help="model calls sent at once to a model server (Ollama, OpenAI-compatible) that "
        "batches them (1–64): a backlog's issues, a PR's segments, an eval's items; results, "
        "labels and comments keep their order; the embedded backend always makes one at a time",
    )
    max_body_chars: int = setting(
        6000,
        env="TRIAGE_MAX_BODY_CHARS",
        flag="--max-body-chars",
        commands=("run", "backlog", "settle"),
        parse=int_at_least(200, "characters"),
        help="longest issue body judged, in characters (≥ 200); a longer one is cut visibly",
    )
    dry_run: bool = setting(
        False,
        env="TRIAGE_DRY_RUN",
        flag="--dry-run",
        commands=_JOBS,
        action_input="dry-run",
        parse=true_or_false,
        help="print the plan (verdict, labels or audits, model, tokens, ms); write nothing "
        "(GitHub, store)",
    )
    author_comment: bool = setting(
        True,
        env="TRIAGE_AUTHOR_COMMENT",
        flag="--author-comment",
        commands=("run", "backlog"),
        action_input="author-comment",
        parse=true_or_false,
        help="on `needs-refinement`, post one comment telling the author what to add (edited in "
        "place on later runs, and to say the issue is ready once it is); never on "
        "`validator-error`",
    )
    gate_policy: Path | None = setting(
        None,
        env="TRIAGE_GATE_POLICY",
        flag="--gate-policy",
        commands=("run", "backlog", "eval"),
        parse=existing_file("gate policy"),
        readme_default="the repository file's `gate.policy`, else the policy measured for the "
        "model, else the model's own verdict",
        help="a gate decision policy (JSON, as `triage-bot calibrate` writes it): which signals "
        "decide, chosen for a model by measurement",
    )
    gate_policy_path: str | None = setting(
        None,
        env="TRIAGE_GATE_POLICY_PATH",
        action_input="gate-policy",
        parse=repository_path,
        readme_default="the local `gate_policy`, else the repository file's `gate.policy` …",
        help="a gate decision policy file in the repository (JSON, a path from its root), read "
        "through the API at the default branch like the repository file (the action checks "
        "nothing out); the local `--gate-policy` wins over it",
    )
    types_model: Path | None = setting(
        None,
        env="TRIAGE_TYPES_MODEL",
        flag="--types-model",
        commands=("run", "backlog", "eval"),
        action_input="types-model",
        parse=existing_file("type model"),
        readme_default="the repository file's `types.model`, else none",
        help="a local type model file: the gate adds the type label its guess clears the "
        "threshold for (a bug, a feature request, a question); wins over the repository "
        "file's `types.model`",
    )
    comment_min_precision: float = setting(
        0.8,
        env="TRIAGE_COMMENT_MIN_PRECISION",
        flag="--comment-min-precision",
        commands=("run", "backlog", "stats"),
        action_input="comment-min-precision",
        parse=share,
        help="the author comment is posted only when the needs-refinement precision of this "
        "model, prompt and policy is at least this (0-1): the repository's live record once it "
        "holds 30 settled needs-refinement decisions, the policy's calibrated figure before; "
        "below it, or unmeasured, only the label is set; 0 posts it whatever was measured. "
        "The lower limit of the repository file's measured duplicates.statement must clear "
        "it too before the gate says 'possibly the same as #N'",
    )
    repo_file_path: Path | None = setting(
        None,
        env="TRIAGE_REPO_FILE",
        flag="--repo-file",
        commands=(*_JOBS, "dataset"),
        parse=existing_file("repository configuration"),
        readme_default="the default branch's",
        help="a local `.github/triage-bot.yml` used instead of the default branch's (to try a "
        "file before committing it; read without a request to GitHub)",
    )
    audit_model: str | None = setting(
        None,
        env="TRIAGE_AUDIT_MODEL",
        flag="--audit-model",
        commands=_AUDIT,
        action_input="audit-model",
        readme_default="the validator's",
        help="the auditor's model on a server (Ollama tag or model id)",
    )
    audit_format: str = setting(
        "json",
        env="TRIAGE_AUDIT_FORMAT",
        flag="--audit-format",
        commands=_AUDIT,
        action_input="audit-format",
        choices=("markdown", "json"),
        readme_default="`json` (measured best; the same in the action)",
        help="how the auditor answers: `markdown`, the model writes the seven sections; `json`, "
        "it fills their JSON schema and the bot renders them",
    )
    max_segments: int = setting(
        8,
        env="TRIAGE_MAX_SEGMENTS",
        flag="--max-segments",
        commands=_AUDIT,
        action_input="max-segments",
        parse=int_between(1, 50),
        help="per-PR segment cap (1–50)",
    )
    review_comments: bool = setting(
        True,
        env="TRIAGE_REVIEW_COMMENTS",
        flag="--review-comments",
        commands=("run", "audit"),
        action_input="review-comments",
        parse=true_or_false,
        help="besides the summary comment, post each verified defect on its diff line, in one "
        "`COMMENT` review per head SHA (only findings not posted before; never approves or "
        "requests changes)",
    )
    line_comments_min_acted: float = setting(
        0.3,
        env="TRIAGE_LINE_COMMENTS_MIN_ACTED",
        flag="--line-comments-min-acted",
        commands=("run", "audit", "stats"),
        action_input="line-comments-min-acted",
        parse=share,
        help="line review comments stop once at least 30 settled defects of this model and "
        "prompt version show authors acted on them less often than this (0-1; the summary "
        "comment lists every defect either way and says why); 0 keeps them on",
    )
    skip_globs: tuple[str, ...] = setting(
        (),
        env="TRIAGE_SKIP_GLOBS",
        parse=comma_list,
        help="extra comma-separated globs of files never audited",
    )
    db_path: str | None = setting(
        None,
        env="TRIAGE_DB",
        flag="--db",
        commands=_STORE,
        action_input="db-path",
        parse=store_target,
        echo=shown_store,
        default_from_env=default_store_target,
        readme_default="`~/.local/share/triage-bot/triage.db`",
        help="the store: a SQLite file (the default follows `$XDG_DATA_HOME`), or a "
        "`postgresql://` URL shared by a runner pool",
    )
    settle_budget: int = setting(
        200,
        env="TRIAGE_SETTLE_BUDGET",
        action_input="settle-budget",
        parse=int_between(0, 5000),
        help="GitHub requests the `schedule` run may spend settling the live record (0–5000; "
        "0 turns it off): what maintainers did after the bot's decisions "
        "(docs/live-record.md); it stops there and the next run resumes. Needs a store that "
        "outlives the job (PostgreSQL, or a kept SQLite file)",
    )
    bot_login: str | None = setting(
        None,
        env="TRIAGE_BOT_LOGIN",
        action_input="bot-login",
        action_value=ACTIONS_BOT_LOGIN_EXPRESSION,
        parse=github_login,
        readme_default="the action: `github-actions[bot]` when `token` is the job's "
        "`github.token`; else asked of GitHub once per job",
        help="the login the bot's writes appear as: only comments and labels by this login "
        "are the bot's own (another app's, or a person's, never are). Unset, the bot asks "
        "GitHub (GraphQL `viewer`, one request, when it first must tell); an app's token "
        "writes as `NAME[bot]`, a personal access token as its user",
    )
    doctor: bool = setting(
        False,
        env="TRIAGE_DOCTOR",
        action_input="doctor",
        choices=("true", "false"),
        parse=true_or_false,
        help="the action: `true` runs `triage-bot doctor` (the runner's checks: "
        "`docs/operations.md`) from the action's own venv instead of `triage-bot run`; `true` "
        "or `false` only (another value stops the job with exit 2, never runs it)",
    )


SETTINGS: tuple[SettingSpec, ...] = table_of(SettingsTable)
"""The rows of :class:`SettingsTable`, in order."""

ENV_VARS: dict[str, tuple[str, ...]] = {spec.name: spec.env_vars for spec in SETTINGS}
"""Setting name → the variables read, highest priority first."""
