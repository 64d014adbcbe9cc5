"""An issue's possible duplicates as last ranked, what the bot said of them, and a maintainer's
dismissal."""

from yoyo import step  # type: ignore[import-untyped]

from bot.history.migrate import sql

__depends__ = {"0007_issue_index"}

BOTH = """
create table duplicate_suggestions (
    repo text not null,
    issue integer not null,
    candidates text not null,
    top integer,
    top_score real,
    ranked_at text,
    suggested_at text,
    dismissed_at text,
    dismissed_by text,
    outcome text,
    settled_at text,
    primary key (repo, issue)
);
create index duplicate_suggestions_open on duplicate_suggestions (repo, issue)
    where top is not null and outcome is null;
"""

steps = [step(sql(BOTH))]
