"""The duplicate ranking (bot.duplicates.rank) against a brute-force reference in Python: the exact
TF-IDF cosine over the whole index (title twice, ``1 + ln tf``, idf ``ln((1+N)/(1+df)) + 1``).

The Ranker scores exactly only what the store retrieves (issues sharing one of the query's
uncommon terms) and, of those, a shortlist picked by a rough score. So the property is: its
top k is the reference's top k whenever each of the reference's top k holds a retrieving term
and sits in the rough shortlist (:func:`_precondition`); where every issue scoring above zero is
retrieved and fits the shortlist, the whole ranking is the reference's. Both stores give the
same ranking, to the float, and hostile issue text ranks like any other.
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bot.config import Settings
from bot.duplicates import rank
from bot.duplicates.rank import COMMON_FLOOR, COMMON_SHARE, Candidate, Ranker
from bot.duplicates.terms import IssueTerms, issue_terms
from bot.factory import make_store
from bot.history.protocol import HistoryStore, IndexedIssue
from bot.history.store import Store

_repos = itertools.count()
TOLERANCE = 1e-9
"""Scores closer than this are a tie whose order float rounding may decide."""


@dataclass(frozen=True)
class Doc:
    number: int
    title: str
    body: str
    created_at: str


def _row(doc: Doc) -> IndexedIssue:
    found = issue_terms(doc.title, doc.body)
    return IndexedIssue(doc.number, doc.title, doc.body, found.title, found.body, doc.created_at)


def _index(store: HistoryStore, docs: Sequence[Doc]) -> str:
    repo = f"test/rank{next(_repos)}"
    store.index_issues(repo, [_row(d) for d in docs])
    return repo


# --- the reference --------------------------------------------------------------------------------
def _counts(terms: IssueTerms) -> Counter[str]:
    counts = Counter(terms.body.split())
    for term in terms.title.split():
        counts[term] += 2
    return counts


@dataclass(frozen=True)
class Reference:
    """Every eligible issue's exact cosine with the query, and what retrieval would see."""

    scores: dict[int, float]
    counts: dict[int, Counter[str]]
    query: dict[str, float]
    idf: dict[str, float]
    retrieving: set[str]

    def top(self, k: int) -> list[tuple[int, float]]:
        ranked = sorted(
            ((n, s) for n, s in self.scores.items() if s > 0), key=lambda x: (-x[1], x[0])
        )
        return ranked[:k]

    def rough_order(self) -> list[int]:
        """The retrieved issues by the rough score (the query's retrieving terms over the root
        of an issue's distinct terms), as the shortlist picks them."""
        retrieved = [n for n in self.scores if not self.retrieving.isdisjoint(self.counts[n])]

        def rough(n: int) -> float:
            mine = self.counts[n]
            dot = math.fsum(
                self.query[t] * (1 + math.log(mine[t])) * self.idf[t]
                for t in self.retrieving
                if t in mine
            )
            return dot / math.sqrt(len(mine))

        return sorted(retrieved, key=lambda n: (-rough(n), n))


def reference(
    docs: Sequence[Doc], query: IssueTerms, *, exclude: int | None = None, before: str | None = None
) -> Reference:
    counts = {d.number: _counts(issue_terms(d.title, d.body)) for d in docs}
    size = len(docs)
    df = Counter(t for c in counts.values() for t in c)
    asked = _counts(query)
    idf = {
        t: math.log((1 + size) / (1 + df[t])) + 1 for t in set(df) | set(asked)
    }  # fmt: skip

    def vector(c: Counter[str]) -> dict[str, float]:
        weights = {t: (1 + math.log(n)) * idf[t] for t, n in c.items()}
        norm = math.sqrt(math.fsum(w * w for w in weights.values()))
        return {t: w / norm for t, w in weights.items()}

    q = vector(asked) if asked else {}
    own = set(counts[exclude]) if exclude in counts else set()  # the ranked issue, indexed
    held = {t for t in asked if df[t] - (t in own) > 0}  # another issue holds it
    uncommon = {t for t in held if df[t] <= max(COMMON_SHARE * size, COMMON_FLOOR)}
    scores = {}
    for doc in docs:
        if doc.number == exclude or (before is not None and doc.created_at >= before):
            continue
        d = vector(counts[doc.number])
        scores[doc.number] = math.fsum(w * d[t] for t, w in q.items() if t in d)
    unnormed = {t: (1 + math.log(n)) * idf[t] for t, n in asked.items()}
    norm = math.sqrt(math.fsum(w * w for w in unnormed.values())) or 1.0
    return Reference(
        scores,
        {n: counts[n] for n in scores},
        {t: w / norm for t, w in unnormed.items()},
        idf,
        uncommon or held,
    )


def _precondition(ref: Reference, k: int, shortlist: int) -> bool:
    """Each of the reference's top k holds a retrieving term and is in the rough shortlist,
    and no tie within :data:`TOLERANCE` straddles the k-th place or the shortlist's end."""
    top = [n for n, _ in ref.top(k)]
    rough = ref.rough_order()
    short = set(rough[: max(shortlist, k)])
    ranked = [s for _, s in ref.top(k + 1)]
    clear_cut = len(ranked) <= k or ranked[k - 1] - ranked[k] > TOLERANCE
    return clear_cut and all(n in short for n in top)


def assert_same_top(found: Sequence[Candidate], ref: Reference, k: int) -> None:
    """``found`` is the reference's top ``k``: the same issues in the same order (ties within
    :data:`TOLERANCE` in any order), each with its reference score."""
    want = ref.top(k)
    assert len(found) == len(want)
    for got, (number, score) in zip(found, want, strict=True):
        assert got.score == pytest.approx(score, abs=TOLERANCE)
        assert got.number == number or ref.scores[got.number] == pytest.approx(score, abs=TOLERANCE)
    assert {c.number for c in found} == {n for n, _ in want}


# --- the property ---------------------------------------------------------------------------------
WORDS = [f"w{n}" for n in range(40)]
_text = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)


@st.composite
def corpora(draw: st.DrawFn) -> tuple[list[Doc], IssueTerms, int | None, str | None, int]:
    size = draw(st.integers(1, 30))
    docs = [
        Doc(
            n,
            draw(_text),
            draw(_text),
            f"2026-01-{draw(st.integers(1, 28)):02d}T10:00:00Z",
        )
        for n in range(1, size + 1)
    ]
    query = issue_terms(draw(_text), draw(_text))
    exclude = draw(st.none() | st.integers(1, size))
    before = draw(st.none() | st.integers(1, 28).map(lambda d: f"2026-01-{d:02d}T10:00:00Z"))
    return docs, query, exclude, before, draw(st.integers(1, 6))


@pytest.fixture
def memory_store() -> Iterator[Store]:
    store = Store(":memory:")
    yield store
    store.close()


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much],
)
@given(case=corpora(), shortlist=st.sampled_from([1, 2, 4, 50]))
def test_the_top_k_is_the_references_when_it_is_retrieved_and_shortlisted(
    memory_store: Store,
    case: tuple[list[Doc], IssueTerms, int | None, str | None, int],
    shortlist: int,
) -> None:
    docs, query, exclude, before, k = case
    ref = reference(docs, query, exclude=exclude, before=before)
    assume(_precondition(ref, k, shortlist))
    repo = _index(memory_store, docs)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rank, "SHORTLIST", shortlist)
        found = Ranker(memory_store, repo).rank(query, exclude=exclude, before=before, k=k)
    assert_same_top(found, ref, k)


def _spread_corpus() -> tuple[list[Doc], IssueTerms]:
    """40 issues, each holding two of the query's 30 terms (each term in at most 4 issues:
    uncommon) and words of its own: every issue scores above zero and is retrieved, and 40
    fit the shortlist of 50."""
    docs = []
    for n in range(1, 41):
        title = f"q{n % 30} own{n}"
        body = f"q{(7 * n) % 30} q{n % 30} filler{n} filler{n}"
        docs.append(Doc(n, title, body, f"2026-01-{1 + n % 28:02d}T10:00:00Z"))
    query = issue_terms(
        " ".join(f"q{i}" for i in range(0, 30, 2)), " ".join(f"q{i}" for i in range(1, 30, 2))
    )
    return docs, query


def test_where_the_shortlist_is_the_whole_retrieval_the_ranking_is_the_references(
    memory_store: Store,
) -> None:
    docs, query = _spread_corpus()
    ref = reference(docs, query)
    assert sum(1 for s in ref.scores.values() if s > 0) == 40
    ranker = Ranker(memory_store, _index(memory_store, docs))
    found = ranker.rank(query, k=40)
    assert ranker.retrieved == 40
    assert_same_top(found, ref, 40)
    assert [c.number for c in found[:3]] == [n for n, _ in ref.top(3)]


def test_before_and_exclude_are_honoured(memory_store: Store) -> None:
    docs = [
        Doc(1, "parser crash on yaml anchors", "", "2026-01-01T10:00:00Z"),
        Doc(2, "parser crash on yaml anchors", "", "2026-01-05T10:00:00Z"),
        Doc(3, "parser crash on yaml aliases", "", "2026-01-03T10:00:00Z"),
        *(Doc(n, f"unrelated{n} words{n}", "", "2026-01-02T10:00:00Z") for n in range(4, 20)),
    ]
    ranker = Ranker(memory_store, _index(memory_store, docs))
    query = issue_terms("parser crash on yaml anchors", "")
    assert [c.number for c in ranker.rank(query, k=3)] == [1, 2, 3]
    assert [c.number for c in ranker.rank(query, exclude=1, k=3)] == [2, 3]
    early = ranker.rank(query, before="2026-01-05T10:00:00Z", k=3)
    assert [c.number for c in early] == [1, 3]
    assert [c.number for c in ranker.rank(query, before="2026-01-03T10:00:00Z", k=3)] == [1]
    assert ranker.rank(query, exclude=1, before="2026-01-03T10:00:00Z", k=3) == []


def test_equal_scores_are_ranked_by_the_lower_number(memory_store: Store) -> None:
    docs = [Doc(n, "same words here", "and here", "2026-01-01T10:00:00Z") for n in (9, 4, 7)]
    docs += [Doc(n, f"other{n}", "", "2026-01-01T10:00:00Z") for n in range(10, 30)]
    found = Ranker(memory_store, _index(memory_store, docs)).rank(
        issue_terms("same words", "here"), k=3
    )
    assert [c.number for c in found] == [4, 7, 9]
    assert found[0].score == found[1].score == found[2].score > 0


def test_the_same_words_in_another_order_tie_exactly(memory_store: Store) -> None:
    rng = random.Random(0)
    words = [f"w{i}" for i in range(8)]
    for _ in range(60):
        title, body = rng.choices(words, k=2), rng.choices(words, k=6)
        docs = [
            Doc(3, " ".join(title), " ".join(body), "2026-01-01T10:00:00Z"),
            Doc(5, " ".join(title), " ".join(reversed(body)), "2026-01-01T10:00:00Z"),
            *(Doc(n, f"other{n}", "", "2026-01-01T10:00:00Z") for n in range(10, 30)),
        ]
        query = issue_terms(" ".join(rng.choices(words, k=2)), " ".join(rng.choices(words, k=3)))
        found = Ranker(memory_store, _index(memory_store, docs)).rank(query, k=2)
        if found:
            assert [c.number for c in found] == [3, 5]
            assert found[0].score == found[1].score


def test_an_empty_query_ranks_nothing(memory_store: Store) -> None:
    ranker = Ranker(
        memory_store, _index(memory_store, [Doc(1, "a title", "", "2026-01-01T10:00:00Z")])
    )
    assert ranker.rank(IssueTerms("", ""), k=5) == []
    assert ranker.rank(issue_terms("?!", "... --- ***"), k=5) == []


def test_an_issue_of_punctuation_only_is_indexed_and_never_ranked(memory_store: Store) -> None:
    docs = [
        Doc(1, "!!! ???", "*** --- ((( )))", "2026-01-01T10:00:00Z"),
        Doc(2, "login fails with a timeout", "", "2026-01-02T10:00:00Z"),
        *(Doc(n, f"other{n}", "", "2026-01-01T10:00:00Z") for n in range(3, 12)),
    ]
    repo = _index(memory_store, docs)
    assert memory_store.index_size(repo) == 11
    stored = memory_store.indexed_issue(repo, 1)
    assert stored is not None
    assert (stored.title_terms, stored.body_terms) == ("", "")
    found = Ranker(memory_store, repo).rank(issue_terms("login timeout !!!", "???"), k=5)
    assert [c.number for c in found] == [2]


# --- both stores ----------------------------------------------------------------------------------
HOSTILE = (
    '"quoted" a""b * w* NEAR( NEAR(a b) AND OR NOT a OR b - -neg ^ ^caret : title_terms:x ( ) '
    "(grouped) &|!<-> a&b a|b !a a<->b a:* \\ back\\slash \x00 nul\x00byte ' it's ;-- drop;-- "
    "{a b} + $$ $1 %s ? ?1 @x"
)
"""Query syntax of FTS5 and of PostgreSQL's tsquery, SQL's quotes and comments, NUL."""


def _world(seed: int = 3) -> list[Doc]:
    """300 issues of Zipf-drawn words (ties, common and rare terms), two of them hostile."""
    rng = random.Random(seed)
    words = [f"v{n}" for n in range(600)]
    weights = [1 / (n + 1) for n in range(len(words))]

    def text(k: int) -> str:
        return " ".join(rng.choices(words, weights, k=k))

    docs = [
        Doc(
            n,
            text(6),
            text(rng.randint(0, 40)),
            f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}T0{n % 10}:00:00Z",
        )
        for n in range(1, 301)
    ]
    docs[40] = Doc(41, f"hostile {HOSTILE}", HOSTILE, docs[40].created_at)
    docs[80] = Doc(81, text(4), f"{HOSTILE} {text(10)}", docs[80].created_at)
    return docs


def test_both_stores_give_the_same_ranking_to_the_float(
    both_stores: tuple[HistoryStore, HistoryStore],
) -> None:
    docs = _world()
    repos = [_index(store, docs) for store in both_stores]
    queries = [issue_terms(d.title, d.body) for d in docs[::15]] + [
        issue_terms(HOSTILE, HOSTILE),
        issue_terms("v0 v1 v2", ""),  # common terms only
    ]
    shortlisted = 0
    for query, before in itertools.product(queries, (None, "2026-06-15T00:00:00Z")):
        rankers = [Ranker(s, r) for s, r in zip(both_stores, repos, strict=True)]
        sqlite, pg = (rk.rank(query, before=before, k=10) for rk in rankers)
        assert sqlite == pg
        assert sqlite
        assert rankers[0].retrieved == rankers[1].retrieved
        shortlisted += rankers[0].retrieved > rank.SHORTLIST
    assert shortlisted  # the rough shortlist cut some retrievals, on both stores alike


@pytest.fixture
def store(store_target: str) -> Iterator[HistoryStore]:
    opened = make_store(Settings(db_path=store_target))
    yield opened
    opened.close()


def test_hostile_issue_text_indexes_and_finds_its_planted_duplicate(store: HistoryStore) -> None:
    original = Doc(
        5, f'Crash in "yaml" parser NEAR( anchors * {HOSTILE}', f"stack overflow {HOSTILE}",
        "2026-02-01T10:00:00Z",
    )  # fmt: skip
    planted = Doc(
        9, f"crash in yaml parser near anchors ^ -- {HOSTILE}", f"stack overflow again {HOSTILE}",
        "2026-02-03T10:00:00Z",
    )  # fmt: skip
    others = [
        Doc(n, f"{HOSTILE[n % 7 :]} unrelated{n} topic{n % 4}", f"body{n} {HOSTILE[: n % 30]}",
            "2026-01-15T10:00:00Z")
        for n in range(10, 40)
    ]  # fmt: skip
    near_miss = Doc(7, f"yaml parser question {HOSTILE[:60]}", "", "2026-02-02T10:00:00Z")
    docs = [original, near_miss, planted, *others]
    repo = _index(store, docs)
    assert store.index_size(repo) == len(docs)
    kept = store.indexed_issue(repo, 5)
    assert kept is not None
    assert "\x00" not in kept.title + kept.body
    ranker = Ranker(store, repo)
    found = ranker.rank(issue_terms(original.title, original.body), exclude=5, k=3)
    assert [c.number for c in found[:2]] == [9, 7]
    assert found[0].score > found[1].score
    found = ranker.rank(
        issue_terms(planted.title, planted.body), exclude=9, before=planted.created_at, k=3
    )
    assert [c.number for c in found[:2]] == [5, 7]
    ref = reference(docs, issue_terms(original.title, original.body), exclude=5)
    assert found[0].score == pytest.approx(
        reference(docs, issue_terms(planted.title, planted.body), exclude=9).scores[5],
        abs=TOLERANCE,
    )
    assert ref.top(1)[0][0] == 9


@pytest.mark.parametrize("indexed", [False, True])
def test_words_no_other_issue_holds_do_not_crowd_out_retrieval(
    memory_store: Store, indexed: bool
) -> None:
    """A new issue with many words of its own (a log, say) still finds the earlier report:
    only terms another issue holds retrieve, whether or not the issue is indexed yet."""
    report = "The editor crashes when saving a file whose name has unicode characters"
    docs = [Doc(1, "Editor crashes saving unicode file names", report, "2025-01-01T00:00:00Z")]
    docs += [
        Doc(n, f"Unrelated {n}", f"the toolbar button {n} colour is off", "2025-01-02T00:00:00Z")
        for n in range(2, 30)
    ]
    own = " ".join(f"zq{n}x " * 4 for n in range(60))  # 60 words no other issue has, 4 times
    query = Doc(
        99, "Editor crashes saving unicode file names", f"{report}\n{own}", "2025-02-01T00:00:00Z"
    )
    repo = _index(memory_store, docs + ([query] if indexed else []))
    found = Ranker(memory_store, repo).rank(
        issue_terms(query.title, query.body), exclude=99, before=query.created_at, k=3
    )
    assert found[0].number == 1
