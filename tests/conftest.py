"""Shared fixtures: a clean environment, a scriptable fake model, payloads, cassettes."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import vcr

from bot.chat import ChatMessage, ChatResult, RoleOptions
from bot.config import ENV_VARS
from bot.errors import ModelError

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
CASSETTES = ROOT / "cassettes"

_EXTRA_ENV = ("GITHUB_ACTIONS", "CI", "RUNNER_TEMP", "XDG_DATA_HOME")

TIMINGS: list[tuple[str, float]] = []
"""(what, ms) of real-model runs, printed at the end of the test session."""


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMINGS:
        terminalreporter.section("real-model timings")
        for what, ms in TIMINGS:
            terminalreporter.write_line(f"{ms:9.0f} ms  {what}")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No variable the bot reads leaks in from the developer's shell or CI, and the default
    store lands in the test's own folder, never in the developer's home."""
    for variables in ENV_VARS.values():
        for var in variables:
            monkeypatch.delenv(var, raising=False)
    for var in _EXTRA_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


@dataclass
class FakeChatModel:
    """A :class:`ChatModel` that replays queued replies and records every call."""

    name: str = "fake-model"
    queue: list[str | ModelError] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)

    def enqueue(self, *replies: str | ModelError) -> FakeChatModel:
        self.queue.extend(replies)
        return self

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        options: RoleOptions,
        schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        self.history.append({"messages": list(messages), "options": options, "schema": schema})
        if not self.queue:
            raise AssertionError("FakeChatModel called more often than replies were queued")
        reply = self.queue.pop(0)
        if isinstance(reply, ModelError):
            raise reply
        return ChatResult(
            text=reply,
            done_reason="stop",
            model=self.name,
            prompt_tokens=100,
            output_tokens=20,
            duration_ms=5.0,
        )


@pytest.fixture
def fake_model() -> FakeChatModel:
    return FakeChatModel()


def load_webhook(name: str) -> dict[str, Any]:
    """A copy of a real webhook payload from tests/data/webhooks/ (see its README)."""
    data: dict[str, Any] = json.loads((DATA / "webhooks" / f"{name}.json").read_text("utf-8"))
    return copy.deepcopy(data)


def write_payload(tmp_path: Path, payload: dict[str, Any], name: str = "event.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def cassette(name: str, captured: list[Any] | None = None, *, repeat: bool = False) -> Any:
    """Replay-only vcrpy context for ``cassettes/<name>.yaml`` (no network, auth filtered).

    ``repeat`` lets one recorded answer serve every request that matches it (a model that
    answers the repair turn the same way as the first).

    ``captured``, when given, receives the live requests the code under test sends, in order,
    so tests can assert on what goes over the wire. vcrpy may present one live request to the
    matcher more than once, so consecutive duplicates are collapsed: count requests with the
    cassette's ``play_count``, not with ``captured``.
    """

    def live(r1: Any, _r2: Any) -> None:
        if captured is None:
            return
        key = (r1.method, r1.uri, r1.body)
        if not captured or (captured[-1].method, captured[-1].uri, captured[-1].body) != key:
            captured.append(r1)

    recorder = vcr.VCR(
        cassette_library_dir=str(CASSETTES),
        record_mode="none",
        match_on=["method", "scheme", "host", "port", "path", "query", "live"],
        filter_headers=["authorization"],
        decode_compressed_response=True,
    )
    recorder.register_matcher("live", live)
    return recorder.use_cassette(f"{name}.yaml", allow_playback_repeats=repeat)
