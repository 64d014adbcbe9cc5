"""The duplicate-search index both stores keep: its statements, its writes and its search.

``issue_index`` holds one row per issue and ``index_terms`` each term's document count per
repository, kept exact in the same transaction as the rows: a write reads the rows it replaces
or drops and applies the difference of the term sets. The stores give their way to execute
statements (``?`` parameters) and their full-text candidate query; the rest is here.

The engines' tokenizers and this module's whitespace split may disagree on a term that is not
a single run of letters, marks and digits: :func:`search` keeps only the rows whose own terms
hold a wanted term, so such a term never matches more than it says; a term with whitespace or
NUL cannot be one of a row's terms and is not searched at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import astuple
from datetime import UTC, datetime
from typing import Any

from bot.history.protocol import Execute, IndexedIssue, utc_now
from bot.urls import Redactor

__all__ = [
    "CHUNK",
    "COLUMNS",
    "Page",
    "canonical_time",
    "drop",
    "fts5_match",
    "index_size",
    "indexed_issue",
    "keep_vectors",
    "missing_vectors",
    "page_filters",
    "prepare",
    "search",
    "searchable",
    "term_docs",
    "title_vectors",
    "write",
]

ExecuteMany = Callable[[str, Sequence[Sequence[Any]]], object]
"""Runs one statement (``?`` parameters) once per parameter row."""

Page = Callable[[Sequence[str], int | None, int], list[IndexedIssue]]
"""A store's candidate query: up to ``limit`` rows that the engine matches to any of the
terms, below the number given (all when ``None``), newest number first; the repository,
``before`` and ``exclude`` bound in."""

CHUNK = 500
"""Terms or numbers per statement: SQLite's variables and PostgreSQL's parameters stay few."""

COLUMNS = "number, title, body, title_terms, body_terms, created_at"
"""``issue_index``'s columns of an :class:`IndexedIssue`, in its order."""

_UPSERT = (
    "insert into issue_index (repo, number, title, body, title_terms, body_terms, created_at, "
    "indexed_at) values (?, ?, ?, ?, ?, ?, ?, ?) on conflict (repo, number) do update set "
    "title = excluded.title, body = excluded.body, title_terms = excluded.title_terms, "
    "body_terms = excluded.body_terms, created_at = excluded.created_at, "
    "indexed_at = excluded.indexed_at"
)
_ADD_DOCS = (
    "insert into index_terms (repo, term, docs) values (?, ?, ?) "
    "on conflict (repo, term) do update set docs = index_terms.docs + excluded.docs"
)
_DROP_EMPTY = "delete from index_terms where repo = ? and term = ? and docs <= 0"
_DELETE = "delete from issue_index where repo = ? and number = ?"
_DELETE_VECTORS = "delete from title_vectors where repo = ? and number = ?"
_KEEP_VECTOR = (
    "insert into title_vectors (repo, number, model, vector) select ?, ?, ?, ? where exists "
    "(select 1 from issue_index where repo = ? and number = ? and title in (?, ?)) "
    "on conflict (repo, number, model) do update set vector = excluded.vector"
)


def canonical_time(text: str) -> str:
    """``text`` (ISO 8601 with an offset) as UTC ``YYYY-MM-DDTHH:MM:SSZ``, which orders as text.

    Raises:
        ValueError: unparseable, or without an offset.
    """
    moment = datetime.fromisoformat(text)
    if moment.utcoffset() is None:
        raise ValueError(f"a time without a UTC offset: {text!r}")
    return moment.astimezone(UTC).replace(tzinfo=None, microsecond=0).isoformat() + "Z"


def _chunks(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def _marks(count: int) -> str:
    return ", ".join("?" for _ in range(count))


def _issue(row: Sequence[Any]) -> IndexedIssue:
    number, title, body, title_terms, body_terms, created_at = row
    return IndexedIssue(int(number), title, body, title_terms, body_terms, created_at)


def _terms(issue: IndexedIssue) -> set[str]:
    return set(issue.title_terms.split()) | set(issue.body_terms.split())


def _holds(issue: IndexedIssue, wanted: set[str]) -> bool:
    """Whether one of ``issue``'s terms is in ``wanted`` (stops at the first)."""
    return not (
        wanted.isdisjoint(issue.title_terms.split()) and wanted.isdisjoint(issue.body_terms.split())
    )


def searchable(term: str) -> bool:
    """Whether ``term`` can be one of a row's terms (stored without NUL, split at whitespace)."""
    return bool(term) and "\x00" not in term and not any(c.isspace() for c in term)


def _encodable(value: str) -> str:
    """``value`` with a lone surrogate (a payload's ``\\ud800``) as U+FFFD: neither store's
    driver encodes one."""
    return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _clean(issue: IndexedIssue, redact: Redactor) -> IndexedIssue:
    def text(value: str) -> str:
        return redact(_encodable(value.replace("\x00", "")))

    return IndexedIssue(
        number=issue.number,
        title=text(issue.title),
        body=text(issue.body),
        title_terms=text(issue.title_terms),
        body_terms=text(issue.body_terms),
        created_at=canonical_time(issue.created_at.replace("\x00", "")),
    )


def _stored(execute: Execute, repo: str, numbers: Iterable[int]) -> dict[int, IndexedIssue]:
    found: dict[int, IndexedIssue] = {}
    for part in _chunks(sorted(set(numbers))):
        where = f"repo = ? and number in ({_marks(len(part))})"
        sql = f"select {COLUMNS} from issue_index where {where}"  # noqa: S608
        found.update((i.number, i) for i in map(_issue, execute(sql, [repo, *part]).fetchall()))
    return found


def _apply(executemany: ExecuteMany, repo: str, delta: Counter[str]) -> None:
    changed = sorted((term, n) for term, n in delta.items() if n)
    if changed:
        executemany(_ADD_DOCS, [(repo, term, n) for term, n in changed])
    emptied = [(repo, term) for term, n in changed if n < 0]
    if emptied:
        executemany(_DROP_EMPTY, emptied)


def prepare(rows: Sequence[IndexedIssue], redact: Redactor) -> list[IndexedIssue]:
    """``rows`` as the store keeps them: NUL stripped, a lone surrogate U+FFFD, through
    ``redact``, ``created_at`` canonical (before any transaction, so a bad time writes nothing).

    Raises:
        ValueError: a ``created_at`` is unparseable or has no offset.
    """
    return [_clean(row, redact) for row in rows]


def write(
    execute: Execute, executemany: ExecuteMany, repo: str, rows: Sequence[IndexedIssue]
) -> int:
    """Upsert prepared ``rows`` and apply their term changes, inside the caller's transaction;
    a row equal to the stored one is not written. Returns ``len(rows)``."""
    current = _stored(execute, repo, (row.number for row in rows))
    delta: Counter[str] = Counter()
    now = canonical_time(utc_now())
    upserts: list[list[Any]] = []
    retitled: list[tuple[str, int]] = []
    for row in rows:
        old = current.get(row.number)
        if old == row:
            continue
        if old is not None and old.title != row.title:
            retitled.append((repo, row.number))
        before, after = (_terms(old) if old else set()), _terms(row)
        delta.update(after - before)
        delta.subtract(before - after)
        upserts.append([repo, *astuple(row), now])
        current[row.number] = row
    if upserts:
        executemany(_UPSERT, upserts)
    if retitled:
        executemany(_DELETE_VECTORS, retitled)
    _apply(executemany, repo, delta)
    return len(rows)


def drop(execute: Execute, executemany: ExecuteMany, repo: str, numbers: Collection[int]) -> int:
    """Delete the issues ``numbers`` and their term counts, inside the caller's transaction;
    returns how many the index held."""
    current = _stored(execute, repo, numbers)
    delta: Counter[str] = Counter()
    for old in current.values():
        delta.subtract(_terms(old))
    if current:
        executemany(_DELETE, [(repo, number) for number in sorted(current)])
        executemany(_DELETE_VECTORS, [(repo, number) for number in sorted(current)])
    _apply(executemany, repo, delta)
    return len(current)


def index_size(execute: Execute, repo: str) -> int:
    """How many issues of ``repo`` the index holds."""
    return int(execute("select count(*) from issue_index where repo = ?", [repo]).fetchone()[0])


def indexed_issue(execute: Execute, repo: str, number: int) -> IndexedIssue | None:
    """The indexed issue ``number`` of ``repo``, or ``None``."""
    sql = f"select {COLUMNS} from issue_index where repo = ? and number = ?"  # noqa: S608
    row = execute(sql, [repo, number]).fetchone()
    return _issue(row) if row else None


def title_vectors(
    execute: Execute, repo: str, model: str, numbers: Collection[int]
) -> dict[int, bytes]:
    """The stored title vectors of ``model`` for those of ``numbers`` that have one."""
    found: dict[int, bytes] = {}
    for part in _chunks(sorted(set(numbers))):
        where = f"repo = ? and model = ? and number in ({_marks(len(part))})"
        sql = f"select number, vector from title_vectors where {where}"  # noqa: S608
        found.update((int(n), bytes(v)) for n, v in execute(sql, [repo, model, *part]).fetchall())
    return found


def keep_vectors(
    executemany: ExecuteMany,
    repo: str,
    model: str,
    vectors: Sequence[tuple[int, str, bytes]],
    redact: Redactor,
) -> int:
    """Store ``(number, title, vector)`` rows, each only while the index holds that issue with
    that title, as read from the index or as :func:`prepare` keeps it (a vector of a title since
    edited is not kept); returns ``len(vectors)``.

    The title read back is matched as it is: redacting it again need not give it back (a
    secret that ends in the stars that replace it), nor need another job's secrets."""
    if vectors:
        titles = [_encodable(title.replace("\x00", "")) for _, title, _ in vectors]
        executemany(
            _KEEP_VECTOR,
            [
                (repo, n, model, vector, repo, n, title, redact(title))
                for (n, _, vector), title in zip(vectors, titles, strict=True)
            ],
        )
    return len(vectors)


def missing_vectors(
    execute: Execute, repo: str, model: str, limit: int, below: int | None = None
) -> list[tuple[int, str]]:
    """Up to ``limit`` indexed issues of ``repo`` without a ``model`` vector, numbered below
    ``below`` when given: number and title, newest first."""
    sql = (
        "select i.number, i.title from issue_index i where i.repo = ? and i.number < ? and not "
        "exists (select 1 from title_vectors v where v.repo = i.repo and v.number = i.number "
        "and v.model = ?) order by i.number desc limit ?"
    )
    top = 2**63 - 1 if below is None else below
    return [(int(n), str(t)) for n, t in execute(sql, [repo, top, model, limit]).fetchall()]


def term_docs(execute: Execute, repo: str, terms: Collection[str]) -> dict[str, int]:
    """Each of ``terms`` that an indexed issue of ``repo`` contains, with how many do."""
    wanted = sorted({t for t in terms if searchable(t)})
    found: dict[str, int] = {}
    for part in _chunks(wanted):
        where = f"repo = ? and term in ({_marks(len(part))})"
        sql = f"select term, docs from index_terms where {where}"  # noqa: S608
        found.update((str(t), int(n)) for t, n in execute(sql, [repo, *part]).fetchall())
    return found


def page_filters(
    before: str | None, exclude: int | None, below: int | None
) -> tuple[str, list[Any]]:
    """The ``and …`` conditions on ``issue_index`` (aliased ``i``) of a candidate page, and
    their parameters (``before`` already canonical)."""
    where, params = "", []
    for condition, value in (
        ("i.created_at < ?", before),
        ("i.number <> ?", exclude),
        ("i.number < ?", below),
    ):
        if value is not None:
            where += f" and {condition}"
            params.append(value)
    return where, params


def fts5_match(terms: Iterable[str]) -> str:
    """An FTS5 query matching any of ``terms``, each a string literal (``"`` doubled)."""
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)


def search(page: Page, terms: Sequence[str], limit: int) -> list[IndexedIssue]:
    """The rows ``page`` finds for any of ``terms`` whose own terms hold one of them, newest
    number first, at most ``limit`` (see the module doc)."""
    wanted = sorted({t for t in terms if searchable(t)})
    if not wanted or limit <= 0:
        return []
    found: dict[int, IndexedIssue] = {}
    for part in _chunks(wanted):
        keep, below, kept = set(part), None, 0
        while kept < limit:
            rows = page(part, below, limit)
            matched = [r for r in rows if _holds(r, keep)]
            found.update((r.number, r) for r in matched)
            kept += len(matched)
            if len(rows) < limit:
                break
            below = rows[-1].number
    return sorted(found.values(), key=lambda r: -r.number)[:limit]
