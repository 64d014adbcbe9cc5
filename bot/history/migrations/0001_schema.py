"""The decision tables, their indexes and unique keys, and the weekly sums kept by triggers."""

from yoyo import step  # type: ignore[import-untyped]

from bot.history.migrate import sql

SQLITE = """
create table audits (
    "id" integer primary key,
    "repo" text not null,
    "pr" integer not null,
    "head_sha" text not null,
    "path" text not null,
    "line_start" integer not null,
    "line_end" integer not null,
    "verdict" text not null,
    "confidence" text not null,
    "retried" integer not null,
    "audit_format" text,
    "model" text not null,
    "prompt_version" text not null,
    "created_at" text not null,
    "prompt_tokens" integer,
    "output_tokens" integer,
    "duration_ms" real,
    "markdown" text,
    "week" text
);
create index idx_audits_repo_created_at on audits (repo, created_at);
create index idx_audits_repo_pr_head_sha on audits (repo, pr, head_sha);
create index idx_audits_repo_week_verdict_confidence_retried
    on audits (repo, week, verdict, confidence, retried);
create unique index audits_key on audits (repo, pr, head_sha, path, line_start, line_end);

create table gate_decisions (
    "id" integer primary key,
    "repo" text not null,
    "issue" integer not null,
    "event" text,
    "verdict" text,
    "label" text not null,
    "reason" text,
    "error_kind" text,
    "model" text not null,
    "prompt_version" text not null,
    "created_at" text not null,
    "prompt_tokens" integer,
    "output_tokens" integer,
    "duration_ms" real,
    "content_sha" text,
    "week" text
);
create index idx_gate_decisions_repo_issue_created_at on gate_decisions (repo, issue, created_at);
create index idx_gate_decisions_repo_week_duration_ms on gate_decisions (repo, week, duration_ms);
create unique index gate_decisions_key
    on gate_decisions (repo, issue, content_sha, model, prompt_version, label);

create table audit_weeks (
    repo text not null, week text not null,
    audits integer not null default 0,
    go integer not null default 0, go_with_notes integer not null default 0,
    fix integer not null default 0, retried integer not null default 0,
    high integer not null default 0, medium integer not null default 0,
    low integer not null default 0,
    primary key (repo, week)
);

create trigger audits_week_insert after insert on audits begin
    insert into audit_weeks
        (repo, week, audits, go, go_with_notes, fix, retried, high, medium, low)
    values (new.repo, new.week, 1, new.verdict = 'GO', new.verdict = 'GO_WITH_NOTES',
            new.verdict = 'FIX', new.retried, new.confidence = 'High',
            new.confidence = 'Medium', new.confidence = 'Low')
    on conflict (repo, week) do update set
        audits = audits + 1,
        go = go + excluded.go,
        go_with_notes = go_with_notes + excluded.go_with_notes,
        fix = fix + excluded.fix,
        retried = retried + excluded.retried,
        high = high + excluded.high,
        medium = medium + excluded.medium,
        low = low + excluded.low;
end;

create trigger audits_week_delete after delete on audits begin
    update audit_weeks set
        audits = audits - 1,
        go = go - (old.verdict = 'GO'),
        go_with_notes = go_with_notes - (old.verdict = 'GO_WITH_NOTES'),
        fix = fix - (old.verdict = 'FIX'),
        retried = retried - old.retried,
        high = high - (old.confidence = 'High'),
        medium = medium - (old.confidence = 'Medium'),
        low = low - (old.confidence = 'Low')
    where repo = old.repo and week = old.week;
end;

create table gate_weeks (
    repo text not null, week text not null,
    verdict text not null, error_kind text not null,
    model text not null, prompt_version text not null,
    decisions integer not null default 0, timed integer not null default 0,
    primary key (repo, week, verdict, error_kind, model, prompt_version)
) without rowid;

-- the store writes week; a row inserted otherwise gets it here
create trigger gate_week_fill after insert on gate_decisions when new.week is null begin
    update gate_decisions set week = date(new.created_at, 'weekday 0', '-6 days')
    where id = new.id;
end;

create trigger gate_week_insert after insert on gate_decisions begin
    insert into gate_weeks
        (repo, week, verdict, error_kind, model, prompt_version, decisions, timed)
    values (new.repo,
            coalesce(new.week, date(new.created_at, 'weekday 0', '-6 days')),
            coalesce(new.verdict, ''),
            coalesce(new.error_kind, ''), new.model, new.prompt_version, 1,
            coalesce(new.duration_ms, 0) > 0)
    on conflict (repo, week, verdict, error_kind, model, prompt_version) do update set
        decisions = decisions + 1,
        timed = timed + excluded.timed;
end;

create trigger gate_week_delete after delete on gate_decisions begin
    update gate_weeks set
        decisions = decisions - 1,
        timed = timed - (coalesce(old.duration_ms, 0) > 0)
    where repo = old.repo
        and week = coalesce(old.week, date(old.created_at, 'weekday 0', '-6 days'))
        and verdict = coalesce(old.verdict, '')
        and error_kind = coalesce(old.error_kind, '')
        and model = old.model and prompt_version = old.prompt_version;
end;
"""

POSTGRESQL = """
create table audits (
    id bigint generated by default as identity primary key,
    repo text not null,
    pr integer not null,
    head_sha text not null,
    path text not null,
    line_start integer not null,
    line_end integer not null,
    verdict text not null,
    confidence text not null,
    retried integer not null,
    audit_format text,
    model text not null,
    prompt_version text not null,
    created_at text not null,
    prompt_tokens integer,
    output_tokens integer,
    duration_ms double precision,
    markdown text,
    week text,
    constraint audits_key unique (repo, pr, head_sha, path, line_start, line_end)
);
create index audits_repo_created_at on audits (repo, created_at);
create index audits_repo_pr_head_sha on audits (repo, pr, head_sha);
create index audits_repo_week on audits (repo, week, verdict, confidence, retried);

create table gate_decisions (
    id bigint generated by default as identity primary key,
    repo text not null,
    issue integer not null,
    event text,
    verdict text,
    label text not null,
    reason text,
    error_kind text,
    model text not null,
    prompt_version text not null,
    created_at text not null,
    prompt_tokens integer,
    output_tokens integer,
    duration_ms double precision,
    content_sha text,
    week text,
    constraint gate_decisions_key unique (repo, issue, content_sha, model, prompt_version, label)
);
create index gate_decisions_repo_issue on gate_decisions (repo, issue, created_at);
create index gate_decisions_repo_week on gate_decisions (repo, week, duration_ms);

create table audit_weeks (
    repo text not null, week text not null,
    audits integer not null default 0,
    go integer not null default 0, go_with_notes integer not null default 0,
    fix integer not null default 0, retried integer not null default 0,
    high integer not null default 0, medium integer not null default 0,
    low integer not null default 0,
    primary key (repo, week)
);

create table gate_weeks (
    repo text not null, week text not null,
    verdict text not null, error_kind text not null,
    model text not null, prompt_version text not null,
    decisions integer not null default 0, timed integer not null default 0,
    primary key (repo, week, verdict, error_kind, model, prompt_version)
);

create function triage_audits_week_insert() returns trigger language plpgsql as $$
begin
    insert into audit_weeks as w
        (repo, week, audits, go, go_with_notes, fix, retried, high, medium, low)
    values (new.repo, new.week, 1, (new.verdict = 'GO')::int,
            (new.verdict = 'GO_WITH_NOTES')::int, (new.verdict = 'FIX')::int, new.retried,
            (new.confidence = 'High')::int, (new.confidence = 'Medium')::int,
            (new.confidence = 'Low')::int)
    on conflict (repo, week) do update set
        audits = w.audits + 1,
        go = w.go + excluded.go,
        go_with_notes = w.go_with_notes + excluded.go_with_notes,
        fix = w.fix + excluded.fix,
        retried = w.retried + excluded.retried,
        high = w.high + excluded.high,
        medium = w.medium + excluded.medium,
        low = w.low + excluded.low;
    return null;
end
$$;

create trigger audits_week_insert after insert on audits
    for each row execute function triage_audits_week_insert();

create function triage_audits_week_delete() returns trigger language plpgsql as $$
begin
    update audit_weeks set
        audits = audits - 1,
        go = go - (old.verdict = 'GO')::int,
        go_with_notes = go_with_notes - (old.verdict = 'GO_WITH_NOTES')::int,
        fix = fix - (old.verdict = 'FIX')::int,
        retried = retried - old.retried,
        high = high - (old.confidence = 'High')::int,
        medium = medium - (old.confidence = 'Medium')::int,
        low = low - (old.confidence = 'Low')::int
    where repo = old.repo and week = old.week;
    return null;
end
$$;

create trigger audits_week_delete after delete on audits
    for each row execute function triage_audits_week_delete();

-- The Monday (UTC) of a row's week when the writer left it out (the store always sets it).
create function triage_week_fill() returns trigger language plpgsql as $$
begin
    if new.week is null then
        new.week := to_char(date_trunc('week', new.created_at::timestamptz at time zone 'UTC'),
                            'YYYY-MM-DD');
    end if;
    return new;
end
$$;

create trigger audits_week_fill before insert on audits
    for each row execute function triage_week_fill();
create trigger gate_week_fill before insert on gate_decisions
    for each row execute function triage_week_fill();

create function triage_gate_week_insert() returns trigger language plpgsql as $$
begin
    insert into gate_weeks as w
        (repo, week, verdict, error_kind, model, prompt_version, decisions, timed)
    values (new.repo, new.week, coalesce(new.verdict, ''), coalesce(new.error_kind, ''),
            new.model, new.prompt_version, 1, (coalesce(new.duration_ms, 0) > 0)::int)
    on conflict (repo, week, verdict, error_kind, model, prompt_version) do update set
        decisions = w.decisions + 1,
        timed = w.timed + excluded.timed;
    return null;
end
$$;

create trigger gate_week_insert after insert on gate_decisions
    for each row execute function triage_gate_week_insert();

create function triage_gate_week_delete() returns trigger language plpgsql as $$
begin
    update gate_weeks set
        decisions = decisions - 1,
        timed = timed - (coalesce(old.duration_ms, 0) > 0)::int
    where repo = old.repo and week = old.week
        and verdict = coalesce(old.verdict, '') and error_kind = coalesce(old.error_kind, '')
        and model = old.model and prompt_version = old.prompt_version;
    return null;
end
$$;

create trigger gate_week_delete after delete on gate_decisions
    for each row execute function triage_gate_week_delete();
"""

steps = [step(sql(sqlite=SQLITE, postgresql=POSTGRESQL))]
