"""``audit_weeks`` keyed by value: one row per repository, week, model, verdict, confidence
and retry, rebuilt from ``audits``."""

from yoyo import step  # type: ignore[import-untyped]

from bot.history.migrate import sql

__depends__ = {"0003_gate_policy"}

SQLITE = """
drop trigger audits_week_insert;
drop trigger audits_week_delete;
drop table audit_weeks;
create table audit_weeks (
    repo text not null, week text not null, model text not null,
    verdict text not null, confidence text not null, retried integer not null,
    audits integer not null default 0,
    primary key (repo, week, model, verdict, confidence, retried)
) without rowid;

create trigger audits_week_insert after insert on audits begin
    insert into audit_weeks (repo, week, model, verdict, confidence, retried, audits)
    values (new.repo, new.week, new.model, new.verdict, new.confidence, new.retried, 1)
    on conflict (repo, week, model, verdict, confidence, retried) do update set
        audits = audits + 1;
end;

create trigger audits_week_delete after delete on audits begin
    update audit_weeks set audits = audits - 1
    where repo = old.repo and week = old.week and model = old.model
        and verdict = old.verdict and confidence = old.confidence
        and retried = old.retried;
end;

insert into audit_weeks (repo, week, model, verdict, confidence, retried, audits)
select repo, week, model, verdict, confidence, retried, count(*)
from audits group by 1, 2, 3, 4, 5, 6;
"""

POSTGRESQL = """
lock table audits in share mode;

drop table audit_weeks;

create table audit_weeks (
    repo text not null, week text not null, model text not null,
    verdict text not null, confidence text not null, retried integer not null,
    audits integer not null default 0,
    primary key (repo, week, model, verdict, confidence, retried)
);

create or replace function triage_audits_week_insert() returns trigger language plpgsql as $$
begin
    insert into audit_weeks as w (repo, week, model, verdict, confidence, retried, audits)
    values (new.repo, new.week, new.model, new.verdict, new.confidence, new.retried, 1)
    on conflict (repo, week, model, verdict, confidence, retried) do update set
        audits = w.audits + 1;
    return null;
end
$$;

create or replace function triage_audits_week_delete() returns trigger language plpgsql as $$
begin
    update audit_weeks set audits = audits - 1
    where repo = old.repo and week = old.week and model = old.model
        and verdict = old.verdict and confidence = old.confidence and retried = old.retried;
    return null;
end
$$;

insert into audit_weeks (repo, week, model, verdict, confidence, retried, audits)
select repo, week, model, verdict, confidence, retried, count(*)
from audits group by repo, week, model, verdict, confidence, retried;
"""

steps = [step(sql(sqlite=SQLITE, postgresql=POSTGRESQL))]
