"""The ports built from settings: the model backend table picks an OpenAI-compatible server when
its base URL is set (over an Ollama host too), Ollama when a host is set, else the embedded
backend, per role; the GitHub client needs a token unless it only reads."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.clients.embedded import EmbeddedChatModel
from bot.clients.ollama_client import OllamaChatModel
from bot.clients.openai_client import OpenAIChatModel
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


@pytest.mark.parametrize("env", [{}, HOST], ids=["alone", "with an Ollama host"])
def test_a_base_url_selects_the_openai_compatible_server_with_each_roles_model(
    env: dict[str, str],
) -> None:
    """The action always sets an Ollama host: a base URL, when set, wins over it."""
    settings = Settings.resolve(
        {"openai_base_url": "http://127.0.0.1:8080/v1/", "validator_model": "qwen2.5-coder-7b",
         "audit_model": "qwen2.5-coder-32b"}, {**env, "TRIAGE_OPENAI_API_KEY": "sk-test-1234"},
    )  # fmt: skip
    validator = make_chat_model(settings, "validator")
    auditor = make_chat_model(settings, "auditor")
    assert isinstance(validator, OpenAIChatModel)
    assert isinstance(auditor, OpenAIChatModel)
    assert (validator.name, auditor.name) == ("qwen2.5-coder-7b", "qwen2.5-coder-32b")
    assert settings.openai_base_url == "http://127.0.0.1:8080/v1"  # the slash dropped
    assert make_chat_model(replace(settings, audit_model=None), "auditor").name == (
        "qwen2.5-coder-7b"
    )


@pytest.mark.parametrize("url", ["127.0.0.1:8080/v1", "ftp://h/v1", "http://h:port/v1", "http://"])
def test_a_base_url_the_bot_cannot_use_is_a_configuration_error(url: str) -> None:
    with pytest.raises(ConfigError, match="TRIAGE_OPENAI_BASE_URL"):
        Settings.resolve({}, {"TRIAGE_OPENAI_BASE_URL": url})


def test_writing_to_github_needs_a_token_and_reading_does_not() -> None:
    settings = Settings.resolve({}, {})
    with pytest.raises(ConfigError, match="no GitHub token"):
        make_github(settings)
    make_github(settings, token_required=False)
