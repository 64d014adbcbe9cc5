"""The ranking's title stage, with a stand-in encoder (tests/duplicates/test_minilm.py has the
real model): vectors read from the store, computed once when missing, kept only when allowed,
and the same ranking from both stores."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from bot.config import Settings
from bot.duplicates.rank import Ranker, mixed
from bot.duplicates.terms import issue_terms
from bot.duplicates.title_stage import VECTOR_MODEL, TitleStage
from bot.factory import make_store
from bot.history.protocol import HistoryStore, IndexedIssue
from bot.history.store import Store
from tests.support.title_encoder import WordHash

_repos = itertools.count()


def _row(number: int, title: str, body: str = "") -> IndexedIssue:
    found = issue_terms(title, body)
    return IndexedIssue(
        number, title, body, found.title, found.body, f"2026-01-{number:02d}T10:00:00Z"
    )


def _indexed(store: HistoryStore, titles: Sequence[tuple[str, str]]) -> str:
    repo = f"o/stage-{next(_repos)}"
    store.index_issues(repo, [_row(n, t, b) for n, (t, b) in enumerate(titles, start=1)])
    return repo


@pytest.fixture
def memory_store() -> Iterator[Store]:
    store = Store(":memory:")
    yield store
    store.close()


ISSUES = [
    ("login page times out", "the login form spins then fails"),
    ("login button colour", "the button is grey on the login page"),
    ("sync hangs on large folders", "sync of a folder with many files never ends"),
    ("crash when printing", "printing a page crashes the app"),
]


def test_the_score_mixes_the_words_and_the_title_cosine(memory_store: Store) -> None:
    repo = _indexed(memory_store, ISSUES)
    encoder = WordHash()
    query = ("login page times out again", "the login form spins")
    words = Ranker(memory_store, repo).rank(issue_terms(*query), k=4)
    staged = Ranker(memory_store, repo, TitleStage(memory_store, repo, encoder, keep=False))
    found = staged.rank(issue_terms(*query), k=4, title=query[0])
    vectors = encoder.encode([query[0], *(t for t, _ in ISSUES)])
    by_words = {c.number: c.score for c in words}
    expected = {n: mixed(s, float(vectors[n] @ vectors[0])) for n, s in by_words.items()}
    assert {c.number: c.score for c in found} == pytest.approx(expected, abs=1e-6)
    assert [c.number for c in found] == sorted(expected, key=lambda n: (-expected[n], n))
    assert Ranker(memory_store, repo, staged.titles).rank(issue_terms(*query), k=4) == words


def test_missing_vectors_are_computed_once_and_kept_only_when_allowed(memory_store: Store) -> None:
    repo = _indexed(memory_store, ISSUES)
    encoder = WordHash()
    reading = TitleStage(memory_store, repo, encoder, keep=False)
    query = reading.query("login")
    issues = [_row(n, t, b) for n, (t, b) in enumerate(ISSUES, start=1)]
    first = reading.similarities(query, issues)
    assert reading.similarities(query, issues) == first
    assert reading.computed == 4
    assert memory_store.title_vectors(repo, VECTOR_MODEL, [1, 2, 3, 4]) == {}
    keeping = TitleStage(memory_store, repo, encoder, keep=True)
    assert keeping.similarities(query, issues) == first
    assert sorted(memory_store.title_vectors(repo, VECTOR_MODEL, [1, 2, 3, 4])) == [1, 2, 3, 4]
    calls = len(encoder.calls)
    again = TitleStage(memory_store, repo, encoder, keep=True)
    assert again.similarities(query, issues) == pytest.approx(first)
    assert (again.computed, len(encoder.calls)) == (0, calls)


def test_a_stored_vector_of_the_wrong_size_or_not_finite_is_computed_again(
    memory_store: Store,
) -> None:
    repo = _indexed(memory_store, ISSUES[:2])
    bad = np.full(384, np.nan, "<f4").tobytes()
    memory_store.keep_title_vectors(repo, VECTOR_MODEL, [(1, ISSUES[0][0], b"\x00" * 12)])
    memory_store.keep_title_vectors(repo, VECTOR_MODEL, [(2, ISSUES[1][0], bad)])
    stage = TitleStage(memory_store, repo, WordHash(), keep=True)
    found = stage.similarities(stage.query("login"), [_row(1, *ISSUES[0]), _row(2, *ISSUES[1])])
    assert stage.computed == 2
    assert all(np.isfinite(list(found.values())))
    stored = memory_store.title_vectors(repo, VECTOR_MODEL, [1, 2])
    assert all(len(v) == 384 * 4 for v in stored.values())


@pytest.mark.parametrize("scale", [2.0, 1e30, 0.0])
def test_a_stored_vector_not_of_unit_length_is_computed_again(
    memory_store: Store, scale: float
) -> None:
    """A vector of another model or a damaged row: a cosine out of [-1, 1] would lift the
    candidate to the top."""
    repo = _indexed(memory_store, ISSUES[:2])
    encoder = WordHash()
    true = encoder.encode([ISSUES[1][0]])[0]
    damaged = (true * np.float32(scale)).astype("<f4").tobytes()
    memory_store.keep_title_vectors(repo, VECTOR_MODEL, [(2, ISSUES[1][0], damaged)])
    stage = TitleStage(memory_store, repo, encoder, keep=True)
    query = stage.query(ISSUES[1][0])
    found = stage.similarities(query, [_row(2, *ISSUES[1])])
    assert stage.computed == 1
    assert found[2] == pytest.approx(float(true @ query), abs=1e-6)
    kept = np.frombuffer(memory_store.title_vectors(repo, VECTOR_MODEL, [2])[2], "<f4")
    assert float(np.linalg.norm(kept)) == pytest.approx(1.0, abs=1e-5)


def test_fill_computes_every_missing_vector_in_batches(memory_store: Store) -> None:
    many = [(f"issue {n} about thing {n % 7}", "") for n in range(1, 24)]
    repo = _indexed(memory_store, many)
    encoder = WordHash()
    assert TitleStage(memory_store, repo, encoder, keep=True).fill(batch=10) == 23
    assert encoder.calls == [10, 10, 3]
    assert memory_store.issues_without_vector(repo, VECTOR_MODEL, 50) == []
    assert TitleStage(memory_store, repo, encoder, keep=True).fill(batch=10) == 0


def test_fill_ends_when_the_store_keeps_nothing(memory_store: Store) -> None:
    """A vector the store will not keep (here: a stale title) cannot make fill loop: each
    issue is encoded once a fill."""
    repo = _indexed(memory_store, ISSUES)
    encoder = WordHash()
    stage = TitleStage(memory_store, repo, encoder, keep=True)
    original = memory_store.keep_title_vectors
    memory_store.keep_title_vectors = lambda repo, model, rows: original(  # type: ignore[method-assign]
        repo, model, [(n, t + " (edited)", v) for n, t, v in rows]
    )
    assert stage.fill(batch=2) == 4
    assert encoder.calls == [2, 2]


def test_an_issue_the_store_does_not_keep_leaves_the_others_filled(memory_store: Store) -> None:
    many = [(f"issue {n} about thing {n % 7}", "") for n in range(1, 24)]
    repo = _indexed(memory_store, many)
    original = memory_store.keep_title_vectors
    memory_store.keep_title_vectors = lambda repo, model, rows: original(  # type: ignore[method-assign]
        repo, model, [(n, t + " (edited)" if n == 23 else t, v) for n, t, v in rows]
    )
    assert TitleStage(memory_store, repo, WordHash(), keep=True).fill(batch=10) == 23
    assert [n for n, _ in memory_store.issues_without_vector(repo, VECTOR_MODEL, 50)] == [23]


def test_a_read_only_store_without_the_vectors_table_still_ranks_by_titles(
    tmp_path: Path,
) -> None:
    """A dry run on a store the new version has not migrated yet: the vectors are computed,
    nothing is written, and the ranking is the one a migrated store gives."""
    path = tmp_path / "triage.db"
    writer = make_store(Settings(db_path=path))
    repo = _indexed(writer, ISSUES)
    query = ("login page times out again", "the login form spins")
    want = Ranker(writer, repo, TitleStage(writer, repo, WordHash(), keep=False)).rank(
        issue_terms(*query), k=4, title=query[0]
    )
    writer.close()
    with sqlite3.connect(path) as conn:
        conn.execute("drop table title_vectors")
        conn.execute("delete from _yoyo_migration where migration_id = '0009_title_vectors'")
    reader = make_store(Settings(db_path=path), read_only=True)
    try:
        stage = TitleStage(reader, repo, WordHash(), keep=False)
        found = Ranker(reader, repo, stage).rank(issue_terms(*query), k=4, title=query[0])
        assert found == want
        assert stage.computed == len(found)
    finally:
        reader.close()
    with sqlite3.connect(path) as conn:
        tables = {name for (name,) in conn.execute("select name from sqlite_master")}
    assert "title_vectors" not in tables


def test_both_stores_give_the_same_staged_ranking_to_the_float(
    both_stores: tuple[HistoryStore, HistoryStore],
) -> None:
    docs = [
        (f"{a} {b} problem", f"details of {a} and {b}")
        for a in ISSUES[0][0].split()
        for b in ("sync", "crash", "print", "page")
    ]
    repos = [_indexed(store, docs) for store in both_stores]
    for title, body in docs[::3]:
        found = [
            Ranker(s, r, TitleStage(s, r, WordHash(), keep=True)).rank(
                issue_terms(title, body), k=10, title=title
            )
            for s, r in zip(both_stores, repos, strict=True)
        ]
        assert found[0] == found[1]
        assert found[0]
