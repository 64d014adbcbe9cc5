"""The live record: what happened after each gate decision and to each reported defect, and
where settling resumes."""

from yoyo import step  # type: ignore[import-untyped]

from bot.history.migrate import sql

__depends__ = {"0004_audit_weeks_by_value"}

BOTH = """
create table gate_outcomes (
    repo text not null,
    issue integer not null,
    decision_id bigint not null,
    model text not null,
    prompt_version text not null,
    policy_version text not null,
    verdict text not null,
    outcome text not null,
    expected text,
    reason text not null,
    event_at text,
    settled_at text not null,
    primary key (repo, issue)
);
create index gate_outcomes_record
    on gate_outcomes (repo, model, prompt_version, policy_version, outcome, verdict);

create table audit_defects (
    repo text not null,
    pr integer not null,
    head_sha text not null,
    path text not null,
    line integer not null,
    category text not null,
    review_comment_id bigint,
    model text not null,
    prompt_version text not null,
    created_at text not null,
    outcome text,
    reason text,
    event_at text,
    settled_at text,
    primary key (repo, pr, head_sha, path, line)
);
create index audit_defects_record on audit_defects (repo, model, prompt_version, outcome);

create table settle_cursors (
    repo text not null,
    kind text not null,
    since text not null,
    updated_at text not null,
    primary key (repo, kind)
);
"""

steps = [step(sql(BOTH))]
