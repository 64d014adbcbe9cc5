"""Title vectors on both stores: kept only for the title the index holds, lost with a new title
or a dropped issue. Every test runs on a SQLite file and on the test PostgreSQL server."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from unittest.mock import patch

import numpy as np
import pytest

from bot.config import Settings
from bot.duplicates.terms import issue_terms
from bot.errors import StoreError
from bot.factory import make_store
from bot.history import issue_index
from bot.history.protocol import HistoryStore, IndexedIssue
from tests.support.pg import fresh_database

MODEL = "m/32"
_repos = itertools.count()


@pytest.fixture
def store(store_target: str) -> Iterator[HistoryStore]:
    opened = make_store(Settings(db_path=store_target))
    yield opened
    opened.close()


def _repo() -> str:
    return f"o/vectors-{next(_repos)}"


def _row(number: int, title: str, body: str = "") -> IndexedIssue:
    found = issue_terms(title, body)
    return IndexedIssue(number, title, body, found.title, found.body, "2026-01-02T10:00:00Z")


def _blob(seed: int) -> bytes:
    return np.random.default_rng(seed).standard_normal(384).astype("<f4").tobytes()


def test_a_kept_vector_comes_back_byte_for_byte(store: HistoryStore) -> None:
    repo = _repo()
    store.index_issues(repo, [_row(1, "crash on start"), _row(2, "slow sync")])
    store.keep_title_vectors(repo, MODEL, [(1, "crash on start", _blob(1))])
    assert store.title_vectors(repo, MODEL, [1, 2, 3]) == {1: _blob(1)}
    assert store.title_vectors(repo, "other/32", [1]) == {}
    assert store.issues_without_vector(repo, MODEL, 10) == [(2, "slow sync")]
    store.keep_title_vectors(repo, MODEL, [(1, "crash on start", _blob(5))])
    assert store.title_vectors(repo, MODEL, [1]) == {1: _blob(5)}


def test_a_vector_of_another_title_or_an_unindexed_issue_is_not_kept(store: HistoryStore) -> None:
    repo = _repo()
    store.index_issues(repo, [_row(1, "crash on start")])
    store.keep_title_vectors(repo, MODEL, [(1, "crash on exit", _blob(1)), (9, "x", _blob(2))])
    assert store.title_vectors(repo, MODEL, [1, 9]) == {}


def test_a_new_title_or_a_drop_loses_the_vector_and_a_new_body_keeps_it(
    store: HistoryStore,
) -> None:
    repo = _repo()
    store.index_issues(repo, [_row(1, "crash on start"), _row(2, "slow sync"), _row(3, "typo")])
    store.keep_title_vectors(
        repo, MODEL, [(1, "crash on start", _blob(1)), (2, "slow sync", _blob(2)), (3, "typo", b"")]
    )
    store.index_issues(repo, [_row(1, "crash on start", "now with logs"), _row(2, "slow syncs")])
    store.drop_indexed(repo, [3])
    assert store.title_vectors(repo, MODEL, [1, 2, 3]) == {1: _blob(1)}
    assert store.issues_without_vector(repo, MODEL, 10) == [(2, "slow syncs")]


def test_a_title_the_store_cleans_matches_its_vector(store: HistoryStore) -> None:
    """NUL and a lone surrogate are cleaned alike in the row and in the vector's title."""
    repo, title = _repo(), "crash\x00 on \ud800 start"
    store.index_issues(repo, [_row(1, title)])
    store.keep_title_vectors(repo, MODEL, [(1, title, _blob(1))])
    assert store.title_vectors(repo, MODEL, [1]) == {1: _blob(1)}


def test_a_read_only_store_refuses_to_keep_vectors(store_target: str) -> None:
    writer = make_store(Settings(db_path=store_target))
    writer.index_issues("o/r", [_row(1, "crash")])
    writer.close()
    reader = make_store(Settings(db_path=store_target), read_only=True)
    try:
        with pytest.raises(StoreError):
            reader.keep_title_vectors("o/r", MODEL, [(1, "crash", _blob(1))])
        assert reader.title_vectors("o/r", MODEL, [1]) == {}
    finally:
        reader.close()


def test_a_title_the_redaction_changes_again_keeps_its_vector(store_target: str) -> None:
    """A secret ending in stars: redacting the stored title again would change it, so the
    title read back from the index is matched as it is."""
    settings = replace(Settings(db_path=store_target), github_token="abcde***")
    store = make_store(settings)
    try:
        repo = _repo()
        store.index_issues(repo, [_row(1, "leaked abcdeabcde*** here"), _row(2, "other")])
        missing = dict(store.issues_without_vector(repo, MODEL, 10))
        assert missing[1] != "leaked abcdeabcde*** here"
        store.keep_title_vectors(repo, MODEL, [(1, missing[1], _blob(1))])
        assert store.title_vectors(repo, MODEL, [1]) == {1: _blob(1)}
        assert store.issues_without_vector(repo, MODEL, 10) == [(2, "other")]
    finally:
        store.close()


def test_the_missing_vectors_page_down_from_a_number(store: HistoryStore) -> None:
    repo = _repo()
    store.index_issues(repo, [_row(n, f"title {n}") for n in range(1, 8)])
    store.keep_title_vectors(repo, MODEL, [(5, "title 5", _blob(5))])
    assert [n for n, _ in store.issues_without_vector(repo, MODEL, 3)] == [7, 6, 4]
    assert [n for n, _ in store.issues_without_vector(repo, MODEL, 3, below=4)] == [3, 2, 1]
    assert store.issues_without_vector(repo, MODEL, 3, below=1) == []


def test_a_vector_kept_while_a_runner_retitles_the_issue_does_not_survive() -> None:
    """Two runners on one server: one keeps a vector of the old title while the other's index
    write (the new title, its vectors deleted) is not yet committed. The keep waits for the
    write and then finds the old title gone."""
    databases = fresh_database()
    url = next(databases)
    retitling, keeping = make_store(Settings(db_path=url)), make_store(Settings(db_path=url))
    written, go = threading.Event(), threading.Event()
    original = issue_index.write

    def paused(*args: Any) -> int:
        done = original(*args)
        written.set()
        go.wait(10)
        return done

    try:
        repo = _repo()
        retitling.index_issues(repo, [_row(1, "crash on start")])
        with patch.object(issue_index, "write", paused):
            edit = threading.Thread(
                target=retitling.index_issues, args=(repo, [_row(1, "crash on exit")])
            )
            edit.start()
            assert written.wait(10)
        keep = threading.Thread(
            target=keeping.keep_title_vectors, args=(repo, MODEL, [(1, "crash on start", _blob(1))])
        )
        keep.start()
        keep.join(0.5)
        assert keep.is_alive()  # waiting for the index lock
        go.set()
        edit.join(10)
        keep.join(10)
        assert keeping.title_vectors(repo, MODEL, [1]) == {}
        assert keeping.issues_without_vector(repo, MODEL, 10) == [(1, "crash on exit")]
    finally:
        go.set()
        retitling.close()
        keeping.close()
        databases.close()
