"""The ports built from settings: the model backend table picks Ollama when a host is set, else
the embedded backend, per role; the GitHub client needs a token unless it only reads."""

from __future__ import annotations

import pytest

from bot.clients.embedded import EmbeddedChatModel
from bot.clients.ollama_client import OllamaChatModel
from bot.config import Settings
from bot.errors import ConfigError
from bot.factory import BACKENDS, make_chat_model, make_github

HOST = {"OLLAMA_HOST": "http://127.0.0.1:11434"}


def test_a_host_selects_ollama_with_each_roles_tag() -> None:
    settings = Settings.resolve(
        {"validator_model": "qwen2.5-coder:1.5b", "audit_model": "qwen2.5-coder:7b"}, HOST
    )
    validator = make_chat_model(settings, "validator")
    auditor = make_chat_model(settings, "auditor")
    assert isinstance(validator, OllamaChatModel)
    assert isinstance(auditor, OllamaChatModel)
    assert (validator.name, auditor.name) == ("qwen2.5-coder:1.5b", "qwen2.5-coder:7b")


def test_the_auditor_falls_back_to_the_validators_tag() -> None:
    settings = Settings.resolve({"validator_model": "qwen2.5-coder:1.5b"}, HOST)
    assert make_chat_model(settings, "auditor").name == "qwen2.5-coder:1.5b"


def test_no_host_selects_the_embedded_backend_for_both_roles() -> None:
    settings = Settings.resolve({}, {})
    for role in ("validator", "auditor"):
        assert isinstance(make_chat_model(settings, role), EmbeddedChatModel)


def test_the_last_backend_takes_whatever_the_others_leave() -> None:
    """``make_chat_model`` always finds a row: the last one, the embedded default, selects any
    settings (a new backend goes in front of it)."""
    assert BACKENDS[-1].name == "embedded"
    assert BACKENDS[-1].selected(Settings.resolve({}, HOST))
    assert BACKENDS[-1].selected(Settings.resolve({}, {}))


def test_writing_to_github_needs_a_token_and_reading_does_not() -> None:
    settings = Settings.resolve({}, {})
    with pytest.raises(ConfigError, match="no GitHub token"):
        make_github(settings)
    make_github(settings, token_required=False)
