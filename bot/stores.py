"""The store table: each kind of store the history can live in, one row.

The settings rule (:func:`store_target`), the factory (``bot.factory.make_store``) and the doctor
(``bot.doctor.check_store``) read the same row. A row names its store's class and schema reader
as ``module:name`` strings: this table sits in the settings layer, below the stores, and the
factory imports them when a store is built (so psycopg loads only for PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.urls import KEYWORD_STRING_PROBLEM, LIBPQ_SCHEMES, libpq_keywords, read_url, shown_url

__all__ = [
    "STORES",
    "StoreKind",
    "shown_store",
    "store_kind",
    "store_secrets",
    "store_target",
]


@dataclass(frozen=True)
class StoreKind:
    """One kind of store.

    Attributes:
        name: as messages name it (``SQLite``).
        described: what a target of this kind is, for the message naming every kind.
        accepts: whether a target (``TRIAGE_DB``, ``--db``) names this kind; at most one row
            accepts any target.
        target: the target as the store opens it; raises ``ValueError`` when it is unusable.
        shown: the target as output may show it.
        secrets: the parts of the target to mask and redact.
        opens: ``module:name`` of the store, called ``(target, read_only=…, redact=…)``.
        schema: ``module:name`` of the doctor's reader, ``(target) -> SchemaState | None``
            (``None``: the store does not exist yet, and the first job creates it).
        on_runner: whether the store lives on the runner's disk (a file), so it outlives the
            job only where the runner keeps its disk; a server's store always does.
    """

    name: str
    described: str
    accepts: Callable[[str], bool]
    target: Callable[[str], str]
    shown: Callable[[str], str]
    secrets: Callable[[str], tuple[str, ...]]
    opens: str
    schema: str
    on_runner: bool = False


def _sqlite_file(text: str) -> bool:
    return "://" not in text and libpq_keywords(text) is None


def _sqlite_path(text: str) -> str:
    return str(Path(text).expanduser())


_DATABASE_URL_PREFIXES = tuple(f"{scheme}://" for scheme in LIBPQ_SCHEMES)


def _postgresql_url(text: str) -> str:
    """The URL as given.

    Raises:
        ValueError: libpq cannot read it, or reads it differently from the URL standard (its
            host or database name could then hold a piece of the password).
    """
    problem = read_url(text).problem
    if problem:
        raise ValueError(f"not a PostgreSQL URL the bot can use: {problem}")
    return text


STORES: tuple[StoreKind, ...] = (
    StoreKind(
        "SQLite",
        described="a SQLite file's path",
        accepts=_sqlite_file,
        target=_sqlite_path,
        shown=str,
        secrets=lambda _: (),
        opens="bot.history.store:Store",
        schema="bot.history.store:file_schema",
        on_runner=True,
    ),
    StoreKind(
        "PostgreSQL",
        described="a postgresql:// URL",
        accepts=lambda text: text.startswith(_DATABASE_URL_PREFIXES),
        target=_postgresql_url,
        shown=shown_url,
        secrets=lambda text: read_url(text).secrets,
        opens="bot.history.pg_store:PostgresStore",
        schema="bot.history.pg_store:server_schema",
    ),
)
"""Every kind of store, each accepting its own targets."""


def store_kind(target: str) -> StoreKind | None:
    """The row of :data:`STORES` that accepts ``target``, or ``None``.

    Raises:
        ValueError: two rows accept it.
    """
    kinds = [kind for kind in STORES if kind.accepts(target)]
    if len(kinds) > 1:
        raise ValueError(f"both {kinds[0].name} and {kinds[1].name} stores accept this target")
    return kinds[0] if kinds else None


def store_target(value: Any) -> str:
    """The settings rule of ``TRIAGE_DB``: the target as its store opens it.

    Raises:
        ValueError: no store accepts it (a ``mysql://`` URL, a libpq keyword string), or its
            store cannot use it.
    """
    text = str(value)
    kind = store_kind(text)
    if kind is None:
        if "://" not in text and libpq_keywords(text) is not None:
            raise ValueError(f"not a store the bot can use: {KEYWORD_STRING_PROBLEM}")
        raise ValueError(f"a store is {' or '.join(k.described for k in STORES)}")
    return kind.target(text)


def shown_store(value: Any) -> str:
    """A target as output may show it (a URL no store accepts as :func:`bot.urls.shown_url`)."""
    text = str(value)
    try:
        kind = store_kind(text)
    except ValueError:
        kind = None
    return kind.shown(text) if kind else shown_url(text)


def store_secrets(value: Any) -> tuple[str, ...]:
    """The secrets of a target, to mask and redact."""
    text = str(value)
    kind = store_kind(text)
    return kind.secrets(text) if kind else read_url(text).secrets
