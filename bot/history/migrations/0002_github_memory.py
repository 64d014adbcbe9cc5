"""What the bot knows of GitHub: its author comments, the labels it created, the
repository file at a commit."""

from yoyo import step  # type: ignore[import-untyped]

from bot.history.migrate import sql

__depends__ = {"0001_schema"}

BOTH = """
create table author_comments (
    repo text not null,
    issue integer not null,
    comment_id bigint not null,
    body_sha text not null,
    written_at text not null,
    primary key (repo, issue)
);

create table created_labels (
    repo text not null,
    name text not null,
    created_at text not null,
    primary key (repo, name)
);

create table repo_files (
    repo text not null,
    path text not null,
    sha text not null,
    text text,
    read_at text not null,
    primary key (repo, path)
);
"""

steps = [step(sql(BOTH))]
