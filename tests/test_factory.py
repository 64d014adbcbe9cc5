"""The ports built from settings: the model backend table picks an OpenAI-compatible server when
its base URL is set (over the action's default Ollama host too), Ollama when a host is set, else
the embedded backend, per role; the GitHub client needs a token unless it only reads."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from bot import factory
from bot.clients.embedded import EmbeddedChatModel
from bot.clients.ollama_client import OllamaChatModel
from bot.clients.openai_client import OpenAIChatModel
from bot.config import Settings
from bot.errors import ConfigError
from bot.factory import ACTION_OLLAMA_HOST, BACKENDS, backend_for, make_chat_model, make_github
from tests.support import ROOT

HOST = {"OLLAMA_HOST": "http://127.0.0.1:11434"}
BASE_URL = "http://127.0.0.1:8080/v1"


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


def test_the_fallback_takes_whatever_the_other_rows_leave() -> None:
    """One row, the embedded default, has no rule of its own: it is used when no other row is
    selected, wherever it stands in the table."""
    (fallback,) = [b for b in BACKENDS if b.selected is None]
    assert fallback.name == "embedded"
    assert backend_for(Settings.resolve({}, {})) is fallback


BOTH = {"OLLAMA_HOST": "http://ollama.internal:11434", "TRIAGE_OPENAI_BASE_URL": BASE_URL}


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({}, "embedded"),
        (HOST, "ollama"),
        ({"OLLAMA_HOST": "http://ollama.internal:11434"}, "ollama"),
        ({"TRIAGE_OPENAI_BASE_URL": BASE_URL}, "openai"),
        ({**HOST, "TRIAGE_OPENAI_BASE_URL": BASE_URL}, "openai"),
        # what the action passes when only openai-base-url is given
        ({"INPUT_OLLAMA_HOST": ACTION_OLLAMA_HOST, "INPUT_OPENAI_BASE_URL": BASE_URL}, "openai"),
        ({"INPUT_OLLAMA_HOST": ACTION_OLLAMA_HOST, "INPUT_OPENAI_BASE_URL": ""}, "ollama"),
        (BOTH, None),
    ],
)
def test_the_backend_does_not_depend_on_the_rows_order(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], name: str | None
) -> None:
    """Each row says whether the settings select it; the action's default Ollama host yields
    to a base URL, and two backends set otherwise is a configuration error naming both."""
    settings = Settings.resolve({}, env)
    for order in (BACKENDS, tuple(reversed(BACKENDS))):
        monkeypatch.setattr(factory, "BACKENDS", order)
        if name is None:
            with pytest.raises(ConfigError) as caught:
                backend_for(settings)
            assert "TRIAGE_OPENAI_BASE_URL / --openai-base-url" in str(caught.value)
            assert "OLLAMA_HOST / --ollama-host" in str(caught.value)
        else:
            assert backend_for(settings).name == name


def test_the_actions_ollama_host_default_is_the_one_that_yields() -> None:
    inputs = yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))["inputs"]
    assert inputs["ollama-host"]["default"] == ACTION_OLLAMA_HOST
    assert inputs["openai-base-url"]["default"] == ""  # left alone, it selects nothing
    (ollama,) = [b for b in BACKENDS if b.name == "ollama"]
    assert ollama.action_default == ACTION_OLLAMA_HOST


@pytest.mark.parametrize("env", [{}, HOST], ids=["alone", "with an Ollama host"])
def test_a_base_url_selects_the_openai_compatible_server_with_each_roles_model(
    env: dict[str, str],
) -> None:
    """The action always sets an Ollama host: a base URL, when set, wins over its default."""
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
