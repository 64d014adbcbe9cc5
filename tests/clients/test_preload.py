"""The embedded GGUF loads while the pipeline imports (a one-shot gate in seconds):
which events start the load, that a call during the load waits for it and the file is loaded
once, and that a failed load changes nothing the run reports."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from bot import factory
from bot.cli import main
from bot.clients import embedded, grammar_shortlist
from bot.clients.embedded import EmbeddedChatModel
from bot.config import Settings
from bot.errors import ConfigError, ModelNotFound
from bot.factory import preload_chat_model  # the real one: conftest stubs the module's
from tests.support import ROOT, FakeChatModel
from tests.support.replies import VALID_REPLY

EXAMPLE = ROOT / "examples" / "issues.opened.json"


class SlowLlama:
    """Stands in for ``llama_cpp.Llama``: takes a while to construct, counts constructions."""

    made: ClassVar[list[SlowLlama]] = []

    def __init__(self, **kwargs: Any) -> None:
        time.sleep(0.3)
        self.metadata: dict[str, str] = {}
        SlowLlama.made.append(self)

    def close(self) -> None:
        pass


@pytest.fixture
def slow_llama(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    SlowLlama.made = []
    monkeypatch.setattr(grammar_shortlist, "ShortlistLlama", SlowLlama)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    yield gguf
    with embedded._LOAD_LOCK:
        for key in [k for k in embedded._LOADED if k[0] == str(gguf)]:
            del embedded._LOADED[key]


def _settings(event_name: str, **flags: Any) -> Settings:
    return Settings.resolve(flags, {"GITHUB_EVENT_NAME": event_name})


@pytest.mark.parametrize(
    ("event_name", "loads"),
    [("issues", True), ("pull_request_target", True), ("pull_request", True),
     ("issue_comment", False), ("schedule", False), ("push", False)],
)  # fmt: skip
def test_only_gate_and_audit_events_load_the_model_ahead(
    monkeypatch: pytest.MonkeyPatch, event_name: str, loads: bool
) -> None:
    loaded: list[str] = []
    monkeypatch.setattr(EmbeddedChatModel, "load", lambda self: loaded.append(_thread_name()))
    thread = preload_chat_model(_settings(event_name))
    assert (thread is not None) == loads
    if thread is not None:
        thread.join()
    # the load ran in the preload thread, not on the caller's
    assert loaded == (["triage-bot-preload"] if loads else [])


def test_an_ollama_backend_loads_nothing_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[EmbeddedChatModel] = []
    monkeypatch.setattr(EmbeddedChatModel, "load", lambda self: loaded.append(self))
    assert preload_chat_model(_settings("issues", ollama_host="http://127.0.0.1:11434")) is None
    assert loaded == []


def test_the_binding_is_imported_on_the_callers_thread_and_a_missing_one_loads_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    prepared: list[str] = []
    loaded: list[str] = []
    monkeypatch.setattr(EmbeddedChatModel, "prepare", lambda self: prepared.append(_thread_name()))
    monkeypatch.setattr(EmbeddedChatModel, "load", lambda self: loaded.append(_thread_name()))
    thread = preload_chat_model(_settings("issues"))
    assert thread is not None
    thread.join()
    assert prepared == [threading.current_thread().name]
    assert loaded == ["triage-bot-preload"]

    def missing(self: EmbeddedChatModel) -> None:
        raise ConfigError("llama-cpp-python is not installed")

    monkeypatch.setattr(EmbeddedChatModel, "prepare", missing)
    assert preload_chat_model(_settings("issues")) is None  # the first call reports it
    assert loaded == ["triage-bot-preload"]


def _thread_name() -> str:
    return threading.current_thread().name


def test_a_call_during_the_load_waits_for_it_and_the_file_loads_once(slow_llama: Path) -> None:
    ahead = threading.Thread(target=EmbeddedChatModel(model_path=slow_llama, n_ctx=64).load)
    ahead.start()
    time.sleep(0.05)  # the thread holds the load lock now
    caller = EmbeddedChatModel(model_path=slow_llama, n_ctx=64)
    caller.load()  # what the first chat does: waits, then finds the model loaded
    ahead.join()
    assert len(SlowLlama.made) == 1
    assert embedded._LOADED[(str(slow_llama), 64, False)] is SlowLlama.made[0]


def test_a_missing_file_fails_the_same_with_or_without_the_load_ahead(tmp_path: Path) -> None:
    model = EmbeddedChatModel(model_path=tmp_path / "absent.gguf", n_ctx=64)
    with pytest.raises(ModelNotFound):
        model.load()
    with pytest.raises(ModelNotFound):
        model.load()  # nothing was kept from the failed load


def _untimed(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("time:")]


def _run_example(tmp_path: Path) -> Any:
    return CliRunner().invoke(
        main,
        ["run", "--dry-run", "--event-name", "issues", "--event-path", str(EXAMPLE),
         "--db", str(tmp_path / "t.db")],
    )  # fmt: skip


def test_the_run_command_loads_ahead_and_a_failed_load_changes_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, model: FakeChatModel
) -> None:
    model.enqueue(VALID_REPLY)
    without = _run_example(tmp_path)
    calls: list[str | None] = []

    def failing(settings: Settings) -> threading.Thread:
        calls.append(settings.event_name)

        def load() -> None:
            time.sleep(0.2)
            with contextlib.suppress(ModelNotFound):  # as preload_chat_model's thread does
                raise ModelNotFound("no GGUF file at /nowhere")

        thread = threading.Thread(target=load, name="triage-bot-preload")
        thread.start()
        return thread

    monkeypatch.setattr(factory, "preload_chat_model", failing)
    model.enqueue(VALID_REPLY)
    result = _run_example(tmp_path)
    # the command waited for the load before it printed anything (the load silences fd 2)
    assert not [t for t in threading.enumerate() if t.name == "triage-bot-preload"]
    assert calls == ["issues"]
    assert result.exit_code == 0, result.output
    # the fake model answered; the failure was quiet (only the timing line may differ)
    assert _untimed(result.stdout) == _untimed(without.stdout)
    assert "nowhere" not in result.output


def test_the_preload_threads_imports_leave_github_and_the_stores_to_the_pipeline() -> None:
    """The thread imports ``bot.factory``; were PyGithub or sqlite-utils imported with it, the
    thread would wait on the same imports as the main thread instead of loading the GGUF
    meanwhile (the overlap measured nothing when it did)."""
    code = (
        "import sys, bot.factory; "
        "print(sorted(m for m in ('github', 'sqlite_utils', 'psycopg', 'ollama', 'llama_cpp')"
        " if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"


class _BrokenBinding(types.ModuleType):
    """What importing llama-cpp-python does when its shared library is missing or broken: a
    RuntimeError (llama_cpp._ctypes_extensions), not an ImportError."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError("Failed to load shared library 'libllama.so'")


def test_a_binding_that_does_not_load_is_a_setup_error_and_no_event_crashes_on_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(
        sys.modules, "bot.clients.grammar_shortlist", _BrokenBinding("grammar_shortlist")
    )
    with pytest.raises(ConfigError, match="native library does not load"):
        EmbeddedChatModel(n_ctx=64).prepare()
    # the load ahead says nothing: the event is routed as usual, and a call reports it
    assert preload_chat_model(_settings("issues")) is None
