"""The duplicate-search index: each indexed issue with its terms, each term's document count,
and each engine's full-text index over the terms.

SQLite: an external-content FTS5 table on ``issue_index``'s rowid, kept by triggers, whose
tokenizer splits at exactly what :mod:`bot.duplicates.terms` splits at (letters, marks and
digits are token characters; diacritics kept). PostgreSQL: a stored ``tsvector`` of the terms
with the ``simple`` configuration and a GIN index.
"""

from yoyo import step  # type: ignore[import-untyped]

from bot.history.migrate import sql

__depends__ = {"0006_unsettled_reasons"}

BOTH = """
create table issue_index (
    repo text not null,
    number integer not null,
    title text not null,
    body text not null,
    title_terms text not null,
    body_terms text not null,
    created_at text not null,
    indexed_at text not null,
    primary key (repo, number)
);

create table index_terms (
    repo text not null,
    term text not null,
    docs integer not null,
    primary key (repo, term)
);
"""

SQLITE = """
create virtual table issue_index_fts using fts5(
    title_terms, body_terms,
    content = 'issue_index', content_rowid = 'rowid',
    tokenize = "unicode61 remove_diacritics 0 categories 'L* M* Nd Nl'"
);

create trigger issue_index_fts_insert after insert on issue_index begin
    insert into issue_index_fts (rowid, title_terms, body_terms)
        values (new.rowid, new.title_terms, new.body_terms);
end;

create trigger issue_index_fts_delete after delete on issue_index begin
    insert into issue_index_fts (issue_index_fts, rowid, title_terms, body_terms)
        values ('delete', old.rowid, old.title_terms, old.body_terms);
end;

create trigger issue_index_fts_update after update on issue_index begin
    insert into issue_index_fts (issue_index_fts, rowid, title_terms, body_terms)
        values ('delete', old.rowid, old.title_terms, old.body_terms);
    insert into issue_index_fts (rowid, title_terms, body_terms)
        values (new.rowid, new.title_terms, new.body_terms);
end;
"""

POSTGRESQL = """
alter table issue_index add column search tsvector
    generated always as (to_tsvector('simple', title_terms || ' ' || body_terms)) stored;
create index issue_index_search on issue_index using gin (search);
"""

steps = [step(sql(BOTH, sqlite=SQLITE, postgresql=POSTGRESQL))]
