"""Read-only views of the store: audit history rows and weekly statistics.

Rule source: the maintainer-commands issue. Only accepted audits exist in ``audits``, so every
figure here is about accepted audits. Weeks start on Monday (UTC); each row carries its week
(migration ``m003_audit_week``), and triggers keep the weekly sums in ``audit_weeks``
(``m004_audit_weeks``), so the weekly query reads one row per week. A verdict is one model's
judgement (issue 17, item 5), so the same weeks are also read per model (:func:`model_stats`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.audit.contract import CONFIDENCES, VERDICTS, Confidence, Verdict, defect_verdicts
from bot.history.protocol import HistoryStore, first_week
from bot.neutralise import chart_label

__all__ = [
    "ModelStats",
    "WeekStats",
    "column",
    "history_line",
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


def column(value: str) -> str:
    """The ``audit_weeks`` column that counts a verdict or a confidence (``GO_WITH_NOTES`` →
    ``go_with_notes``): the migrations name one per value of the contract."""
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
        """Flat and JSON-ready: ``week``, ``audits``, one count per verdict (:func:`column`
        names), ``retried``, one count per confidence (``stats --json``)."""
        return {
            "week": self.week,
            "audits": self.audits,
            **{column(v): n for v, n in self.verdicts.items()},
            "retried": self.retried,
            **{column(c): n for c, n in self.confidences.items()},
        }


_COUNTS = ", ".join(column(v) for v in VERDICTS + CONFIDENCES)
_WEEKLY = (
    f"select week, audits, retried, {_COUNTS} from audit_weeks "  # noqa: S608 (contract names)
    "where repo = ? and week >= ? and audits > 0 order by week"
)


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
    cutoff = first_week(weeks, now)
    out = []
    for week, audits, retried, *counts in store.fetch(_WEEKLY, [repo, cutoff]):
        by_verdict, by_confidence = counts[: len(VERDICTS)], counts[len(VERDICTS) :]
        out.append(
            WeekStats(
                week,
                audits,
                retried,
                dict(zip(VERDICTS, by_verdict, strict=True)),
                dict(zip(CONFIDENCES, by_confidence, strict=True)),
            )
        )
    return out


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


_BY_MODEL = (
    "select model, count(*), sum(retried), "  # noqa: S608 (verdicts of the contract, bound)
    + ", ".join("sum(case when verdict = ? then 1 else 0 end)" for _ in VERDICTS)
    + " from audits where repo = ? and week >= ? group by model order by count(*) desc, model"
)


def model_stats(
    store: HistoryStore, repo: str, weeks: int, *, now: datetime | None = None
) -> list[ModelStats]:
    """Accepted-audit counts per model over the last ``weeks`` weeks (most audits first).

    Reads ``audits`` itself (the weekly sums in ``audit_weeks`` carry no model): one grouped
    query over the repository's rows of those weeks (index ``repo, week, …``).

    Args:
        store: the open store.
        repo: ``owner/name``.
        weeks: how many weeks back, including the current one (1–52).
        now: the reference time (UTC); the current time when ``None``.
    """
    cutoff = first_week(weeks, now)
    rows = store.fetch(_BY_MODEL, [*VERDICTS, repo, cutoff])
    return [
        ModelStats(model, audits, retried or 0, dict(zip(VERDICTS, counts, strict=True)))
        for model, audits, retried, *counts in rows
    ]


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
