"""Duplicate ranking time:
`.venv/bin/python benchmarks/duplicates.py [--size N] [--pool POOL] [--words-only]`.

Indexes N issues (default 5,000) into a SQLite file store, and with `TRIAGE_TEST_PG_URL` set
into PostgreSQL too, computes their title vectors (the title model from `TRIAGE_MODELS`, as
`triage-bot index` does; not with `--words-only`), then ranks 50 new issues against the index,
each with a fresh :class:`bot.duplicates.rank.Ranker` (as a gate run does: nothing cached but
the loaded model; the new title's vector is computed in the time), and prints the median, 95th
percentile and worst time per issue and the mean number of issues retrieved. The issues are
synthetic (words drawn from a Zipf distribution over 20,000 words: titles of 8, bodies of 150),
or with `--pool` the reports of a pool file (`{id, title, body, created_at}` JSONL) repeated
until N. Goal: ≤ 200 ms per issue on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.duplicates.rank import Ranker  # noqa: E402
from bot.duplicates.terms import BODY_CHARS, issue_terms  # noqa: E402
from bot.duplicates.title_stage import Encoder, TitleStage  # noqa: E402
from bot.history.protocol import HistoryStore, IndexedIssue  # noqa: E402

REPO = "bench/duplicates"
QUERIES = 50


def _synthetic(count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    words = [f"w{n}" for n in range(20_000)]
    weights = [1 / (n + 1) for n in range(len(words))]

    def text(length: int) -> str:
        return " ".join(rng.choices(words, weights, k=length))

    return [(text(8), text(150)) for _ in range(count)]


def _from_pool(path: Path, count: int) -> list[tuple[str, str]]:
    reports = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [
        (reports[n % len(reports)]["title"], reports[n % len(reports)]["body"] or "")
        for n in range(count)
    ]


def _rows(texts: list[tuple[str, str]]) -> list[IndexedIssue]:
    rows = []
    for number, (title, body) in enumerate(texts, start=1):
        terms = issue_terms(title, body)
        rows.append(
            IndexedIssue(
                number=number,
                title=title,
                body=body[:BODY_CHARS],
                title_terms=terms.title,
                body_terms=terms.body,
                created_at=f"2024-01-01T00:00:{number % 60:02d}Z",
            )
        )
    return rows


def _measure(
    name: str,
    store: HistoryStore,
    texts: list[tuple[str, str]],
    size: int,
    encoder: Encoder | None,
) -> None:
    started = time.perf_counter()
    rows = _rows(texts[:size])
    for start in range(0, len(rows), 500):
        store.index_issues(REPO, rows[start : start + 500])
    indexed_s = time.perf_counter() - started
    if encoder is not None:
        began = time.perf_counter()
        TitleStage(store, REPO, encoder, keep=True).fill()
        print(f"{name}: title vectors of {size} issues in {time.perf_counter() - began:.1f} s")
    times, retrieved = [], []
    for title, body in texts[size : size + QUERIES]:
        stage = None if encoder is None else TitleStage(store, REPO, encoder, keep=False)
        ranker = Ranker(store, REPO, stage)
        began = time.perf_counter()
        found = ranker.rank(issue_terms(title, body), k=5, title=title)
        times.append((time.perf_counter() - began) * 1000)
        retrieved.append(ranker.retrieved)
        assert found, "a query found nothing"
    times.sort()
    print(
        f"{name}: indexed {size} issues in {indexed_s:.1f} s; rank per issue: median "
        f"{statistics.median(times):.0f} ms, p95 {times[int(0.95 * len(times)) - 1]:.0f} ms, "
        f"worst {times[-1]:.0f} ms; retrieved {statistics.mean(retrieved):.0f} issues on average"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument("--pool", type=Path)
    parser.add_argument("--words-only", action="store_true")
    args = parser.parse_args()
    encoder = None
    if not args.words_only:
        from bot.duplicates.minilm import title_encoder
        from bot.settings_table import default_models_dir

        began = time.perf_counter()
        models = Path(os.environ.get("TRIAGE_MODELS") or default_models_dir())
        encoder = title_encoder(models)
        print(f"title model loaded in {time.perf_counter() - began:.2f} s")
    total = args.size + QUERIES
    texts = _from_pool(args.pool, total) if args.pool else _synthetic(total, seed=1)
    if args.pool:  # the queries: reports of the pool not among the first N copies' places
        random.Random(2).shuffle(texts)
    from bot.history.store import Store

    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "bench.db")
        try:
            _measure("SQLite", store, texts, args.size, encoder)
        finally:
            store.close()
    url = os.environ.get("TRIAGE_TEST_PG_URL")
    if url:
        from bot.history.pg_store import PostgresStore

        pg = PostgresStore(url)
        try:
            pg.drop_indexed(REPO, range(1, total + 1))
            _measure("PostgreSQL", pg, texts, args.size, encoder)
            pg.drop_indexed(REPO, range(1, total + 1))
        finally:
            pg.close()


if __name__ == "__main__":
    main()
