"""Issue-type model figures: `.venv/bin/python benchmarks/types.py ROWS.jsonl [--repo OWNER/NAME]`.

ROWS is a file of type rows (``triage-bot dataset --types``, or the development set of issue
types). Per repository (the rows' ``repo``; all rows as one when they name none):

1. `types fit` as the command runs it (nested 5-fold cross-validation, thresholds, the final
   fit, the file written), its wall time; and the final fit alone (n-grams, vectorizers, head
   on all rows).
2. Prediction time per issue, the model loaded once from its file: median and p95 over the
   rows, each issue alone.
3. The cross-validated macro-F1, and per type the threshold with the precision and coverage
   at it (outer folds), the file's size.

`--candidates` also prints each candidate's 5-fold macro-F1 (no thresholds): the words block
alone (the baseline), the blocks as shipped, and the blocks with no vocabulary cut (the F1 the
cut costs and the size it saves).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.evaluation.sets import load_jsonl  # noqa: E402
from bot.repo_file import TYPE_NAMES  # noqa: E402
from bot.types.fit import BLOCKS, BlockSpec, cv_predictions, fit_type_model  # noqa: E402
from bot.types.model_file import load_type_model, write_type_model  # noqa: E402
from bot.types.rows import TypeRow  # noqa: E402
from bot.types.scores import macro_f1, type_scores  # noqa: E402

CANDIDATES: dict[str, tuple[BlockSpec, ...]] = {
    "words (baseline)": (BLOCKS[0],),
    "words + title words + chars (shipped)": BLOCKS,
    "the same, no vocabulary cut": tuple(replace(b, max_features=None) for b in BLOCKS),
}


def _by_repo(rows: list[TypeRow]) -> dict[str, list[TypeRow]]:
    groups: dict[str, list[TypeRow]] = defaultdict(list)
    for row in rows:
        groups[row.repo or "(all rows)"].append(row)
    return dict(groups)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _cv_f1(rows: list[TypeRow], specs: tuple[BlockSpec, ...]) -> float:
    return macro_f1(type_scores(cv_predictions(rows, specs), list(TYPE_NAMES)))


def measure(repo: str, rows: list[TypeRow], folder: Path) -> dict[str, float]:
    """One repository's figures."""
    path = folder / f"{repo.replace('/', '_')}.json"
    start = time.perf_counter()
    result = fit_type_model(rows, min_precision=0.9, repo=repo)
    size = write_type_model(path, result.model)
    fit_s = time.perf_counter() - start
    final_s = result.final_fit_s
    model = load_type_model(path)
    times = []
    for row in rows:
        start = time.perf_counter()
        model.guesses([(row.title, row.body)])
        times.append(time.perf_counter() - start)
    figures = model.figures
    print(
        f"{repo}: {len(rows)} rows; types fit {fit_s:.1f} s (final fit alone {final_s:.1f} s); "
        f"predict median {statistics.median(times) * 1000:.1f} ms, "
        f"p95 {_percentile(times, 0.95) * 1000:.1f} ms; macro-F1 {figures.macro_f1:.3f}; "
        f"model file {size / 1024:.0f} KiB"
    )
    for kind in TYPE_NAMES:
        t = model.thresholds[kind]
        s = figures.per_type[kind]
        shown = "none" if t is None else f"{t:.2f}"
        precision = "–" if s.threshold_precision is None else f"{s.threshold_precision:.3f}"
        print(
            f"  {kind:<9} F1 {s.f1:.3f}  threshold {shown}  precision at it {precision}  "
            f"coverage {s.threshold_coverage:.3f}"
        )
    print(f"  labelled at the thresholds: {figures.coverage:.3f} of the rows")
    return {
        "fit_s": fit_s,
        "final_s": final_s,
        "median_ms": statistics.median(times) * 1000,
        "p95_ms": _percentile(times, 0.95) * 1000,
        "macro_f1": figures.macro_f1,
        "coverage": figures.coverage,
        "size_kib": size / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rows", type=Path)
    parser.add_argument("--repo", help="Only this repository's rows.")
    parser.add_argument("--candidates", action="store_true")
    args = parser.parse_args()
    groups = _by_repo(load_jsonl(args.rows, TypeRow, what="rows"))
    if args.repo:
        groups = {args.repo: groups.get(args.repo, [])}
    results = []
    with tempfile.TemporaryDirectory() as folder:
        for repo, rows in groups.items():
            results.append(measure(repo, rows, Path(folder)))
    keys = ("macro_f1", "coverage", "fit_s", "median_ms", "p95_ms", "size_kib")
    print(
        "mean over repositories: "
        + ", ".join(f"{k} {statistics.mean(r[k] for r in results):.3f}" for k in keys)
        + f"; slowest fit {max(r['fit_s'] for r in results):.1f} s"
    )
    if args.candidates:
        for name, specs in CANDIDATES.items():
            scores = {repo: _cv_f1(rows, specs) for repo, rows in groups.items()}
            per_repo = ", ".join(f"{repo} {f1:.3f}" for repo, f1 in scores.items())
            print(f"{name}: macro-F1 {statistics.mean(scores.values()):.3f} ({per_repo})")


if __name__ == "__main__":
    main()
