"""The store's schema, as named sqlite-utils migrations applied on open.

Rule source: design.md, "Storage". Never edit an applied migration: add a new one. Tables:

``audits``          accepted audits only, one row per segment (rejected ones are never stored)
``gate_decisions``  every gate decision, including ``validator-error`` ones

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
