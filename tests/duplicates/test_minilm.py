"""The title encoder against sentence-transformers' vectors, and on any text.

The model comes from ``~/.cache/triage-bot/models`` as ``scripts/setup.sh`` fetches it, as the
embedded default does: a missing model fails these tests, it never skips them.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from tokenizers import Tokenizer

from bot.config import default_models_dir
from bot.duplicates import minilm
from bot.duplicates.minilm import (
    DIMENSIONS,
    TITLE_CHARS,
    TITLE_MODEL_DIR,
    TITLE_MODEL_FILES,
    TITLE_TOKENS,
    TitleEncoder,
    title_encoder,
)
from bot.errors import ModelLoadError, ModelNotFound
from tests.support import ROOT
from tests.support.profiles import FUZZ
from tests.support.title_model_files import BROKEN_WEIGHTS, broken_title_model

REFERENCE = json.loads((ROOT / "tests" / "data" / "minilm" / "reference.json").read_text("utf-8"))
CASES = REFERENCE["cases"]
_ANY_CHAR = st.one_of(st.characters(exclude_categories=()), st.characters(categories=["Cs"]))


@pytest.fixture(scope="module")
def encoder() -> TitleEncoder:
    return title_encoder(default_models_dir())


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    """The model's tokenizer with nothing cut or padded."""
    loaded = Tokenizer.from_file(str(default_models_dir() / TITLE_MODEL_DIR / "tokenizer.json"))
    loaded.no_truncation()
    loaded.no_padding()
    return loaded


def _unit_rows(vectors: np.ndarray, n: int) -> None:
    assert vectors.shape == (n, DIMENSIONS)
    assert vectors.dtype == np.float32
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("case", CASES, ids=[repr(c["title"][:24]) for c in CASES])
def test_a_title_gets_sentence_transformers_vector(
    encoder: TitleEncoder, case: dict[str, Any]
) -> None:
    (got,) = encoder.encode([case["title"]])
    want = np.array(case["vector"], dtype=np.float32)
    assert np.abs(got - want).max() <= 1e-4
    assert float(got @ want) / float(np.linalg.norm(want)) >= 0.9999


def test_the_reference_holds_a_title_past_the_token_limit_and_an_empty_one(
    tokenizer: Tokenizer,
) -> None:
    lengths = [len(tokenizer.encode(c["title"]).ids) for c in CASES]
    assert max(lengths) > TITLE_TOKENS
    assert "" in [c["title"] for c in CASES]


def test_a_batch_gives_each_title_its_own_vector(encoder: TitleEncoder) -> None:
    titles = [c["title"] for c in CASES] * 3 + [f"issue number {i} is slow" for i in range(9)]
    assert len(titles) > minilm.BATCH  # two batches, each padded to its own longest title
    together = encoder.encode(titles)
    _unit_rows(together, len(titles))
    alone = np.vstack([encoder.encode([title]) for title in titles])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    want = np.array([c["vector"] for c in CASES], dtype=np.float32)
    np.testing.assert_allclose(together[: len(CASES)], want, atol=1e-4)


def test_a_title_past_the_limit_is_its_first_tokens(
    encoder: TitleEncoder, tokenizer: Tokenizer
) -> None:
    words = "the quick brown fox jumps over a lazy dog while it rains".split() * 6
    assert all(len(tokenizer.encode(w, add_special_tokens=False).ids) == 1 for w in words)
    kept = TITLE_TOKENS - 2  # [CLS] and [SEP]
    long, first, fewer = (" ".join(words[:n]) for n in (len(words), kept, kept - 1))
    (got,) = encoder.encode([long])
    np.testing.assert_allclose(got, encoder.encode([first])[0], atol=1e-6)
    assert np.abs(got - encoder.encode([fewer])[0]).max() > 1e-3


def test_a_huge_title_is_read_to_its_first_characters_only(encoder: TitleEncoder) -> None:
    huge = "flaky test " * 1_000_000
    (got,) = encoder.encode([huge])
    np.testing.assert_allclose(got, encoder.encode([huge[:TITLE_CHARS]])[0], atol=1e-6)
    np.testing.assert_allclose(got, encoder.encode(["flaky test " * 20])[0], atol=1e-6)


def test_no_titles_give_no_rows(encoder: TitleEncoder) -> None:
    got = encoder.encode([])
    assert got.shape == (0, DIMENSIONS)
    assert got.dtype == np.float32


@FUZZ
@given(st.text(_ANY_CHAR))
@example("")
@example("\x00")
@example("\ud800")
@example("a\udfffb\x00\u200b\ufffd")
@example("\ud83d\ude00")  # a surrogate pair as two code points
def test_any_text_gets_a_finite_unit_vector(encoder: TitleEncoder, text: str) -> None:
    _unit_rows(encoder.encode([text]), 1)


@FUZZ
@given(st.lists(st.text(_ANY_CHAR, max_size=80), max_size=4))
def test_any_titles_get_one_unit_row_each(encoder: TitleEncoder, titles: list[str]) -> None:
    vectors = encoder.encode(titles)
    if titles:
        _unit_rows(vectors, len(titles))
    assert vectors.shape == (len(titles), DIMENSIONS)


def test_the_encoder_is_loaded_once_per_folder_whatever_the_threads(tmp_path: Path) -> None:
    folder = tmp_path / TITLE_MODEL_DIR
    folder.mkdir()
    for file in TITLE_MODEL_FILES:
        (folder / file.name).symlink_to(default_models_dir() / TITLE_MODEL_DIR / file.name)
    barrier, got = threading.Barrier(4), []

    def load() -> None:
        barrier.wait()
        got.append(title_encoder(tmp_path))

    threads = [threading.Thread(target=load) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == 4
    assert all(e is got[0] for e in got)
    assert title_encoder(tmp_path) is got[0]
    assert title_encoder(default_models_dir()) is not got[0]


def test_a_missing_model_names_its_folder_and_the_fetch_script(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFound, match=re.escape(str(tmp_path / TITLE_MODEL_DIR))) as info:
        title_encoder(tmp_path)
    assert "missing" in str(info.value)
    assert "scripts/fetch_minilm.sh" in str(info.value)


@pytest.mark.parametrize("short", [file.name for file in TITLE_MODEL_FILES])
def test_a_file_of_another_size_is_never_loaded(tmp_path: Path, short: str) -> None:
    folder = tmp_path / TITLE_MODEL_DIR
    folder.mkdir()
    for file in TITLE_MODEL_FILES:
        with (folder / file.name).open("wb") as handle:
            handle.truncate(file.size - 1 if file.name == short else file.size)
    with pytest.raises(ModelNotFound, match=re.escape(str(folder))) as info:
        title_encoder(tmp_path)
    assert short in str(info.value)
    assert "bytes, not" in str(info.value)


def test_files_of_the_right_size_that_are_not_the_model_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / TITLE_MODEL_DIR
    folder.mkdir()
    for file in TITLE_MODEL_FILES:
        with (folder / file.name).open("wb") as handle:
            handle.truncate(file.size)
    with pytest.raises(ModelLoadError, match=re.escape("model.safetensors")):
        title_encoder(tmp_path)
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").symlink_to(
        default_models_dir() / TITLE_MODEL_DIR / "model.safetensors"
    )
    with pytest.raises(ModelLoadError, match=re.escape("tokenizer.json")):
        title_encoder(tmp_path)


@pytest.mark.parametrize("change", BROKEN_WEIGHTS.values(), ids=BROKEN_WEIGHTS.keys())
def test_weights_a_safetensors_reader_takes_but_of_other_shapes_or_values_are_refused(
    tmp_path: Path, change: Any
) -> None:
    """Refused at load, naming the file, never failing or giving NaN later on a title."""
    with pytest.raises(ModelLoadError, match=re.escape("model.safetensors")):
        title_encoder(broken_title_model(tmp_path, change)).encode(["crash on start"])


def test_a_tokenizer_giving_ids_past_the_vocabulary_is_refused(tmp_path: Path) -> None:
    folder = broken_title_model(tmp_path, lambda w: w) / TITLE_MODEL_DIR
    spec = json.loads((folder / "tokenizer.json").read_text("utf-8"))
    vocab = spec["model"]["vocab"]
    del vocab["[unused99]"]  # room for the longer id
    vocab["crash"] = 99_999
    text = json.dumps(spec, separators=(",", ":"), ensure_ascii=False)
    size = TITLE_MODEL_FILES[1].size
    assert len(text.encode()) <= size
    (folder / "tokenizer.json").write_text(text + " " * (size - len(text.encode())), "utf-8")
    with pytest.raises(ModelLoadError, match=re.escape("tokenizer.json")):
        title_encoder(tmp_path).encode(["crash on start"])


def test_the_fetch_script_checks_the_hashes_of_the_files_the_encoder_loads() -> None:
    script = (ROOT / "scripts" / "fetch_minilm.sh").read_text("utf-8")
    assert f'target="$models/{TITLE_MODEL_DIR}"' in script
    for file, var in zip(TITLE_MODEL_FILES, ("MODEL_SHA256", "TOKENIZER_SHA256"), strict=True):
        assert f'{var}="{file.sha256}"' in script
        assert f"{file.name}:${var}" in script
        fetched = default_models_dir() / TITLE_MODEL_DIR / file.name
        assert hashlib.sha256(fetched.read_bytes()).hexdigest() == file.sha256
    assert "fetch_minilm.sh" in (ROOT / "scripts" / "setup.sh").read_text("utf-8")
