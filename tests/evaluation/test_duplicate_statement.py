"""``eval --only duplicates`` prints the repository file's ``duplicates.statement`` block."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.evaluation.duplicate_ranking import run_duplicates_eval
from bot.repo_file import parse_repo_file
from tests.support.title_encoder import WordHash

_WORDS = [
    ("alpha", "bravo", "charlie"),
    ("delta", "echo", "foxtrot"),
    ("golf", "hotel", "india"),
    ("juliet", "kilo", "lima"),
    ("mike", "november", "oscar"),
    ("papa", "quebec", "romeo"),
    ("sierra", "tango", "uniform"),
    ("victor", "whiskey", "xray"),
]


def _set(tmp_path: Path) -> tuple[Path, Path]:
    start = datetime(2025, 1, 1, tzinfo=UTC)
    pool, pairs = [], []
    for n, words in enumerate(_WORDS):
        text = " ".join(words)
        for half in (0, 1):
            pool.append(
                {
                    "id": f"{n}-{half}",
                    "title": f"{text} crashes",
                    "body": f"{text} fails on start",
                    "created_at": (start + timedelta(days=2 * n + half)).isoformat(),
                }
            )
        pairs.append({"id": f"{n}-1", "dup_of": f"{n}-0"})
    pool_path, pairs_path = tmp_path / "pool.jsonl", tmp_path / "pairs.jsonl"
    pool_path.write_text("".join(json.dumps(r) + "\n" for r in pool))
    pairs_path.write_text("".join(json.dumps(r) + "\n" for r in pairs))
    return pool_path, pairs_path


def _run(tmp_path: Path, *, earlier_only: bool, bound: float) -> str:
    pool, pairs = _set(tmp_path)
    flags = {
        "pool": pool,
        "pairs": pairs,
        "out": tmp_path / "r.json",
        "earlier_only": earlier_only,
        "min_precision": bound,
    }
    return run_duplicates_eval(flags, WordHash())  # the block is for the gate's ranking


def test_a_chosen_threshold_prints_the_block_the_repository_file_reads(tmp_path: Path) -> None:
    text = _run(tmp_path, earlier_only=True, bound=0.8)
    block = text.split("paste into .github/triage-bot.yml:\n", 1)[1].split("report written")[0]
    statement = parse_repo_file(block).duplicates.statement
    assert statement is not None
    assert (statement.right, statement.made) == (8, 8)
    report = json.loads((tmp_path / "r.json").read_text())["duplicates"]["statement"]
    assert statement.threshold <= report["threshold"] < statement.threshold + 1e-4


@pytest.mark.parametrize(("earlier_only", "bound"), [(True, 0.99), (False, 0.8)])
def test_no_block_without_a_threshold_or_measured_on_the_whole_pool(
    tmp_path: Path, earlier_only: bool, bound: float
) -> None:
    assert "duplicates:" not in _run(tmp_path, earlier_only=earlier_only, bound=bound)
