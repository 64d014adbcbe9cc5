"""The duplicate-search index on both stores: rows, term counts kept exact, and the same
candidates from SQLite's FTS5 and PostgreSQL's full-text search as from a reference in Python.

Every test takes ``store_target`` and so runs on a SQLite file and on a fresh database of the
test server (skipped without ``TRIAGE_TEST_PG_URL``).
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bot.config import Settings
from bot.duplicates.terms import issue_terms, terms
from bot.errors import StoreError
from bot.factory import make_store
from bot.history import issue_index
from bot.history.protocol import HistoryStore, IndexedIssue
from bot.history.store import Store

HOSTILE = [
    '"', '""', 'a"b', "*", "a*", "NEAR", "NEAR(a b)", "AND", "OR", "NOT", "a OR b", "-", "-a",
    "^", "^a", ":", "title_terms:a", "(", ")", "(a)", "&", "|", "!", "<->", "a&b", "a|b", "!a",
    "a<->b", "a:*", "\\", "a\\", "\x00", "a\x00b", "'", "a'b", "{a b}", "+", "a b", "", " ",
]  # fmt: skip
"""Query syntax of either engine, passed straight as terms."""

SCRIPTS = [
    "naïve café résumé", "e\u0301cole", "日本語のテキスト 中文", "١٢٣ عربي ٤٥", "हिन्दी क्षत्रिय",
    "Ελληνικά ΣΊΣΥΦΟΣ", "ǅemal straße ﬁle", "x² ⅷ ½", "ᏸᏹ Ᏸ", "𞤀𞤢 adlam", "한국어 텍스트",
    "ไทย ภาษา", "ম্যাপ বাংলা", "abc123 ٣x", "S´ \u0301x", "´", "a\u09f4b ১৴ ୲x", "\u09f4",
]  # fmt: skip

_repos = itertools.count()


@pytest.fixture
def store(store_target: str) -> Iterator[HistoryStore]:
    opened = make_store(Settings(db_path=store_target))
    yield opened
    opened.close()


def _row(number: int, title: str, body: str = "", created_at: str = "") -> IndexedIssue:
    found = issue_terms(title, body)
    when = created_at or f"2026-01-{1 + number % 28:02d}T10:00:00Z"
    return IndexedIssue(number, title, body, found.title, found.body, when)


def _counts(store: HistoryStore, repo: str) -> dict[str, int]:
    rows = store.fetch("select term, docs from index_terms where repo = ?", [repo])
    return {str(term): int(docs) for term, docs in rows}


def _recount(rows: Mapping[int, IndexedIssue]) -> dict[str, int]:
    found: Counter[str] = Counter()
    for row in rows.values():
        found.update(set(row.title_terms.split()) | set(row.body_terms.split()))
    return dict(found)


def _check_fts(store: Store) -> None:
    """FTS5's integrity check against ``issue_index`` (raises when they differ); writes
    nothing."""
    store.db.conn.execute(
        "insert into issue_index_fts (issue_index_fts) values ('integrity-check')"
    )
    store.db.conn.rollback()


def _numbers(rows: Sequence[IndexedIssue]) -> list[int]:
    return [row.number for row in rows]


def test_a_row_comes_back_as_written_with_nul_stripped_and_utc_time(store: HistoryStore) -> None:
    row = IndexedIssue(
        7, "Crash\x00 on start", "a\x00b", "crash on start", "a\x00b", "2026-03-01T01:30:00+02:00"
    )
    assert store.index_issues("o/r", [row]) == 1
    assert store.indexed_issue("o/r", 7) == IndexedIssue(
        7, "Crash on start", "ab", "crash on start", "ab", "2026-02-28T23:30:00Z"
    )
    assert store.index_size("o/r") == 1
    assert store.index_size("o/other") == 0
    assert store.indexed_issue("o/r", 8) is None
    assert store.term_docs("o/r", ["crash", "ab", "a", "missing"]) == {"crash": 1, "ab": 1}


def test_a_lone_surrogate_is_stored_as_the_replacement_character(store: HistoryStore) -> None:
    title, body = "Crash \ud800on start \U0001f600", "half a pair \ud83d\ude00 and \udfff"
    terms = issue_terms(title, body)
    row = IndexedIssue(7, title, body, terms.title, terms.body, "2026-03-01T00:00:00Z")
    assert store.index_issues("o/r", [row]) == 1
    stored = store.indexed_issue("o/r", 7)
    assert stored is not None
    assert (stored.title, stored.body) == (
        "Crash \ufffdon start \U0001f600",
        "half a pair \U0001f600 and \ufffd",
    )
    assert (stored.title_terms, stored.body_terms) == ("crash on start", "half a pair and")


@pytest.mark.parametrize("created_at", ["2026-03-01T10:00:00", "yesterday", ""])
def test_a_time_without_offset_or_unreadable_writes_nothing(
    store: HistoryStore, created_at: str
) -> None:
    good = _row(1, "fine")
    bad = IndexedIssue(2, "t", "", "t", "", created_at)
    with pytest.raises(ValueError, match=r"offset|isoformat"):
        store.index_issues("o/r", [good, bad])
    assert store.index_size("o/r") == 0
    with pytest.raises(ValueError, match=r"offset|isoformat"):
        store.issues_with_terms("o/r", ["fine"], before=created_at)


def test_a_replaced_row_moves_its_term_counts_and_the_same_row_changes_nothing(
    store: HistoryStore,
) -> None:
    store.index_issues("o/r", [_row(1, "crash on start"), _row(2, "crash in config")])
    assert _counts(store, "o/r") == {"crash": 2, "on": 1, "start": 1, "in": 1, "config": 1}
    store.index_issues("o/r", [_row(1, "hang on exit")])
    assert _counts(store, "o/r") == {
        "crash": 1,
        "hang": 1,
        "on": 1,
        "exit": 1,
        "in": 1,
        "config": 1,
    }
    stamp = store.fetch("select indexed_at from issue_index where repo = ? and number = 1", ["o/r"])
    store.index_issues("o/r", [_row(1, "hang on exit")])
    assert store.fetch("select indexed_at from issue_index where number = 1", []) == stamp
    assert _counts(store, "o/r") == {
        "crash": 1,
        "hang": 1,
        "on": 1,
        "exit": 1,
        "in": 1,
        "config": 1,
    }
    assert _numbers(store.issues_with_terms("o/r", ["start"])) == []
    assert _numbers(store.issues_with_terms("o/r", ["hang", "crash"])) == [2, 1]


def test_a_dropped_issue_leaves_the_index_and_its_counts(store: HistoryStore) -> None:
    store.index_issues("o/r", [_row(1, "crash on start"), _row(2, "crash in config")])
    store.index_issues("o/other", [_row(1, "crash on start")])
    assert store.drop_indexed("o/r", [1, 99]) == 1
    assert store.drop_indexed("o/r", [1]) == 0
    assert _counts(store, "o/r") == {"crash": 1, "in": 1, "config": 1}
    assert _numbers(store.issues_with_terms("o/r", ["start", "crash"])) == [2]
    assert store.term_docs("o/other", ["start"]) == {"start": 1}


def test_a_failed_batch_keeps_no_row_and_no_count(
    store: HistoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.index_issues("o/r", [_row(1, "crash on start")])

    def failing(executemany: Any, repo: str, delta: Any) -> None:
        executemany("insert into no_such_table (a) values (?)", [(1,)])

    monkeypatch.setattr(issue_index, "_apply", failing)
    with pytest.raises(StoreError):
        store.index_issues("o/r", [_row(2, "hang"), _row(1, "other words")])
    with pytest.raises(StoreError):
        store.drop_indexed("o/r", [1])
    monkeypatch.undo()
    assert store.indexed_issue("o/r", 1) == _row(1, "crash on start")
    assert store.index_size("o/r") == 1
    assert _counts(store, "o/r") == {"crash": 1, "on": 1, "start": 1}


def test_a_read_only_store_refuses_index_writes(store_target: str) -> None:
    make_store(Settings(db_path=store_target)).close()
    reader = make_store(Settings(db_path=store_target), read_only=True)
    try:
        with pytest.raises(StoreError, match="read-only"):
            reader.index_issues("o/r", [_row(1, "crash")])
        with pytest.raises(StoreError, match="read-only"):
            reader.drop_indexed("o/r", [1])
        assert reader.index_size("o/r") == 0
    finally:
        reader.close()


def test_before_exclude_and_limit_bound_the_candidates_newest_first(store: HistoryStore) -> None:
    rows = [_row(n, "crash", created_at=f"2026-01-{n:02d}T10:00:00Z") for n in range(1, 11)]
    store.index_issues("o/r", rows)
    assert _numbers(store.issues_with_terms("o/r", ["crash"], limit=3)) == [10, 9, 8]
    found = store.issues_with_terms("o/r", ["crash"], before="2026-01-05T12:00:00+01:00", exclude=3)
    assert _numbers(found) == [5, 4, 2, 1]
    assert _numbers(store.issues_with_terms("o/r", ["crash"], before="2026-01-05T10:00:00Z")) == [
        4, 3, 2, 1,
    ]  # fmt: skip
    assert store.issues_with_terms("o/r", []) == []
    assert store.issues_with_terms("o/r", ["crash"], limit=0) == []


def test_rows_the_engine_matches_but_whose_terms_differ_do_not_fill_the_limit(
    store: HistoryStore,
) -> None:
    """A term that is no single token (``foo-bar``) is matched by its own terms, page after
    page, not by the engine's reading of it."""
    near = [IndexedIssue(n, "t", "", "foo bar", "", "2026-01-01T00:00:00Z") for n in range(3, 11)]
    exact = [IndexedIssue(n, "t", "", "foo-bar", "", "2026-01-01T00:00:00Z") for n in (1, 2)]
    store.index_issues("o/r", near + exact)
    assert _numbers(store.issues_with_terms("o/r", ["foo-bar"], limit=2)) == [2, 1]
    assert store.term_docs("o/r", ["foo-bar", "foo"]) == {"foo-bar": 2, "foo": 8}


def test_hostile_terms_neither_raise_nor_match_other_terms(store: HistoryStore) -> None:
    words = "near and or not a b title terms quot x"
    store.index_issues("o/r", [_row(1, words, words), _row(2, "a b", "(a) a:* NEAR(a b)")])
    for term in HOSTILE:
        assert store.issues_with_terms("o/r", [term]) == [], repr(term)
        assert store.term_docs("o/r", [term]) == {}, repr(term)
    assert _numbers(store.issues_with_terms("o/r", [*HOSTILE, "near"])) == [2, 1]


def test_thousands_of_terms_are_one_call(store: HistoryStore) -> None:
    store.index_issues("o/r", [_row(1, "crash w2999"), _row(2, "w0 hang")])
    many = [f"w{i}" for i in range(3000)]
    assert _numbers(store.issues_with_terms("o/r", many)) == [2, 1]
    assert store.term_docs("o/r", many) == {"w0": 1, "w2999": 1}


_TEXT = st.lists(
    st.one_of(
        st.sampled_from(SCRIPTS),
        st.text(st.characters(categories=["L", "M", "N", "Zs", "P"]), max_size=20),
        st.text(max_size=20),
    ),
    max_size=6,
).map(" ".join)

_DOCS = st.dictionaries(st.integers(1, 40), st.tuples(_TEXT, _TEXT), max_size=12)

_SLOW = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_SLOW
@given(
    docs=_DOCS,
    every=st.integers(1, 3),
    extra=st.lists(_TEXT, max_size=3),
    before=st.integers(1, 29),
)
@example(docs={1: ("´", ""), 2: ("", "\u09f4"), 3: ("x", "")}, every=1, extra=[], before=29)
def test_both_stores_find_the_set_a_python_reference_finds(
    store: HistoryStore,
    docs: dict[int, tuple[str, str]],
    every: int,
    extra: list[str],
    before: int,
) -> None:
    """A doc is found when one of the asked terms is one of its terms: on both stores, the
    terms of any text (marks, digits of every kind, CJK, query syntax)."""
    repo = f"o/r{next(_repos)}"
    rows = {n: _row(n, title, body) for n, (title, body) in docs.items()}
    store.index_issues(repo, list(rows.values()))
    vocabulary = sorted(_recount(rows))
    asked = vocabulary[::every] + [t for text in extra for t in terms(text)]
    until = f"2026-01-{before:02d}T10:00:00Z"
    expected = sorted(
        (
            n
            for n, row in rows.items()
            if (set(row.title_terms.split()) | set(row.body_terms.split())) & set(asked)
            and row.created_at < until
        ),
        reverse=True,
    )
    assert _numbers(store.issues_with_terms(repo, asked, before=until)) == expected
    counts = _recount(rows)
    assert store.term_docs(repo, asked) == {t: counts[t] for t in asked if t in counts}


_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.lists(st.tuples(st.integers(1, 8), _TEXT), max_size=4)),
        st.tuples(st.just("drop"), st.lists(st.integers(1, 8), max_size=3)),
    ),
    max_size=8,
)


@_SLOW
@given(steps=_STEPS)
def test_term_counts_stay_a_recount_of_the_rows(
    store: HistoryStore, steps: list[tuple[str, list[Any]]]
) -> None:
    repo = f"o/r{next(_repos)}"
    rows: dict[int, IndexedIssue] = {}
    for kind, items in steps:
        if kind == "put":
            batch = [_row(n, text[:10], text) for n, text in items]
            assert store.index_issues(repo, batch) == len(batch)
            rows.update((row.number, row) for row in batch)
        else:
            assert store.drop_indexed(repo, items) == len(set(items) & set(rows))
            for n in items:
                rows.pop(n, None)
        assert _counts(store, repo) == _recount(rows)
        assert store.index_size(repo) == len(rows)
    if isinstance(store, Store):
        _check_fts(store)


def test_the_sqlite_full_text_index_survives_vacuum(tmp_path: Any) -> None:
    store = Store(tmp_path / "triage.db")
    store.index_issues("o/r", [_row(n, f"word{n} common") for n in range(1, 200)])
    store.drop_indexed("o/r", range(1, 200, 3))
    store.db.conn.execute("vacuum")
    store.index_issues("o/r", [_row(5, "changed")])
    _check_fts(store)
    assert _numbers(store.issues_with_terms("o/r", ["word7", "word5", "changed"])) == [5]
    store.close()


def test_two_writers_at_once_keep_the_counts_exact(store: HistoryStore, store_target: str) -> None:
    """Two connections replace the same issues at once: the counts are the final rows'."""
    words = ["crash", "hang", "leak", "slow", "error", "panic"]

    def writer(which: int) -> None:
        opened = make_store(Settings(db_path=store_target))
        try:
            for round_ in range(40):
                batch = [
                    _row(n, f"{words[(n + round_ + which) % 6]} {words[(which + round_) % 6]}")
                    for n in range(1, 9)
                ]
                opened.index_issues("o/r", batch)
        finally:
            opened.close()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    final = {n: row for n in range(1, 9) if (row := store.indexed_issue("o/r", n))}
    assert len(final) == 8
    assert _counts(store, "o/r") == _recount(final)
