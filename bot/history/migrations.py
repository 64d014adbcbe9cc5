"""The store's schema, as named sqlite-utils migrations applied on open.

Never edit an applied migration: add a new one. Tables:

``audits``          accepted audits only, one row per segment (rejected ones are never stored);
                    ``week`` is the Monday of ``created_at``'s week (UTC), set on insert
``gate_decisions``  every gate decision, including ``validator-error`` ones; ``week`` as in
                    ``audits`` (from ``m006_gate_week``)
``audit_weeks``     weekly counts of ``audits`` per repository, model, verdict, confidence and
                    retry, kept by triggers (one row per combination of values: ``m010``)
``gate_weeks``      weekly counts of ``gate_decisions`` per repository, verdict, error kind,
                    model and prompt version, kept by triggers
``author_comments`` ``created_labels`` ``repo_files``: what the bot knows of GitHub (``m007``)

Timestamps are UTC ISO 8601 strings (``2026-11-30T05:00:00+00:00``) so the file reads the same in
sqlite-utils, Datasette and the sqlite3 shell.
"""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.db import Table
from sqlite_utils.migrations import Migrations

__all__ = ["MIGRATIONS"]

MIGRATIONS = Migrations("triage-bot")


def _table(db: Database, name: str) -> Table:
    table = db[name]
    assert isinstance(table, Table)
    return table


@MIGRATIONS()
def m001_audits(db: Database) -> None:
    """Accepted audits: where, what verdict, how it was produced, and at what cost."""
    audits = _table(db, "audits")
    audits.create(
        {
            "id": int,
            "repo": str,
            "pr": int,
            "head_sha": str,
            "path": str,
            "line_start": int,
            "line_end": int,
            "verdict": str,
            "confidence": str,
            "retried": int,
            "audit_format": str,
            "model": str,
            "prompt_version": str,
            "created_at": str,
            "prompt_tokens": int,
            "output_tokens": int,
            "duration_ms": float,
            "markdown": str,
        },
        pk="id",
        not_null={"repo", "pr", "head_sha", "path", "line_start", "line_end", "verdict",
                  "confidence", "retried", "model", "prompt_version", "created_at"},
    )  # fmt: skip
    audits.create_index(["repo", "created_at"])
    audits.create_index(["repo", "pr", "head_sha"])


@MIGRATIONS()
def m002_gate_decisions(db: Database) -> None:
    """Every gate decision, so a later run knows what the bot last applied."""
    gates = _table(db, "gate_decisions")
    gates.create(
        {
            "id": int,
            "repo": str,
            "issue": int,
            "event": str,
            "verdict": str,
            "label": str,
            "reason": str,
            "error_kind": str,
            "model": str,
            "prompt_version": str,
            "created_at": str,
            "prompt_tokens": int,
            "output_tokens": int,
            "duration_ms": float,
        },
        pk="id",
        not_null={"repo", "issue", "label", "model", "prompt_version", "created_at"},
    )
    gates.create_index(["repo", "issue", "created_at"])


@MIGRATIONS()
def m003_audit_week(db: Database) -> None:
    """The Monday (UTC) of each audit's week, stored, with a covering index: weekly statistics
    then read only the index (≤ 50 ms over 100k rows: benchmarks/commands.py)."""
    audits = _table(db, "audits")
    audits.add_column("week", str)
    db.execute("update audits set week = date(created_at, 'weekday 0', '-6 days')")
    audits.create_index(["repo", "week", "verdict", "confidence", "retried"])


@MIGRATIONS()
def m004_audit_weeks(db: Database) -> None:
    """Weekly sums of accepted audits, kept by triggers on ``audits`` (insert, delete), so
    ``/audit_stats`` reads one row per week whatever the number of audits. Derived only from
    ``audits``, which holds accepted audits only."""
    db.execute(
        """
        create table audit_weeks (
            repo text not null, week text not null,
            audits integer not null default 0,
            go integer not null default 0, go_with_notes integer not null default 0,
            fix integer not null default 0, retried integer not null default 0,
            high integer not null default 0, medium integer not null default 0,
            low integer not null default 0,
            primary key (repo, week)
        )
        """
    )
    db.execute(
        """
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
        end
        """
    )
    db.execute(
        """
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
        end
        """
    )
    db.execute(
        """
        insert into audit_weeks
            (repo, week, audits, go, go_with_notes, fix, retried, high, medium, low)
        select repo, week, count(*), sum(verdict = 'GO'), sum(verdict = 'GO_WITH_NOTES'),
               sum(verdict = 'FIX'), sum(retried), sum(confidence = 'High'),
               sum(confidence = 'Medium'), sum(confidence = 'Low')
        from audits group by repo, week
        """
    )


@MIGRATIONS()
def m005_gate_content(db: Database) -> None:
    """The SHA-256 (16 hex digits) of the judged title and body with each gate decision, so a
    replayed event whose issue text, model and prompt are unchanged is recognised and skipped
    without a model call or a write. Older rows have none and never match."""
    _table(db, "gate_decisions").add_column("content_sha", str)


@MIGRATIONS()
def m006_gate_week(db: Database) -> None:
    """Gate health (``/triage_stats``, ``bot.gate.stats``) without reading the rows:
    the Monday (UTC) of each decision's week, stored; an index on ``(repo, week,
    duration_ms)`` that gives a week's model times in order (percentiles by rank); and
    ``gate_weeks``, the decisions per week, verdict, error kind, model and prompt version
    (``''`` for no verdict or no kind), with how many reached the model, kept by triggers on
    ``gate_decisions`` (insert, delete) as ``audit_weeks`` is, so the figures stay fast over
    100k rows (benchmarks/commands.py)."""
    gates = _table(db, "gate_decisions")
    gates.add_column("week", str)
    db.execute("update gate_decisions set week = date(created_at, 'weekday 0', '-6 days')")
    gates.create_index(["repo", "week", "duration_ms"])
    db.execute(
        """
        create table gate_weeks (
            repo text not null, week text not null,
            verdict text not null, error_kind text not null,
            model text not null, prompt_version text not null,
            decisions integer not null default 0, timed integer not null default 0,
            primary key (repo, week, verdict, error_kind, model, prompt_version)
        ) without rowid
        """
    )
    # Store.record_gate writes ``week``; a row inserted otherwise gets it here, and is counted
    # in its week below whichever trigger SQLite runs first.
    db.execute(
        """
        create trigger gate_week_fill after insert on gate_decisions when new.week is null begin
            update gate_decisions set week = date(new.created_at, 'weekday 0', '-6 days')
            where id = new.id;
        end
        """
    )
    db.execute(
        """
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
        end
        """
    )
    db.execute(
        """
        create trigger gate_week_delete after delete on gate_decisions begin
            update gate_weeks set
                decisions = decisions - 1,
                timed = timed - (coalesce(old.duration_ms, 0) > 0)
            where repo = old.repo
                and week = coalesce(old.week, date(old.created_at, 'weekday 0', '-6 days'))
                and verdict = coalesce(old.verdict, '')
                and error_kind = coalesce(old.error_kind, '')
                and model = old.model and prompt_version = old.prompt_version;
        end
        """
    )
    db.execute(
        """
        insert into gate_weeks
            (repo, week, verdict, error_kind, model, prompt_version, decisions, timed)
        select repo, week, coalesce(verdict, ''), coalesce(error_kind, ''), model,
               prompt_version, count(*), sum(coalesce(duration_ms, 0) > 0)
        from gate_decisions group by 1, 2, 3, 4, 5, 6
        """
    )


@MIGRATIONS()
def m007_github_memory(db: Database) -> None:
    """What the bot knows of GitHub, so a run need not ask again
    (``bot.history.github_memory``): the author comment it last wrote on each issue (its
    id and the SHA-256 of its body), the gate labels it created in each repository (name as
    written, compared lower-cased as GitHub does), and the repository file as read at a
    default-branch commit (``text`` null: no file at that commit), one row per repository and
    path, replaced by the next commit's."""
    _table(db, "author_comments").create(
        {"repo": str, "issue": int, "comment_id": int, "body_sha": str, "written_at": str},
        pk=("repo", "issue"),
        not_null={"repo", "issue", "comment_id", "body_sha", "written_at"},
    )
    _table(db, "created_labels").create(
        {"repo": str, "name": str, "created_at": str},
        pk=("repo", "name"),
        not_null={"repo", "name", "created_at"},
    )
    _table(db, "repo_files").create(
        {"repo": str, "path": str, "sha": str, "text": str, "read_at": str},
        pk=("repo", "path"),
        not_null={"repo", "path", "sha", "read_at"},
    )


@MIGRATIONS()
def m008_unique_keys(db: Database) -> None:
    """The protocol's unique keys (:mod:`bot.history.protocol`): one audit per
    segment and head SHA, one gate decision per issue, judged text, model, prompt version and
    label, so two writers on the same event cannot both insert. Duplicates an older version
    left keep their newest row (the delete triggers take the others out of the weekly sums);
    an empty content hash becomes ``NULL`` (unknown text: matches no other row)."""
    db.execute(
        "delete from audits where id not in (select max(id) from audits "
        "group by repo, pr, head_sha, path, line_start, line_end)"
    )
    db.execute(
        "create unique index audits_key on audits (repo, pr, head_sha, path, line_start, line_end)"
    )
    db.execute("update gate_decisions set content_sha = null where content_sha = ''")
    db.execute(
        "delete from gate_decisions where content_sha is not null and id not in "
        "(select max(id) from gate_decisions where content_sha is not null "
        "group by repo, issue, content_sha, model, prompt_version, label)"
    )
    db.execute(
        "create unique index gate_decisions_key on gate_decisions "
        "(repo, issue, content_sha, model, prompt_version, label)"
    )


@MIGRATIONS()
def m009_gate_policy(db: Database) -> None:
    """The decision policy's version beside the prompt version (``policy@SHA8``,
    :attr:`bot.policy_file.GatePolicy.version`), and in the gate decision's unique key: the
    same text judged by the same model under another policy is another decision. Older rows
    have none (``NULL``: they match no new row)."""
    _table(db, "gate_decisions").add_column("policy_version", str)
    db.execute("drop index gate_decisions_key")
    db.execute(
        "create unique index gate_decisions_key on gate_decisions "
        "(repo, issue, content_sha, model, prompt_version, policy_version, label)"
    )


@MIGRATIONS()
def m010_audit_weeks_by_value(db: Database) -> None:
    """``audit_weeks`` keyed by value: one row per repository, week, model, verdict, confidence
    and retry (0/1) with the accepted audits it counts, where ``m004`` kept one column per
    verdict and confidence. A verdict or confidence the contract adds is a new key value, not
    a new column, and the per-model figures read these counts instead of ``audits``. Kept by
    the same triggers on ``audits`` (insert, delete). The counts are rebuilt from ``audits``,
    from which alone the old sums were derived: those counted each value on its own and cannot
    tell how verdicts, confidences and retries combine."""
    db.execute("drop trigger audits_week_insert")
    db.execute("drop trigger audits_week_delete")
    db.execute("drop table audit_weeks")
    db.execute(
        """
        create table audit_weeks (
            repo text not null, week text not null, model text not null,
            verdict text not null, confidence text not null, retried integer not null,
            audits integer not null default 0,
            primary key (repo, week, model, verdict, confidence, retried)
        ) without rowid
        """
    )
    db.execute(
        """
        create trigger audits_week_insert after insert on audits begin
            insert into audit_weeks (repo, week, model, verdict, confidence, retried, audits)
            values (new.repo, new.week, new.model, new.verdict, new.confidence, new.retried, 1)
            on conflict (repo, week, model, verdict, confidence, retried) do update set
                audits = audits + 1;
        end
        """
    )
    db.execute(
        """
        create trigger audits_week_delete after delete on audits begin
            update audit_weeks set audits = audits - 1
            where repo = old.repo and week = old.week and model = old.model
                and verdict = old.verdict and confidence = old.confidence
                and retried = old.retried;
        end
        """
    )
    db.execute(
        """
        insert into audit_weeks (repo, week, model, verdict, confidence, retried, audits)
        select repo, week, model, verdict, confidence, retried, count(*)
        from audits group by 1, 2, 3, 4, 5, 6
        """
    )
