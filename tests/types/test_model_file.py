"""The type model file: written, read back, applied; every file that is not a model refused."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bot.errors import ConfigError, TypeModelError
from bot.type_guess import MAX_TYPE_MODEL_BYTES
from bot.types.fit import fit_type_model
from bot.types.model_file import (
    Array,
    TypeModel,
    load_type_model,
    write_type_model,
)
from tests.support.type_rows import made_up_rows


@pytest.fixture(scope="module")
def model() -> TypeModel:
    return fit_type_model(made_up_rows(12), min_precision=0.9, repo="acme/widgets").model


def test_fit_write_load_predict_round_trip(model: TypeModel, tmp_path: Path) -> None:
    path = tmp_path / "types.json"
    size = write_type_model(path, model)
    assert size == path.stat().st_size < MAX_TYPE_MODEL_BYTES
    loaded = load_type_model(path)
    assert loaded == model
    issues = [("App crash with traceback", "it fails"), ("How do I", "anyone help?"), ("", "")]
    np.testing.assert_array_equal(loaded.probabilities(issues), model.probabilities(issues))
    guesses = loaded.guesses(issues)
    assert [g.type for g in guesses[:2]] == ["bug", "question"]
    for guess in guesses:
        threshold = loaded.thresholds[guess.type]
        assert guess.clears == (threshold is not None and guess.confidence >= threshold)
    assert loaded.repo == "acme/widgets"
    assert loaded.figures.rows == 36
    assert {k: s.rows for k, s in loaded.figures.per_type.items()} == {
        "bug": 12,
        "feature": 12,
        "question": 12,
    }
    # data only: JSON with the declared format
    raw = json.loads(path.read_text("utf-8"))
    assert (raw["format"], raw["version"], raw["types"]) == (
        "triage-bot-types",
        1,
        ["bug", "feature", "question"],
    )


def test_the_model_error_is_a_config_error_exit_2() -> None:
    assert issubclass(TypeModelError, ConfigError)
    assert TypeModelError("x").exit_code == 2


def _raw(model: TypeModel) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(model.to_json())
    return data


def _b64(values: list[float]) -> str:
    return base64.b64encode(np.asarray(values, dtype="<f4").tobytes()).decode()


def _nan_weight(raw: dict[str, Any]) -> None:
    weights = np.frombuffer(base64.b64decode(raw["weights"]["float32_le"]), dtype="<f4").copy()
    weights[3] = np.nan
    raw["weights"]["float32_le"] = base64.b64encode(weights.tobytes()).decode()


def _inf_intercept(raw: dict[str, Any]) -> None:
    raw["intercepts"]["float32_le"] = _b64([0.0, float("inf"), 0.0])


def _short_weights(raw: dict[str, Any]) -> None:
    width = raw["weights"]["shape"][1]
    raw["weights"] = Array.of(np.zeros((3, width - 1))).model_dump()


def _shape_unlike_values(raw: dict[str, Any]) -> None:
    raw["weights"]["shape"] = [3, raw["weights"]["shape"][1] - 1]


def _vocabulary_longer_than_idf(raw: dict[str, Any]) -> None:
    raw["blocks"][0]["vocabulary"].append("zzz-new")


def _unknown_type(raw: dict[str, Any]) -> None:
    raw["types"] = ["bug", "feature", "chore"]


def _unknown_threshold(raw: dict[str, Any]) -> None:
    raw["thresholds"]["chore"] = 0.5


def _not_base64(raw: dict[str, Any]) -> None:
    raw["intercepts"]["float32_le"] = "not base64!"


def _extra_key(raw: dict[str, Any]) -> None:
    raw["code"] = "__import__('os').system('x')"


def _nan_threshold(raw: dict[str, Any]) -> None:
    raw["thresholds"]["bug"] = float("nan")


def _nine_blocks(raw: dict[str, Any]) -> None:
    empty = {**raw["blocks"][0], "vocabulary": [], "idf": Array.of(np.zeros(0)).model_dump()}
    raw["blocks"] += [empty] * (9 - len(raw["blocks"]))


def _word_four_grams(raw: dict[str, Any]) -> None:
    words = next(b for b in raw["blocks"] if b["kind"] == "words")
    words["ngram_range"] = [1, 4]


def _char_seven_grams(raw: dict[str, Any]) -> None:
    chars = next(b for b in raw["blocks"] if b["kind"] == "chars")
    chars["ngram_range"] = [2, 7]


def _idf_below_one(raw: dict[str, Any]) -> None:
    block = raw["blocks"][0]
    block["idf"] = Array.of(np.full(len(block["vocabulary"]), 0.5)).model_dump()


def _heavy_block(raw: dict[str, Any]) -> None:
    raw["blocks"][0]["weight"] = 1e300


def _huge_weight(raw: dict[str, Any]) -> None:
    weights = np.frombuffer(base64.b64decode(raw["weights"]["float32_le"]), dtype="<f4").copy()
    weights[0] = 3e38
    raw["weights"]["float32_le"] = base64.b64encode(weights.tobytes()).decode()


def _two_types(raw: dict[str, Any]) -> None:
    raw["types"] = ["bug", "feature"]


def _figures_of_another_type(raw: dict[str, Any]) -> None:
    del raw["figures"]["per_type"]["question"]


REFUSED: list[tuple[Callable[[dict[str, Any]], None], str]] = [
    (_nan_weight, "weights: Value error, holds a NaN or an infinite value"),
    (_inf_intercept, "intercepts: Value error, holds a NaN or an infinite value"),
    (_short_weights, "the types and blocks need [3, "),
    (_shape_unlike_values, "weights: Value error, holds "),
    (_vocabulary_longer_than_idf, "blocks.0: Value error, idf: shape"),
    (_unknown_type, "types.2: Input should be 'bug', 'feature' or 'question'"),
    (_unknown_threshold, "thresholds.(a key)"),
    (_not_base64, "intercepts: Value error, is not base64"),
    (_extra_key, "(a key): Extra inputs are not permitted"),
    (_nan_threshold, "thresholds.bug"),
    (_nine_blocks, "blocks: List should have at most 8 items"),
    (_word_four_grams, "word n-grams go up to 3"),
    (_char_seven_grams, "ngram_range.1: Input should be less than or equal to 6"),
    (_idf_below_one, "idf: a value below 1"),
    (_heavy_block, "weight: Input should be less than or equal to 100"),
    (_huge_weight, "weights: a value beyond"),
    (_two_types, "types: List should have at least 3 items"),
    (_figures_of_another_type, "figures.per_type: one per type"),
]


@pytest.mark.parametrize(("change", "message"), REFUSED, ids=[c.__name__ for c, _ in REFUSED])
def test_a_broken_model_is_refused_naming_the_problem(
    model: TypeModel, tmp_path: Path, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    raw = _raw(model)
    change(raw)
    path = tmp_path / "types.json"
    path.write_text(json.dumps(raw), "utf-8")
    with pytest.raises(TypeModelError) as caught:
        load_type_model(path)
    text = str(caught.value)
    assert text.startswith(f"type model {path}: not a valid model: ")
    assert message in text
    for secret in ("__import__", "zzz-new", "chore"):
        assert secret not in text


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"{not json", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        (b"[1, 2]", "not a triage-bot-types file"),
        (b'{"format": "pickle", "version": 1}', "not a triage-bot-types file"),
        (b'{"format": "triage-bot-types", "version": 2}', "another version of the format"),
        (b'{"format": "triage-bot-types"}', "another version of the format"),
        (b"[" * 100_000, "not JSON"),
    ],
    ids=["malformed", "not-utf8", "a-list", "another-format", "version-2", "no-version", "deep"],
)
def test_a_file_that_is_no_model_is_refused(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "types.json"
    path.write_bytes(data)
    with pytest.raises(TypeModelError, match=f"^type model {path}: {message}"):
        load_type_model(path)


def test_a_file_over_the_bound_is_refused_before_it_is_read(
    model: TypeModel, tmp_path: Path
) -> None:
    path = tmp_path / "types.json"
    path.write_bytes(model.to_json().encode() + b" " * MAX_TYPE_MODEL_BYTES)
    with pytest.raises(TypeModelError, match=r"larger than 1,048,576 bytes"):
        load_type_model(path)
    # 64 GiB (sparse): read whole it would not fit in memory, refused by its size
    huge = tmp_path / "huge.json"
    with huge.open("wb") as out:
        out.truncate(64 * 2**30)
    with pytest.raises(TypeModelError, match=r"larger than 1,048,576 bytes"):
        load_type_model(huge)


def test_a_missing_file_a_folder_and_a_fifo_are_refused(tmp_path: Path) -> None:
    import os

    with pytest.raises(TypeModelError, match="cannot be read"):
        load_type_model(tmp_path / "missing.json")
    with pytest.raises(TypeModelError, match="cannot be read"):
        load_type_model(tmp_path)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(TypeModelError, match="cannot be read"):
        load_type_model(fifo)


def test_writing_refuses_a_model_over_the_bound(model: TypeModel, tmp_path: Path) -> None:
    block = model.blocks[0]
    big = block.model_copy(
        update={
            "vocabulary": [f"w{i:07d}" for i in range(120_000)],
            "idf": Array.of(np.ones(120_000)),
        }
    )
    width = sum(b.width for b in model.blocks) - block.width + big.width
    huge = model.model_copy(
        update={"blocks": [big, *model.blocks[1:]], "weights": Array.of(np.zeros((3, width)))}
    )
    path = tmp_path / "types.json"
    with pytest.raises(TypeModelError, match="bytes, over the 1,048,576 a model may be"):
        write_type_model(path, huge)
    assert not path.exists()


def test_the_array_shape_is_checked() -> None:
    with pytest.raises(ValueError, match="holds 3 values"):
        Array(shape=[2, 2], float32_le=_b64([1.0, 2.0, 3.0]))
    with pytest.raises(ValueError, match="whole number of float32"):
        Array(shape=[1], float32_le=base64.b64encode(b"abc").decode())
    assert Array.of([[1.0, 2.0], [3.0, 4.0]]).array().tolist() == [[1.0, 2.0], [3.0, 4.0]]
