"""Broken copies of the title model: files of the sizes the encoder checks, with other content."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from safetensors.numpy import load_file, save

from bot.config import default_models_dir
from bot.duplicates.minilm import TITLE_MODEL_DIR, TOKENIZER, WEIGHTS

Weights = dict[str, NDArray[np.generic]]

_UNUSED = "pooler.dense.weight"
"""A tensor the encoder never reads: left out, its bytes make room for a change."""


def _sized(weights: Weights) -> bytes:
    """``weights`` as a safetensors file of exactly the real file's size (a filler tensor)."""
    pad = WEIGHTS.size - len(save(weights)) - 64
    for _ in range(20):
        data = save({**weights, "zz_filler": np.zeros(max(pad, 1), np.uint8)})
        if len(data) == WEIGHTS.size:
            return data
        pad += WEIGHTS.size - len(data)
    raise AssertionError("no filler fits the file's size")


def broken_title_model(models: Path, change: Callable[[Weights], Weights]) -> Path:
    """``models / TITLE_MODEL_DIR`` holding the real tokenizer and the real weights as
    ``change`` leaves them, each file of the size the encoder checks; returns ``models``."""
    real = default_models_dir() / TITLE_MODEL_DIR
    folder = models / TITLE_MODEL_DIR
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(real / TOKENIZER.name, folder / TOKENIZER.name)
    weights = {k: v for k, v in load_file(str(real / WEIGHTS.name)).items() if k != _UNUSED}
    (folder / WEIGHTS.name).write_bytes(_sized(change(weights)))
    return models


def short_vocabulary(weights: Weights) -> Weights:
    """Word embeddings for fewer tokens than the tokenizer gives."""
    name = "embeddings.word_embeddings.weight"
    return {**weights, name: weights[name][:1000]}


BROKEN_WEIGHTS: dict[str, Callable[[Weights], Weights]] = {
    "a vocabulary shorter than the tokenizer's": short_vocabulary,
    "a kernel of another shape": lambda w: {
        **w,
        "encoder.layer.2.intermediate.dense.weight": w["encoder.layer.2.intermediate.dense.weight"][
            :, :100
        ],
    },
    "a key kernel of other rows": lambda w: {
        **w,
        "encoder.layer.3.attention.self.key.weight": w["encoder.layer.3.attention.self.key.weight"][
            :100
        ],
    },
    "a tensor missing": lambda w: {
        k: v for k, v in w.items() if k != "encoder.layer.5.output.LayerNorm.weight"
    },
    "NaN weights": lambda w: {
        **w,
        "encoder.layer.0.output.dense.weight": np.full_like(
            w["encoder.layer.0.output.dense.weight"], np.nan
        ),
    },
    "half-precision weights": lambda w: {k: v.astype(np.float16) for k, v in w.items()},
}
"""Weights a safetensors reader loads that are not all-MiniLM-L6-v2's shapes and values."""
