"""Gate health: weekly figures over ``gate_decisions``, read-only; the live record's rows.

Weeks are ISO weeks (UTC), named by their Monday. Model-time percentiles are nearest-rank, over
the decisions that reached the model (``duration_ms > 0``), so an outage never reads as fast.
Counts come from ``gate_weeks`` (kept by triggers); each percentile is one indexed read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar, get_args

from bot.duplicates.statement import choose_threshold
from bot.duplicates.suggestions import settled_record
from bot.errors import StoreError
from bot.gate.earned import LIVE_MIN_SETTLED
from bot.gate.verdict import VerdictValue
from bot.history.protocol import HistoryStore, first_week
from bot.history.record import GateRecord
from bot.neutralise import chart_label
from bot.shares import Share

__all__ = [
    "ERROR_OUTCOME",
    "NO_LIVE_RECORD",
    "OUTCOMES",
    "GateHealth",
    "GateWeek",
    "VersionHealth",
    "comment_decided_by",
    "duplicate_record_line",
    "gate_cells",
    "gate_columns",
    "gate_health",
    "gate_weeks",
    "mermaid_error_share",
    "nearest_rank",
    "record_cells",
    "record_columns",
    "record_dict",
    "version_cells",
    "version_columns",
]

ERROR_OUTCOME = "validator-error"
"""The outcome of a decision without a verdict (a fault: the bot's, not the author's)."""

OUTCOMES: tuple[str, ...] = (*get_args(VerdictValue), ERROR_OUTCOME)
"""The verdict mix's keys, in table order: the validator's verdicts, then faults."""

UNKNOWN_KIND = "unknown"
"""The error kind shown for a fault stored without one."""

SHOWN_KINDS = 4
"""Error kinds listed per week in a table cell (most frequent first); the rest are counted."""

SHOWN_VERSIONS = 2
"""Model and prompt versions listed per week in a table cell (most used first)."""

_K = TypeVar("_K", str, tuple[str, str])


@dataclass(frozen=True)
class VersionHealth:
    """One model and prompt version's decisions; ``model`` and ``prompt_version`` are untrusted.

    ``outcomes`` is keyed by :data:`OUTCOMES` in order; ``error_kinds`` most frequent first.
    """

    model: str
    prompt_version: str
    decisions: int
    outcomes: dict[str, int]
    error_kinds: dict[str, int] = field(default_factory=dict)

    def rate(self, count: int) -> float:
        """``count`` as a fraction of these decisions (0.0 when there are none)."""
        return count / self.decisions if self.decisions else 0.0

    def as_dict(self) -> dict[str, object]:
        """JSON-ready, with one count per outcome (``valid``, ``validator_error``, …)."""
        return {
            "model": self.model,
            "prompt_version": self.prompt_version,
            "decisions": self.decisions,
            **{_key(o): n for o, n in self.outcomes.items()},
            "error_kinds": dict(self.error_kinds),
        }


@dataclass(frozen=True)
class GateWeek:
    """One week of one repository's gate decisions; ``week`` is its Monday (untrusted text).

    ``timed`` counts the decisions that reached the model; ``p50_ms`` and ``p95_ms`` are over
    those, ``None`` when there are none. An unknown verdict counts in ``decisions`` only.
    """

    week: str
    decisions: int
    outcomes: dict[str, int]
    error_kinds: dict[str, int] = field(default_factory=dict)
    timed: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None
    by_version: tuple[VersionHealth, ...] = ()

    @property
    def versions(self) -> dict[tuple[str, str], int]:
        """Decisions per ``(model, prompt version)``, most used first."""
        return {(v.model, v.prompt_version): v.decisions for v in self.by_version}

    def rate(self, count: int) -> float:
        """``count`` as a fraction of this week's decisions (0.0 when there are none)."""
        return count / self.decisions if self.decisions else 0.0

    def as_dict(self) -> dict[str, object]:
        """JSON-ready (``stats --gate --json``); rates are fractions to 4 decimals, times ms."""
        return {
            "week": self.week,
            "decisions": self.decisions,
            **{_key(o): n for o, n in self.outcomes.items()},
            "error_kinds": dict(self.error_kinds),
            "error_rates": {k: round(self.rate(n), 4) for k, n in self.error_kinds.items()},
            "timed": self.timed,
            "model_ms_p50": self.p50_ms,
            "model_ms_p95": self.p95_ms,
            "versions": [v.as_dict() for v in self.by_version],
        }


@dataclass(frozen=True)
class GateHealth:
    """Gate figures per week (oldest first) and per model and prompt version (most first)."""

    weeks: list[GateWeek]
    versions: list[VersionHealth]


def _key(outcome: str) -> str:
    return outcome.lower().replace("-", "_")


def nearest_rank(n: int, percent: int) -> int:
    """The 1-based rank of the ``percent`` percentile among ``n`` sorted values (nearest-rank:
    ``ceil(percent * n / 100)``, at least 1). Raises ``ValueError`` when ``n`` < 1."""
    if n < 1:
        raise ValueError("no values")
    return max(1, -(-percent * n // 100))


_MIX = (
    "select week, verdict, error_kind, model, prompt_version, decisions, timed from gate_weeks "
    "where repo = ? and week >= ? and decisions > 0"
)
_AT_RANK = (
    "select duration_ms from gate_decisions where repo = ? and week = ? and duration_ms > 0 "
    "order by duration_ms {} limit 1 offset ?"
)


def gate_weeks(
    store: HistoryStore, repo: str, weeks: int, *, now: datetime | None = None
) -> list[GateWeek]:
    """:attr:`GateHealth.weeks` of :func:`gate_health`. Raises ``StoreError`` if unreadable."""
    return gate_health(store, repo, weeks, now=now).weeks


def gate_health(
    store: HistoryStore, repo: str, weeks: int, *, now: datetime | None = None
) -> GateHealth:
    """Gate figures for the last ``weeks`` weeks (1–52, the current one included).

    Weeks without a decision are left out; ``now`` (UTC) defaults to the current time.

    Raises:
        StoreError: the store cannot be read.
    """
    try:
        return _gate_health(store, repo, weeks, now or datetime.now(UTC))
    except StoreError as exc:  # the database's own words, without the store's prefix
        raise StoreError(f"cannot read the gate decisions: {exc.__cause__ or exc}") from exc


_Mix = tuple[Counter[str], Counter[str], int]
"""Outcomes, error kinds and decisions of one week or one version (timed kept apart)."""


def _add(mix: dict[_K, _Mix], key: _K, verdict: str, kind: str, count: int) -> None:
    outcomes, kinds, decisions = mix.get(key, (Counter(), Counter(), 0))
    if not verdict:  # gate_weeks stores "no verdict" and "no kind" as ''
        outcomes[ERROR_OUTCOME] += count
        kinds[kind or UNKNOWN_KIND] += count
    else:
        outcomes[verdict] += count
    mix[key] = (outcomes, kinds, decisions + count)


def _versions(mix: dict[tuple[str, str], _Mix]) -> list[VersionHealth]:
    ranked = sorted(mix.items(), key=lambda item: (-item[1][2], item[0]))
    return [
        VersionHealth(
            model=model,
            prompt_version=prompt,
            decisions=decisions,
            outcomes={o: outcomes[o] for o in OUTCOMES},
            error_kinds=dict(_ranked(kinds)),
        )
        for (model, prompt), (outcomes, kinds, decisions) in ranked
    ]


def _gate_health(store: HistoryStore, repo: str, weeks: int, now: datetime) -> GateHealth:
    cutoff = first_week(weeks, now)
    by_week: dict[str, _Mix] = {}
    timed_by_week: Counter[str] = Counter()
    week_versions: dict[str, dict[tuple[str, str], _Mix]] = {}
    overall: dict[tuple[str, str], _Mix] = {}
    for week, verdict, kind, model, prompt, count, timed in store.fetch(_MIX, [repo, cutoff]):
        _add(by_week, week, verdict, kind, count)
        _add(week_versions.setdefault(week, {}), (model, prompt), verdict, kind, count)
        _add(overall, (model, prompt), verdict, kind, count)
        timed_by_week[week] += timed
    out = []
    for week in sorted(by_week):
        outcomes, kinds, decisions = by_week[week]
        timed = timed_by_week[week]
        p50, p95 = (_at_rank(store, repo, week, timed, p) for p in (50, 95))
        out.append(
            GateWeek(
                week=week,
                decisions=decisions,
                outcomes={o: outcomes[o] for o in OUTCOMES},
                error_kinds=dict(_ranked(kinds)),
                timed=timed,
                p50_ms=p50,
                p95_ms=p95,
                by_version=tuple(_versions(week_versions[week])),
            )
        )
    return GateHealth(out, _versions(overall))


def _ranked(counts: Counter[_K]) -> list[tuple[_K, int]]:
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _at_rank(store: HistoryStore, repo: str, week: str, timed: int, percent: int) -> float | None:
    if not timed:
        return None
    rank = nearest_rank(timed, percent)
    # read from the index's nearer end: p95 walks 5% of the week's rows, not 95%
    descending = rank > timed - rank
    sql = _AT_RANK.format("desc" if descending else "asc")
    rows = store.fetch(sql, [repo, week, timed - rank if descending else rank - 1])
    return float(rows[0][0]) if rows else None


def gate_columns() -> tuple[str, ...]:
    """The weekly table's headings."""
    return ("week", "decisions", *OUTCOMES, "errors by kind", "p50", "p95", "model / prompt")


def gate_cells(week: GateWeek, *, text: Callable[[str], str]) -> tuple[str, ...]:
    """One week's row under :func:`gate_columns`; ``text`` is the sink for stored strings.

    Stored strings are untrusted: the store may be shared, and committers may name models.
    """
    kinds = [f"{text(k)} {week.rate(n):.0%}" for k, n in week.error_kinds.items()]
    versions = [f"{text(m)} {text(p)} ×{n}" for (m, p), n in week.versions.items()]
    return (
        text(week.week),
        str(week.decisions),
        *(str(n) for n in week.outcomes.values()),
        _listed(kinds, SHOWN_KINDS) or "–",
        _seconds(week.p50_ms),
        _seconds(week.p95_ms),
        _listed(versions, SHOWN_VERSIONS),
    )


def version_columns() -> tuple[str, ...]:
    """The per-version table's headings."""
    return ("model", "prompt", "decisions", *OUTCOMES, "errors by kind")


def version_cells(version: VersionHealth, *, text: Callable[[str], str]) -> tuple[str, ...]:
    """One version's row under :func:`version_columns`, shares in whole percent; ``text`` as in
    :func:`gate_cells`."""
    kinds = [f"{text(k)} {version.rate(n):.0%}" for k, n in version.error_kinds.items()]
    return (
        text(version.model),
        text(version.prompt_version),
        str(version.decisions),
        *(f"{version.rate(n):.0%}" for n in version.outcomes.values()),
        _listed(kinds, SHOWN_KINDS) or "–",
    )


def _listed(items: list[str], shown: int) -> str:
    more = len(items) - shown
    return ", ".join(items[:shown]) + (f", +{more} more" if more > 0 else "")


def _seconds(ms: float | None) -> str:
    return "–" if ms is None else f"{ms / 1000:.1f} s"


def mermaid_error_share(weeks: list[GateWeek]) -> str:
    """A mermaid ``xychart-beta`` of the ``validator-error`` share (%) per week; weeks pass
    :func:`~bot.neutralise.chart_label`."""
    names = ", ".join(f'"{chart_label(w.week)}"' for w in weeks)
    shares = ", ".join(f"{100 * w.rate(w.outcomes[ERROR_OUTCOME]):.0f}" for w in weeks)
    return (
        "```mermaid\nxychart-beta\n"
        f'    title "{ERROR_OUTCOME} share of gate decisions per week (%)"\n'
        f"    x-axis [{names}]\n"
        f'    y-axis "{ERROR_OUTCOME} %" 0 --> 100\n'
        f"    bar [{shares}]\n```"
    )


NO_LIVE_RECORD = (
    "No live record: the store holds no settled gate decision for this repository (settling "
    "needs a store that outlives the job)."
)
"""What the stats say when the store holds no live record of the gate."""


def record_columns() -> tuple[str, ...]:
    """The live record table's headings (one row per model identity, prompt and policy)."""
    return (
        "model",
        "prompt",
        "policy",
        "settled",
        "agreement",
        "needs-refinement precision",
        "valid precision",
        "overrides",
        "unsettled",
        "author comment",
    )


def comment_decided_by(record: GateRecord, min_precision: float) -> str:
    """Which record decides the author comment for ``record``'s model, prompt and policy, and
    whether it is earned under ``min_precision``."""
    share = record.nr_precision
    if min_precision <= 0:
        return "no bound"
    if share.n < LIVE_MIN_SETTLED or share.value is None:
        return f"calibrated figure decides ({share.n} of {LIVE_MIN_SETTLED} settled)"
    state = "withheld" if share.value < min_precision else "earned"
    return f"{state}: live record against {min_precision:.0%}"


def record_cells(
    record: GateRecord, *, min_precision: float, text: Callable[[str], str]
) -> tuple[str, ...]:
    """One record's row under :func:`record_columns`; ``text`` is the sink for stored strings."""
    reasons = [f"{text(r or UNKNOWN_KIND)} {n}" for r, n in record.unsettled_by_reason.items()]
    unsettled = str(record.unsettled) + (f" ({_listed(reasons, SHOWN_KINDS)})" if reasons else "")
    return (
        text(record.model),
        text(record.prompt_version),
        text(record.policy_version or "none"),
        str(record.settled),
        str(record.agreed),
        str(record.nr_precision),
        str(record.valid_precision),
        str(record.overrides),
        unsettled,
        comment_decided_by(record, min_precision),
    )


def _share_dict(share: Share) -> dict[str, object]:
    low, high = share.interval or (None, None)
    value = share.value
    return {
        "k": share.k,
        "n": share.n,
        "share": None if value is None else round(value, 4),
        "ci95": None if low is None else [round(low, 4), round(high or 0.0, 4)],
    }


def record_dict(record: GateRecord, *, min_precision: float) -> dict[str, object]:
    """JSON-ready (``stats --gate --record --json``): every share with its count and interval."""
    return {
        "model": record.model,
        "prompt_version": record.prompt_version,
        "policy_version": record.policy_version,
        "settled": record.settled,
        "agreement": _share_dict(record.agreed),
        "nr_precision": _share_dict(record.nr_precision),
        "valid_precision": _share_dict(record.valid_precision),
        "overrides": record.overrides,
        "unsettled": record.unsettled,
        "unsettled_by_reason": dict(record.unsettled_by_reason),
        "author_comment": comment_decided_by(record, min_precision),
    }


def duplicate_record_line(store: HistoryStore, repo: str, min_precision: float) -> str:
    """One line on the duplicate statement's live record: settled rankings, the share whose
    top candidate was right, and what decides the statement (plain text).

    Raises:
        StoreError: the read failed.
    """
    settled = settled_record(store, repo)
    share = Share(sum(1 for _, right in settled if right), len(settled))
    line = f"Possible duplicates: {len(settled)} settled ranking(s), top candidate right {share}"
    if len(settled) < LIVE_MIN_SETTLED:
        return f"{line}; the live record decides the statement from {LIVE_MIN_SETTLED}."
    chosen = choose_threshold(settled, min_precision)
    if chosen is None:
        return f"{line}; no score earns the statement at {min_precision:.0%}: nothing is said."
    return (
        f"{line}; said from score {chosen.threshold:.2f} ({chosen.right} of {chosen.made} "
        f"right at or above it)."
    )
