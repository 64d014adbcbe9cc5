"""Read-only views of the store: audit history rows and weekly statistics.

Only accepted audits exist in ``audits``, so every figure here is about accepted audits. Weeks
start on Monday (UTC); each row carries its week, and triggers keep the weekly counts in
``audit_weeks``, one row per model, verdict, confidence and retry, so the queries read a few
rows per week whatever the number of audits, and count by value: the verdicts and
confidences shown are the contract's, and a value the contract adds needs no schema change. A
verdict is one model's judgement, so the same weeks are also read per model
(:func:`model_stats`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from bot.audit.contract import CONFIDENCES, VERDICTS, Confidence, Verdict, defect_verdicts
from bot.history.protocol import HistoryStore, first_week
from bot.neutralise import chart_label

__all__ = [
    "ModelStats",
    "WeekStats",
    "history_line",
    "json_key",
    "mermaid_fix_share",
    "model_stats",
    "stats_cells",
    "stats_columns",
    "weekly_stats",
]


def history_line(row: dict[str, Any]) -> str:
    """``#id | VERDICT | confidence: X | path:start-end | retry: bool | UTC time``."""
    retry = "true" if row["retried"] else "false"
    return (
        f"#{row['id']} | {row['verdict']} | confidence: {row['confidence']} | "
        f"{row['path']}:{row['line_start']}-{row['line_end']} | retry: {retry} | "
        f"{row['created_at']}"
    )


def json_key(value: str) -> str:
    """The key that counts a verdict or a confidence in ``stats --json`` (``GO_WITH_NOTES`` →
    ``go_with_notes``)."""
    return value.lower()


@dataclass(frozen=True)
class WeekStats:
    """One week of accepted audits (``week`` is the Monday, ``YYYY-MM-DD``).

    Attributes:
        week: the Monday of the week (UTC), as stored (untrusted text: shown through a sink).
        audits: accepted audits that week.
        retried: of those, audits accepted after the repair turn.
        verdicts: audits per verdict, in :data:`~bot.audit.contract.VERDICTS` order.
        confidences: audits per confidence, in :data:`~bot.audit.contract.CONFIDENCES` order.
    """

    week: str
    audits: int
    retried: int
    verdicts: dict[Verdict, int]
    confidences: dict[Confidence, int]

    def share(self, count: int) -> float:
        """``count`` as a fraction of this week's audits (0.0 when there are none)."""
        return count / self.audits if self.audits else 0.0

    def as_dict(self) -> dict[str, int | str]:
        """Flat and JSON-ready: ``week``, ``audits``, one count per verdict (:func:`json_key`
        names), ``retried``, one count per confidence (``stats --json``)."""
        return {
            "week": self.week,
            "audits": self.audits,
            **{json_key(v): n for v, n in self.verdicts.items()},
            "retried": self.retried,
            **{json_key(c): n for c, n in self.confidences.items()},
        }


@dataclass
class _Tally:
    """Accepted audits added up from ``audit_weeks`` rows: a verdict or confidence the contract
    does not name (a stored value of another version) counts in ``audits`` only."""

    audits: int = 0
    retried: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    confidences: Counter[str] = field(default_factory=Counter)

    def add(self, verdict: str, confidence: str, retried: int, count: int) -> None:
        self.audits += count
        self.retried += count if retried else 0
        self.verdicts[verdict] += count
        self.confidences[confidence] += count

    def by_verdict(self) -> dict[Verdict, int]:
        return {v: self.verdicts[v] for v in VERDICTS}

    def by_confidence(self) -> dict[Confidence, int]:
        return {c: self.confidences[c] for c in CONFIDENCES}


def _tallies(
    store: HistoryStore, by: Literal["week", "model"], repo: str, weeks: int, now: datetime | None
) -> dict[str, _Tally]:
    """The counts of ``audit_weeks`` over the last ``weeks`` weeks, added up per ``by``
    (a column name), in the order the store returns them."""
    sql = (
        f"select {by}, verdict, confidence, retried, sum(audits) from audit_weeks "  # noqa: S608
        "where repo = ? and week >= ? and audits > 0 "
        f"group by {by}, verdict, confidence, retried order by {by}"
    )
    tallies: dict[str, _Tally] = {}
    rows = store.fetch(sql, [repo, first_week(weeks, now)])
    for key, verdict, confidence, retried, count in rows:
        tallies.setdefault(key, _Tally()).add(verdict, confidence, retried, int(count))
    return tallies


def weekly_stats(
    store: HistoryStore, repo: str, weeks: int, *, now: datetime | None = None
) -> list[WeekStats]:
    """Accepted-audit statistics per week for the last ``weeks`` weeks (oldest first).

    Args:
        store: the open store.
        repo: ``owner/name``.
        weeks: how many weeks back, including the current one (1–52).
        now: the reference time (UTC); the current time when ``None``.
    """
    return [
        WeekStats(week, t.audits, t.retried, t.by_verdict(), t.by_confidence())
        for week, t in _tallies(store, "week", repo, weeks, now).items()
    ]


@dataclass(frozen=True)
class ModelStats:
    """The accepted audits of one model over the chosen weeks.

    Attributes:
        model: the model name as stored (untrusted text: a reply shows it through a sink).
        audits: accepted audits by this model.
        retried: of those, audits accepted after the repair turn.
        verdicts: audits per verdict, in :data:`~bot.audit.contract.VERDICTS` order.
    """

    model: str
    audits: int
    retried: int
    verdicts: dict[Verdict, int]

    def share(self, count: int) -> float:
        """``count`` as a fraction of this model's audits (0.0 when there are none)."""
        return count / self.audits if self.audits else 0.0


def model_stats(
    store: HistoryStore, repo: str, weeks: int, *, now: datetime | None = None
) -> list[ModelStats]:
    """Accepted-audit counts per model over the last ``weeks`` weeks (most audits first).

    Reads the weekly counts in ``audit_weeks``, which carry the model.

    Args:
        store: the open store.
        repo: ``owner/name``.
        weeks: how many weeks back, including the current one (1–52).
        now: the reference time (UTC); the current time when ``None``.
    """
    tallies = _tallies(store, "model", repo, weeks, now)
    ranked = sorted(tallies.items(), key=lambda item: (-item[1].audits, item[0]))
    return [ModelStats(model, t.audits, t.retried, t.by_verdict()) for model, t in ranked]


def stats_columns(*, short: bool) -> tuple[str, ...]:
    """The weekly table's headings: week, audits, each verdict's share, the retry rate and the
    confidence mix (``H/M/L`` when ``short``, for the CLI; ``High / Medium / Low`` else)."""
    mix = "/".join(c[0] for c in CONFIDENCES) if short else " / ".join(CONFIDENCES)
    return ("week", "audits", *VERDICTS, "retried", mix)


def stats_cells(stats: WeekStats, *, short: bool, text: Callable[[str], str]) -> tuple[str, ...]:
    """One week's row under :func:`stats_columns` (shares as whole percentages); ``text`` is
    the sink for the stored week (a markdown reply's table cell, or plain for the CLI's
    table, which passes every cell through ``log_value`` itself)."""
    mix = ("/" if short else " / ").join(str(n) for n in stats.confidences.values())
    shares = (f"{stats.share(n):.0%}" for n in stats.verdicts.values())
    return (text(stats.week), str(stats.audits), *shares, f"{stats.share(stats.retried):.0%}", mix)


def mermaid_fix_share(stats: list[WeekStats]) -> str:
    """A mermaid ``xychart-beta`` of the share (%) of defect verdicts (``FIX``) per week, for
    GitHub markdown: numbers, and each week as stored through
    :func:`~bot.neutralise.chart_label`."""
    name = "/".join(defect_verdicts())
    weeks = ", ".join(f'"{chart_label(s.week)}"' for s in stats)
    shares = ", ".join(
        f"{100 * s.share(sum(s.verdicts[v] for v in defect_verdicts())):.0f}" for s in stats
    )
    return (
        "```mermaid\nxychart-beta\n"
        f'    title "{name} share of accepted audits per week (%)"\n'
        f"    x-axis [{weeks}]\n"
        f'    y-axis "{name} %" 0 --> 100\n'
        f"    bar [{shares}]\n```"
    )
