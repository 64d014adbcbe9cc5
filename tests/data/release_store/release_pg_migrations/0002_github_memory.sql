-- What the bot knows of GitHub (bot/history/github_memory.py): the twin of the SQLite
-- migration m007_github_memory. GitHub's comment ids outgrow a 32-bit integer: bigint.
-- depends: 0001_schema

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
