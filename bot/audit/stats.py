"""Read-only views of accepted audits: history rows and weekly statistics, per model too; the
live record's rows of reported defects.

Weeks start on Monday (UTC). The queries read the ``audit_weeks`` counts, a few rows a week,
counted by value, so a verdict the contract adds needs no schema change.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from bot.audit.contract import CONFIDENCES, VERDICTS, Confidence, Verdict, defect_verdicts
from bot.audit.earned import LINE_MIN_SETTLED
from bot.history.protocol import HistoryStore, first_week
from bot.history.record import DefectRecord
from bot.neutralise import chart_label

__all__ = [
    "NO_DEFECT_RECORD",
    "ModelStats",
    "WeekStats",
    "defect_cells",
    "defect_columns",
    "defect_dict",
    "history_line",
    "json_key",
    "lines_decided_by",
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
    """A verdict or confidence as a ``stats --json`` key (``GO_WITH_NOTES`` → ``go_with_notes``)."""
    return value.lower()


@dataclass(frozen=True)
class WeekStats:
    """One week of accepted audits; ``week`` is the stored Monday, untrusted text."""

    week: str
    audits: int
    retried: int
    verdicts: dict[Verdict, int]
    confidences: dict[Confidence, int]

    def share(self, count: int) -> float:
        """``count`` as a fraction of the week's audits (0.0 for none)."""
        return count / self.audits if self.audits else 0.0

    def as_dict(self) -> dict[str, int | str]:
        """Flat and JSON-ready, for ``stats --json``."""
        return {
            "week": self.week,
            "audits": self.audits,
            **{json_key(v): n for v, n in self.verdicts.items()},
            "retried": self.retried,
            **{json_key(c): n for c, n in self.confidences.items()},
        }


@dataclass
class _Tally:
    """``audit_weeks`` rows added up; a value the contract lacks counts in ``audits`` only."""

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
    """Statistics per week for the last ``weeks`` (1–52, with this one), oldest first."""
    return [
        WeekStats(week, t.audits, t.retried, t.by_verdict(), t.by_confidence())
        for week, t in _tallies(store, "week", repo, weeks, now).items()
    ]


@dataclass(frozen=True)
class ModelStats:
    """One model's accepted audits over the weeks; ``model`` is stored, untrusted text."""

    model: str
    audits: int
    retried: int
    verdicts: dict[Verdict, int]

    def share(self, count: int) -> float:
        return count / self.audits if self.audits else 0.0


def model_stats(
    store: HistoryStore, repo: str, weeks: int, *, now: datetime | None = None
) -> list[ModelStats]:
    """Counts per model over the last ``weeks`` (1–52), most audits first."""
    tallies = _tallies(store, "model", repo, weeks, now)
    ranked = sorted(tallies.items(), key=lambda item: (-item[1].audits, item[0]))
    return [ModelStats(model, t.audits, t.retried, t.by_verdict()) for model, t in ranked]


def stats_columns(*, short: bool) -> tuple[str, ...]:
    """The weekly table's headings (``H/M/L`` when ``short``, for the CLI)."""
    mix = "/".join(c[0] for c in CONFIDENCES) if short else " / ".join(CONFIDENCES)
    return ("week", "audits", *VERDICTS, "retried", mix)


def stats_cells(stats: WeekStats, *, short: bool, text: Callable[[str], str]) -> tuple[str, ...]:
    """One week's row; ``text`` is the sink for the stored week."""
    mix = ("/" if short else " / ").join(str(n) for n in stats.confidences.values())
    shares = (f"{stats.share(n):.0%}" for n in stats.verdicts.values())
    return (text(stats.week), str(stats.audits), *shares, f"{stats.share(stats.retried):.0%}", mix)


def mermaid_fix_share(stats: list[WeekStats]) -> str:
    """A mermaid ``xychart-beta`` of the weekly ``FIX`` share (%), labels through a sink."""
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


NO_DEFECT_RECORD = (
    "No live record: the store holds no reported defect for this repository (settling needs a "
    "store that outlives the job)."
)
"""What the stats say when the store holds no reported defect."""


def defect_columns() -> tuple[str, ...]:
    """The live record table's headings (one row per model identity and prompt version)."""
    return (
        "model",
        "prompt",
        "reported",
        "acted on",
        "answered",
        "counted apart",
        "pending",
        "line comments",
    )


def lines_decided_by(record: DefectRecord, min_acted: float) -> str:
    """Whether the stop rule applies to ``record``'s line comments under ``min_acted``."""
    share = record.acted_on
    if min_acted <= 0:
        return "on (no bound)"
    if share.n < LINE_MIN_SETTLED or share.value is None:
        return f"on ({share.n} of {LINE_MIN_SETTLED} settled)"
    if share.value < min_acted:
        return f"stopped: acted on below {min_acted:.0%}"
    return f"on: acted on at least {min_acted:.0%}"


def defect_cells(
    record: DefectRecord, *, min_acted: float, text: Callable[[str], str]
) -> tuple[str, ...]:
    """One record's row under :func:`defect_columns`; ``text`` is the sink for stored strings."""
    apart = ", ".join(f"{text(o)} {n}" for o, n in record.apart.items()) or "0"
    return (
        text(record.model),
        text(record.prompt_version),
        str(record.reported),
        str(record.acted_on),
        str(record.answered),
        apart,
        str(record.pending),
        lines_decided_by(record, min_acted),
    )


def defect_dict(record: DefectRecord, *, min_acted: float) -> dict[str, object]:
    """JSON-ready (``stats --record --json``): the acted-on share with its count and interval."""
    share = record.acted_on
    low, high = share.interval or (None, None)
    return {
        "model": record.model,
        "prompt_version": record.prompt_version,
        "reported": record.reported,
        "acted_on": {
            "k": share.k,
            "n": share.n,
            "share": None if share.value is None else round(share.value, 4),
            "ci95": None if low is None else [round(low, 4), round(high or 0.0, 4)],
        },
        "answered": record.answered,
        "apart": dict(record.apart),
        "pending": record.pending,
        "line_comments": lines_decided_by(record, min_acted),
    }
