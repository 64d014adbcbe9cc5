"""The title encoder's time: `.venv/bin/python benchmarks/title_embedding.py [--runs N]`.

Loads all-MiniLM-L6-v2 from the models folder (``TRIAGE_MODELS``, else
``~/.cache/triage-bot/models``; ``scripts/fetch_minilm.sh`` puts it there) and prints the load
time, the median and p95 of encoding one title alone (N runs over made-up titles of 4 to 30
words), and the time per title of a batch of 64.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.config import default_models_dir  # noqa: E402
from bot.duplicates.minilm import title_encoder  # noqa: E402

WORDS = (
    "crash error when opening settings page after upgrade fails to load config file timeout "
    "database connection refused TypeError NoneType object has no attribute split docs typo "
    "feature request dark mode export csv slow memory leak on startup windows linux macOS"
).split()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    models = Path(os.environ["TRIAGE_MODELS"]) if "TRIAGE_MODELS" in os.environ else None
    rng = random.Random(7)
    titles = [" ".join(rng.choices(WORDS, k=rng.randint(4, 30))) for _ in range(args.runs)]

    started = time.perf_counter()
    encoder = title_encoder(models or default_models_dir())
    load_ms = (time.perf_counter() - started) * 1000
    encoder.encode(titles[:8])  # warm up

    single = []
    for title in titles:
        started = time.perf_counter()
        encoder.encode([title])
        single.append((time.perf_counter() - started) * 1000)
    batches = [titles[i : i + 64] for i in range(0, len(titles) - 63, 64)]
    started = time.perf_counter()
    for batch in batches:
        encoder.encode(batch)
    per_title = (time.perf_counter() - started) * 1000 / (64 * len(batches))

    p95 = statistics.quantiles(single, n=20)[-1]
    print(
        f"title encoder: load {load_ms:.0f} ms; one title median {statistics.median(single):.2f} "
        f"ms, p95 {p95:.2f} ms ({len(single)} titles); batched 64: {per_title:.2f} ms per title"
    )


if __name__ == "__main__":
    main()
