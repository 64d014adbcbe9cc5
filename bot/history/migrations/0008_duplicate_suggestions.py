"""What the bot said about an issue's possible duplicates, and a maintainer's dismissal of it."""

from yoyo import step  # type: ignore[import-untyped]

from bot.history.migrate import sql

__depends__ = {"0007_issue_index"}

BOTH = """
create table duplicate_suggestions (
    repo text not null,
    issue integer not null,
    candidates text not null,
    suggested_at text,
    dismissed_at text,
    dismissed_by text,
    primary key (repo, issue)
);
"""

steps = [step(sql(BOTH))]
