"""Read-only views of the store: audit history rows and weekly statistics.

Rule source: the maintainer-commands issue. Only accepted audits exist in ``audits``, so every
figure here is about accepted audits. Weeks start on Monday (UTC); each row carries its week
(migration ``m003_audit_week``), and triggers keep the weekly sums in ``audit_weeks``
(``m004_audit_weeks``), so the weekly query reads one row per week.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.history.store import Store

__all__ = ["WeekStats", "history_line", "mermaid_fix_share", "weekly_stats"]


def history_line(row: dict[str, Any]) -> str:
    """``#id | VERDICT | confidence: X | path:start-end | retry: bool | UTC time``."""
    retry = "true" if row["retried"] else "false"
    return (
        f"#{row['id']} | {row['verdict']} | confidence: {row['confidence']} | "
        f"{row['path']}:{row['line_start']}-{row['line_end']} | retry: {retry} | "
        f"{row['created_at']}"
    )


@dataclass(frozen=True)
class WeekStats:
    """One week of accepted audits (``week`` is the Monday, ``YYYY-MM-DD``)."""

    week: str
    audits: int
    go: int
    go_with_notes: int
    fix: int
    retried: int
    high: int
    medium: int
    low: int

    def share(self, count: int) -> float:
        """``count`` as a fraction of this week's audits (0.0 when there are none)."""
        return count / self.audits if self.audits else 0.0


_WEEKLY = """
select week, audits, go, go_with_notes, fix, retried, high, medium, low
from audit_weeks
where repo = ? and week >= ? and audits > 0
order by week
"""


def weekly_stats(
    store: Store, repo: str, weeks: int, *, now: datetime | None = None
) -> list[WeekStats]:
    """Accepted-audit statistics per week for the last ``weeks`` weeks (oldest first).

    Args:
        store: the open store.
        repo: ``owner/name``.
        weeks: how many weeks back, including the current one (1–52).
        now: the reference time (UTC); the current time when ``None``.
    """
    now = now or datetime.now(UTC)
    monday = (now - timedelta(days=now.weekday())).date()
    cutoff = (monday - timedelta(weeks=weeks - 1)).isoformat()
    rows = store.db.execute(_WEEKLY, [repo, cutoff]).fetchall()
    return [WeekStats(*row) for row in rows]


def mermaid_fix_share(stats: list[WeekStats]) -> str:
    """A mermaid ``xychart-beta`` of the FIX share (%) per week, for GitHub markdown."""
    weeks = ", ".join(f'"{s.week}"' for s in stats)
    shares = ", ".join(f"{100 * s.share(s.fix):.0f}" for s in stats)
    return (
        "```mermaid\nxychart-beta\n"
        '    title "FIX share of accepted audits per week (%)"\n'
        f"    x-axis [{weeks}]\n"
        '    y-axis "FIX %" 0 --> 100\n'
        f"    bar [{shares}]\n```"
    )
