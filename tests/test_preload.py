"""The embedded GGUF loads while the pipeline imports (issue 19, a one-shot gate in seconds):
which events start the load, that a call during the load waits for it and the file is loaded
once, and that a failed load changes nothing the run reports."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import llama_cpp
import pytest
from click.testing import CliRunner

from bot import factory
from bot.cli import main
from bot.clients import embedded
from bot.clients.embedded import EmbeddedChatModel
from bot.config import Settings
from bot.errors import ModelNotFound
from bot.factory import preload_chat_model  # the real one: conftest stubs the module's
from tests.replies import VALID_REPLY
from tests.support import ROOT, FakeChatModel

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
    monkeypatch.setattr(llama_cpp, "Llama", SlowLlama)
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
    loaded: list[EmbeddedChatModel] = []
    monkeypatch.setattr(EmbeddedChatModel, "load", lambda self: loaded.append(self))
    preload_chat_model(_settings(event_name))
    assert len(loaded) == (1 if loads else 0)


def test_an_ollama_backend_loads_nothing_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    loaded: list[EmbeddedChatModel] = []
    monkeypatch.setattr(EmbeddedChatModel, "load", lambda self: loaded.append(self))
    preload_chat_model(_settings("issues", ollama_host="http://127.0.0.1:11434"))
    assert loaded == []


def test_a_call_during_the_load_waits_for_it_and_the_file_loads_once(slow_llama: Path) -> None:
    ahead = threading.Thread(target=EmbeddedChatModel(model_path=slow_llama, n_ctx=64).load)
    ahead.start()
    time.sleep(0.05)  # the thread holds the load lock now
    caller = EmbeddedChatModel(model_path=slow_llama, n_ctx=64)
    caller.load()  # what the first chat does: waits, then finds the model loaded
    ahead.join()
    assert len(SlowLlama.made) == 1
    assert embedded._LOADED[(str(slow_llama), 64)] is SlowLlama.made[0]


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

    def failing(settings: Settings) -> None:
        calls.append(settings.event_name)
        time.sleep(0.2)
        raise ModelNotFound("no GGUF file at /nowhere")

    monkeypatch.setattr(factory, "preload_chat_model", failing)
    model.enqueue(VALID_REPLY)
    result = _run_example(tmp_path)
    for thread in threading.enumerate():
        if thread.name == "triage-bot-preload":
            thread.join()
    assert calls == ["issues"]
    assert result.exit_code == 0, result.output
    # the fake model answered; the failure was quiet (only the timing line may differ)
    assert _untimed(result.stdout) == _untimed(without.stdout)
    assert "nowhere" not in result.output
