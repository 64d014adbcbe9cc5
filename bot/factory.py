"""Build the ports from settings: the model backend table, the GitHub client, the store.

The one place that turns :class:`~bot.config.Settings` into the objects the pipelines call: the
runner hands these builders to each job's context (:class:`bot.context.JobContext`), the CLI's
store listings and ``triage-bot eval`` call them, and ``triage-bot doctor`` asks the same
backend table what a runner lacks.

Model backends are rows of :data:`BACKENDS`, chosen by :func:`backend_for`, whatever their
order: an OpenAI-compatible server when a base URL is set, Ollama when a host is set, else the
embedded llama.cpp backend (``--model-path`` or :data:`bot.clients.embedded.DEFAULT_MODEL`).
Both servers set is a configuration error, except the Ollama host the action passes by default,
which yields. A new backend is its module in :mod:`bot.clients` (a :class:`~bot.chat.ChatModel`)
and one row here: how it is chosen, built, checked and preloaded. A store is a row of
:data:`bot.stores.STORES`. Heavy imports happen when what needs them is built: llama_cpp at
the embedded model's first load, PyGithub in :func:`make_github`, the stores' libraries in
:func:`make_store`. So importing this module is quick, which lets the CLI's preload thread
(:func:`preload_chat_model`) start loading the GGUF while the main thread imports the pipeline,
instead of waiting for it on the same imports.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.chat import ChatModel, ModelRole
from bot.clients.embedded import EmbeddedChatModel, default_model_path
from bot.clients.prompt_cache import PromptCache
from bot.config import EMBEDDED_N_CTX, Settings
from bot.errors import BotError, ConfigError
from bot.history.protocol import HistoryStore
from bot.stores import StoreKind, shown_store, store_kind
from bot.urls import shown_url

if TYPE_CHECKING:
    from bot.clients.github_client import PyGithubClient

__all__ = [
    "ACTION_OLLAMA_HOST",
    "BACKENDS",
    "Backend",
    "ModelRole",
    "backend_for",
    "load",
    "make_chat_model",
    "make_github",
    "make_store",
    "model_concurrency",
    "preload_chat_model",
    "store_for",
]


@dataclass(frozen=True)
class Backend:
    """One model backend as the factory sees it.

    Attributes:
        name: the backend's name (``openai``, ``ollama``, ``embedded``).
        selected: whether these settings choose it; ``None`` for the one fallback row, used
            when no other row is selected.
        build: the :class:`~bot.chat.ChatModel` for a role; no I/O until its first call.
        check: ``triage-bot doctor``'s look at it on this runner: whether a job could use it
            now, and what was found (one line, never a secret); a
            :class:`~bot.errors.BotError` it raises is the doctor's FAIL line.
        concurrent: whether the backend takes several calls at once (a server: up to
            ``model_concurrency``); the embedded model takes one at a time.
        preload: readies what the first call would otherwise wait for (the embedded GGUF):
            runs on the caller's thread (imports) and returns the load, which
            :func:`preload_chat_model` runs in a thread; ``None`` when the backend has
            nothing to load in this process (a server's model).
        setting: the setting that selects it, as an error names it.
        action_default: the setting's value when the action's input is left alone: at it,
            the row yields to another selected row.
    """

    name: str
    selected: Callable[[Settings], bool] | None
    build: Callable[[Settings, ModelRole], ChatModel]
    check: Callable[[Settings], tuple[bool, str]]
    concurrent: bool = False
    preload: Callable[[Settings], Callable[[], None]] | None = None
    setting: str = ""
    action_default: str | None = None

    def by_default(self, settings: Settings) -> bool:
        """Whether only the action's default value selects this row."""
        value = getattr(settings, self.setting, None) if self.setting else None
        return self.action_default is not None and value == self.action_default


def _ollama(settings: Settings, role: ModelRole) -> ChatModel:
    """The validator uses ``validator_model``, the auditor ``audit_model`` (falling back to the
    validator's tag)."""
    from bot.clients.ollama_client import OllamaChatModel  # ollama and httpx only when used

    return OllamaChatModel(
        host=settings.ollama_host or "",  # this row is selected only when a host is set
        model=_server_model(settings, role),
        timeout_s=settings.model_timeout_s,
        retry=settings.model_retry,
    )


def _server_model(settings: Settings, role: ModelRole) -> str:
    """The model a server backend runs for a role: the auditor's when set, else the
    validator's."""
    if role == "auditor" and settings.audit_model:
        return settings.audit_model
    return settings.validator_model


def _server_models(settings: Settings) -> list[str]:
    """The models a server backend's jobs call: the validator's and the auditor's, sorted."""
    return sorted({_server_model(settings, "validator"), _server_model(settings, "auditor")})


def _tag(name: str) -> str:
    return name if ":" in name else f"{name}:latest"


def _ollama_check(settings: Settings) -> tuple[bool, str]:
    """Ollama answers and has the validator's and the auditor's models pulled (a tag without
    ``:`` means ``:latest``, as in Ollama).

    Raises:
        ModelError: Ollama is unreachable or answered an error.
    """
    from bot.clients.ollama_client import ollama_models

    wanted = _server_models(settings)
    pulled = {_tag(m) for m in ollama_models(settings.ollama_host or "")}
    missing = [m for m in wanted if _tag(m) not in pulled]
    if missing:
        pulls = "; ".join(f"ollama pull {m}" for m in missing)
        return False, f"Ollama answers but lacks {', '.join(missing)} ({pulls})"
    return True, f"Ollama answers; pulled: {', '.join(wanted)}"


def _openai(settings: Settings, role: ModelRole) -> ChatModel:
    """The validator uses ``validator_model``, the auditor ``audit_model`` (falling back to the
    validator's), as the server names them."""
    from bot.clients.openai_client import OpenAIChatModel  # openai only when used

    return OpenAIChatModel(
        base_url=settings.openai_base_url or "",  # this row is selected only when a URL is set
        model=_server_model(settings, role),
        api_key=settings.openai_api_key,
        timeout_s=settings.model_timeout_s,
        retry=settings.model_retry,
    )


def _openai_check(settings: Settings) -> tuple[bool, str]:
    """The OpenAI-compatible server answers ``/v1/models``, lists the validator's and the
    auditor's models, and generates a token of each (no call to a model it does not list).

    Raises:
        ModelError: the server is unreachable, refuses the key, or a call failed.
    """
    from bot.clients.openai_client import openai_models, openai_one_token

    base_url, key = settings.openai_base_url or "", settings.openai_api_key
    where = f"OpenAI-compatible server {shown_url(base_url)}"
    wanted = _server_models(settings)
    served = openai_models(base_url, key, timeout_s=settings.model_timeout_s)
    missing = [m for m in wanted if m not in served]
    if missing:
        listed = ", ".join(sorted(served)[:10]) or "none"
        return False, (
            f"{where} answers but does not serve {', '.join(missing)} (it lists: {listed}); "
            "set --model / --audit-model to a listed id"
        )
    times = [
        f"{m} {openai_one_token(base_url, key, m, timeout_s=settings.model_timeout_s):.0f} ms"
        for m in wanted
    ]
    return True, f"{where} answers; one-token call: {', '.join(times)}"


def _embedded(settings: Settings, role: ModelRole) -> EmbeddedChatModel:
    """Both roles share one loaded GGUF, loaded with the largest role context. The prompt
    cache's folder is created or checked here, so a folder others may write fails the run
    before any model work (:mod:`bot.clients.prompt_cache`).

    Raises:
        ConfigError: the prompt cache folder is not this runner's user's alone.
    """
    cache = None
    if settings.prompt_cache_mb > 0:
        cache = PromptCache(settings.prompt_cache_dir, max_bytes=settings.prompt_cache_mb << 20)
        cache.folder()
    return EmbeddedChatModel(
        model_path=settings.model_path,
        models_dir=settings.models_dir,
        n_ctx=EMBEDDED_N_CTX,
        prompt_cache=cache,
        repack_weights=settings.repack_weights,
    )


def _embedded_check(settings: Settings) -> tuple[bool, str]:
    """The GGUF file is there (``--model-path``, or the default in ``TRIAGE_MODELS``), and its
    prompt cache folder is this user's alone (:mod:`bot.clients.prompt_cache`).

    Raises:
        ConfigError: the default model is not set up in ``TRIAGE_MODELS``.
    """
    path = settings.model_path or default_model_path(settings.models_dir)
    if not Path(path).is_file():
        return False, f"no GGUF file at {path}"
    found = f"embedded GGUF {path} ({Path(path).stat().st_size / 1e6:.0f} MB)"
    if settings.prompt_cache_mb > 0:
        cache = PromptCache(settings.prompt_cache_dir, max_bytes=settings.prompt_cache_mb << 20)
        try:
            cache.folder()
        except ConfigError as exc:
            return False, f"{found}; {exc}"
        found += f"; prompt cache {cache.directory} (private)"
    return True, found


def _embedded_preload(settings: Settings) -> Callable[[], None]:
    """Both roles share one GGUF: import llama-cpp-python here, load in the thread."""
    model = _embedded(settings, "validator")
    model.prepare()
    return model.load


ACTION_OLLAMA_HOST = "http://127.0.0.1:11434"
"""action.yml's ``ollama-host`` default: the action passes it whenever the input is left alone."""

BACKENDS: tuple[Backend, ...] = (
    Backend(
        "openai",
        selected=lambda s: bool(s.openai_base_url),
        build=_openai,
        check=_openai_check,
        concurrent=True,
        setting="openai_base_url",
    ),
    Backend(
        "ollama",
        selected=lambda s: bool(s.ollama_host),
        build=_ollama,
        check=_ollama_check,
        concurrent=True,
        setting="ollama_host",
        action_default=ACTION_OLLAMA_HOST,
    ),
    Backend(
        "embedded",
        selected=None,
        build=_embedded,
        check=_embedded_check,
        preload=_embedded_preload,
    ),
)
"""The model backends; their order decides nothing (:func:`backend_for`)."""


def backend_for(settings: Settings) -> Backend:
    """The one :data:`BACKENDS` row these settings select, else the fallback row. A row
    selected only by its action default yields to another selected row.

    Raises:
        ConfigError: more than one row is selected; the message names their settings.
    """
    chosen = [b for b in BACKENDS if b.selected is not None and b.selected(settings)]
    chosen = [b for b in chosen if not b.by_default(settings)] or chosen
    if len(chosen) > 1:
        named = " and ".join(_setting_names(b) for b in chosen)
        raise ConfigError(
            f"{named} each choose a model backend ({', '.join(b.name for b in chosen)}): "
            "set only one"
        )
    if chosen:
        return chosen[0]
    return next(b for b in BACKENDS if b.selected is None)


def _setting_names(backend: Backend) -> str:
    """A row's setting as people set it (``TRIAGE_OPENAI_BASE_URL / --openai-base-url``)."""
    from bot.settings_table import SETTINGS

    spec = next((s for s in SETTINGS if s.name == backend.setting), None)
    if spec is None:
        return f"the {backend.name} backend's setting"
    names = " / ".join([spec.env, *([spec.flag] if spec.flag else [])])
    return f"{names} (action input {spec.action_input})" if spec.action_input else names


def model_concurrency(settings: Settings) -> int:
    """How many model calls to send at once: ``model_concurrency`` for a server backend, 1 for
    the embedded model (one llama.cpp context in this process).

    Raises:
        ConfigError: two backends are selected (:func:`backend_for`).
    """
    return settings.model_concurrency if backend_for(settings).concurrent else 1


def make_chat_model(settings: Settings, role: ModelRole) -> ChatModel:
    """The :class:`~bot.chat.ChatModel` for a role from the backend these settings select
    (:func:`backend_for`; no model I/O until the first call).

    Raises:
        ConfigError: two backends are selected, or the embedded backend's prompt cache folder
            is not this user's alone.
    """
    return backend_for(settings).build(settings, role)


def preload_chat_model(settings: Settings) -> threading.Thread | None:
    """Start loading the selected backend's model, for the events whose pipelines call one
    (:data:`bot.events.MODEL_EVENTS`): a one-shot job is a fresh process, and the load need
    not wait for the pipeline's imports.

    The backend's Python modules are imported on the calling thread, then the load runs in a
    thread (not a daemon: llama.cpp must not be torn down mid-load) while the caller imports
    the pipeline: imports on two threads only take turns for the interpreter, a load in
    llama.cpp runs beside them (what that saves: docs/performance.md). A later call in the
    process finds the model loaded, or waits for the load in progress
    (:meth:`bot.clients.embedded.EmbeddedChatModel.load`). A failed import or load is not
    reported here: the first call loads again and raises the same error.

    Returns:
        The loading thread, or ``None`` when nothing is loaded ahead. Join it before printing
        anything: while llama.cpp loads, file descriptors 1 and 2 and ``sys.stdout`` /
        ``sys.stderr`` are pointed at the null device for the whole process (the backend's
        own quiet load and llama-cpp-python's ``verbose=False``).
    """
    from bot.events import MODEL_EVENTS

    if settings.event_name not in MODEL_EVENTS:
        return None
    backend = backend_for(settings)
    if backend.preload is None:
        return None
    try:
        load = backend.preload(settings)
    except BotError:
        return None

    def run() -> None:
        # whatever fails here fails again in the first call, which loads again and reports it
        with contextlib.suppress(Exception):
            load()

    thread = threading.Thread(target=run, name="triage-bot-preload")
    thread.start()
    return thread


def make_github(
    settings: Settings,
    *,
    token_required: bool = True,
    sleep: Callable[[float], None] | None = None,
) -> PyGithubClient:
    """The GitHub client for these settings.

    Args:
        token_required: ``False`` for read-only dry runs (public repositories can be read
            without a token, at GitHub's low anonymous rate limit).
        sleep: a patient client for long reads (``triage-bot dataset``): it waits through
            ``sleep`` for a rate limit's reset, up to the hour GitHub's window lasts.

    Raises:
        ConfigError: no token (``GITHUB_TOKEN`` or the Action's ``token`` input).
    """
    if not settings.github_token and token_required:
        raise ConfigError(
            "no GitHub token: set GITHUB_TOKEN (or the action's token input), or use --dry-run"
        )
    from bot.clients.github_client import (  # PyGithub and requests when used
        RATE_LIMIT_WINDOW_S,
        PyGithubClient,
    )

    patient: dict[str, Any] = {}
    if sleep is not None:
        patient = {"sleep": sleep, "max_rate_limit_wait_s": RATE_LIMIT_WINDOW_S}
    return PyGithubClient(
        token=settings.github_token,
        base_url=settings.github_api_url,
        retries=settings.github_retries,
        backoff_s=settings.github_backoff_s,
        login=settings.bot_login,
        redact=settings.redactor(),
        **patient,
    )


def store_for(settings: Settings) -> tuple[StoreKind, str]:
    """The :data:`bot.stores.STORES` row of ``settings.db_path`` and its target (``:memory:``
    when unset).

    Raises:
        ConfigError: no store accepts the target.
    """
    target = str(settings.db_path) if settings.db_path else ":memory:"
    try:
        kind = store_kind(target)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if kind is None:
        raise ConfigError(f"no store accepts {shown_store(target)}")
    return kind, target


def load(ref: str) -> Any:
    """The object a ``module:name`` reference of a store row names, its module imported."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def make_store(settings: Settings, *, read_only: bool = False) -> HistoryStore:
    """Open the store ``settings.db_path`` names (:func:`store_for`): for writing (created and
    migrated), or ``read_only`` (dry runs, ``history``, ``stats``: nothing written).

    Raises:
        StoreError: the store cannot be opened or migrated, or a newer triage-bot wrote it.
    """
    kind, target = store_for(settings)
    store: HistoryStore = load(kind.opens)(target, read_only=read_only, redact=settings.redactor())
    return store
