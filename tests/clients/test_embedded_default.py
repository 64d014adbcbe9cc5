"""The embedded default model is Qwen2.5-Coder 1.5B, set up by scripts/setup.sh."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.clients.embedded import (
    DEFAULT_MODEL,
    EmbeddedChatModel,
    default_model_path,
    smoke_model_path,
)
from bot.config import Settings
from bot.errors import ModelNotFound
from bot.factory import make_chat_model
from tests.support import ROOT


def test_a_missing_default_says_how_to_set_it_up(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound, match=re.escape("run scripts/setup.sh")) as info:
        default_model_path(tmp_path)
    assert info.value.exit_code == 1
    assert "missing" in str(info.value)


def test_a_partial_file_is_never_loaded(tmp_path: Path) -> None:
    (tmp_path / DEFAULT_MODEL.name).write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(ModelNotFound, match="104 bytes"):
        default_model_path(tmp_path)


def test_the_models_folder_is_a_setting(tmp_path: Path) -> None:
    settings = Settings.resolve({}, {"TRIAGE_MODELS": str(tmp_path)})
    assert settings.models_dir == tmp_path
    model = make_chat_model(settings, "validator")
    assert isinstance(model, EmbeddedChatModel)
    assert model.name == DEFAULT_MODEL.name
    with pytest.raises(ModelNotFound, match=re.escape(str(tmp_path))):
        model._llm()


def test_setup_fetches_the_default_and_checks_the_same_hash() -> None:
    """scripts/fetch_qwen.sh and bot/clients/embedded.py name one file and one SHA-256."""
    script = (ROOT / "scripts" / "fetch_qwen.sh").read_text("utf-8")
    assert f'SHA256="{DEFAULT_MODEL.sha256}"' in script
    assert DEFAULT_MODEL.name in script
    assert "fetch_qwen.sh" in (ROOT / "scripts" / "setup.sh").read_text("utf-8")


@pytest.mark.model
def test_the_gguf_is_loaded_without_a_repacked_copy_unless_the_setting_asks() -> None:
    """The repacked copy cost 1.3 s of every load and sped up nothing measured on
    the project's runner, so by default the model computes on the mapped file;
    ``TRIAGE_REPACK_WEIGHTS`` brings the copy back. The amended library default is only for
    that one load."""
    import llama_cpp.llama_cpp as native

    from bot.clients.grammar_shortlist import ShortlistLlama

    defaults = native.llama_model_default_params
    settings = Settings.resolve({}, {"TRIAGE_MODEL_PATH": str(smoke_model_path())})
    llm = make_chat_model(settings, "validator")._llm()  # type: ignore[attr-defined]
    assert isinstance(llm, ShortlistLlama)
    assert llm.model_params.use_extra_bufts is False
    assert native.llama_model_default_params is defaults
    assert native.llama_model_default_params().use_extra_bufts is True

    settings = Settings.resolve(
        {}, {"TRIAGE_MODEL_PATH": str(smoke_model_path()), "TRIAGE_REPACK_WEIGHTS": "true"}
    )
    repacked = make_chat_model(settings, "validator")._llm()  # type: ignore[attr-defined]
    assert repacked is not llm
    assert repacked.model_params.use_extra_bufts is True
