"""Each indexed issue's title vector, per title model: the duplicate ranking's second stage.

A vector is the model's embedding as little-endian float32 bytes. A changed title or a dropped
issue deletes its vector in the index write's transaction, so a stored vector is always its
title's.
"""

from yoyo import step  # type: ignore[import-untyped]

from bot.history.migrate import sql

__depends__ = {"0008_duplicate_suggestions"}

SQLITE = """
create table title_vectors (
    repo text not null,
    number integer not null,
    model text not null,
    vector blob not null,
    primary key (repo, number, model)
);
"""

POSTGRESQL = """
create table title_vectors (
    repo text not null,
    number integer not null,
    model text not null,
    vector bytea not null,
    primary key (repo, number, model)
);
"""

steps = [step(sql(sqlite=SQLITE, postgresql=POSTGRESQL))]
