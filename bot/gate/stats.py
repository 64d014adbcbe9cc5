"""Gate health: weekly figures over ``gate_decisions``, read-only.

Per week (Monday to Sunday, UTC: the ISO week, named by
its Monday as ``/audit_stats`` does): the verdict mix (``VALID``, ``NEEDS_REFINEMENT``, and
``validator-error`` for a decision without a verdict), the validator-error rate by error kind,
the model's own time at p50 and p95, and the model and prompt versions in use. Over the same
weeks, per model and prompt version (:func:`gate_health`): the verdict mix and the error rate by
kind, so two models (or two prompts) can be compared side by side.

Model time is ``duration_ms``, the model's own time for the call. Only decisions that reached
the model count towards the percentiles (``duration_ms > 0``): a fault before any reply (the
server unreachable) has no model time, and counting it as 0 ms would hide a slow model behind
an outage. Percentiles are nearest-rank: the value at rank ``ceil(p * n / 100)`` of the week's
``n`` timed decisions in ascending order, so each is a time that was measured.

No query reads the decisions themselves: the counts per week,
verdict, error kind, model and prompt version come from ``gate_weeks`` (a few rows per week,
kept by triggers); then each week's two percentiles are single ``LIMIT 1 OFFSET k`` reads down
the covering ``(repo, week, duration_ms)`` index, from its nearer end.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar, get_args

from bot.errors import StoreError
from bot.gate.verdict import VerdictValue
from bot.history.protocol import HistoryStore, first_week
from bot.neutralise import chart_label

__all__ = [
    "ERROR_OUTCOME",
    "OUTCOMES",
    "GateHealth",
    "GateWeek",
    "VersionHealth",
    "gate_cells",
    "gate_columns",
    "gate_health",
    "gate_weeks",
    "mermaid_error_share",
    "nearest_rank",
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
    """The decisions of one model and prompt version, in one week or over the chosen weeks.

    Attributes:
        model: the model name as stored (untrusted text: a reply shows it through a sink).
        prompt_version: the validator's prompt version as stored (untrusted text, as above).
        decisions: its decisions, faults included.
        outcomes: decisions per outcome, keys :data:`OUTCOMES` in order.
        error_kinds: faults per error kind, most frequent first.
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
        """JSON-ready: ``model``, ``prompt_version``, ``decisions``, one count per outcome
        (``valid``, ``needs_refinement``, ``validator_error``) and ``error_kinds``."""
        return {
            "model": self.model,
            "prompt_version": self.prompt_version,
            "decisions": self.decisions,
            **{_key(o): n for o, n in self.outcomes.items()},
            "error_kinds": dict(self.error_kinds),
        }


@dataclass(frozen=True)
class GateWeek:
    """One week of gate decisions of one repository.

    Attributes:
        week: the Monday of the week (UTC), ``YYYY-MM-DD`` (as stored: untrusted text).
        decisions: every decision that week, faults included.
        outcomes: decisions per outcome, keys :data:`OUTCOMES` in order (a verdict this version
            does not know counts in ``decisions`` only).
        error_kinds: faults per error kind (``BotError.kind``), most frequent first.
        timed: decisions that reached the model (``duration_ms > 0``).
        p50_ms / p95_ms: nearest-rank model time of the timed decisions (ms), ``None`` when
            there are none.
        by_version: the week's decisions per model and prompt version, most used first.
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
        """JSON-ready (``stats --gate --json``): ``week``, ``decisions``, one count per outcome
        (``valid``, ``needs_refinement``, ``validator_error``), ``error_kinds`` (kind →
        count), ``error_rates`` (kind → fraction of the week's decisions, 4 decimals),
        ``timed``, ``model_ms_p50``, ``model_ms_p95`` (ms or ``null``) and ``versions`` (a
        list of :meth:`VersionHealth.as_dict`, most used first)."""
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
    """The gate's figures over the chosen weeks: per week, and per model and prompt version.

    Attributes:
        weeks: one :class:`GateWeek` per week with a decision, oldest first.
        versions: each model and prompt version over all those weeks, most decisions first.
    """

    weeks: list[GateWeek]
    versions: list[VersionHealth]


def _key(outcome: str) -> str:
    """The JSON key of an outcome: ``NEEDS_REFINEMENT`` → ``needs_refinement``,
    ``validator-error`` → ``validator_error``."""
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
    """Gate figures per week for the last ``weeks`` weeks (oldest first; weeks without a
    decision are left out): :attr:`GateHealth.weeks` of :func:`gate_health`.

    Raises:
        StoreError: the store cannot be read.
    """
    return gate_health(store, repo, weeks, now=now).weeks


def gate_health(
    store: HistoryStore, repo: str, weeks: int, *, now: datetime | None = None
) -> GateHealth:
    """Gate figures for the last ``weeks`` weeks: per week (oldest first; weeks without a
    decision are left out) and per model and prompt version over those weeks (most decisions
    first), from one read of the weekly counts.

    Args:
        store: the open store (read-only is enough).
        repo: ``owner/name``.
        weeks: how many weeks back, including the current one (1–52).
        now: the reference time (UTC); the current time when ``None``.

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
    """Most decisions first; ties by model and prompt version, so the order is stable."""
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
    """Most frequent first; ties by key, so the order is stable."""
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


def _at_rank(store: HistoryStore, repo: str, week: str, timed: int, percent: int) -> float | None:
    """The value at the percentile's rank, counted from the nearer end of the index (p95 is
    read from the top: the walk is 5% of the week's rows, not 95%)."""
    if not timed:
        return None
    rank = nearest_rank(timed, percent)
    descending = rank > timed - rank
    sql = _AT_RANK.format("desc" if descending else "asc")
    rows = store.fetch(sql, [repo, week, timed - rank if descending else rank - 1])
    return float(rows[0][0]) if rows else None


def gate_columns() -> tuple[str, ...]:
    """The weekly table's headings: week, decisions, each outcome's count, the error rate by
    kind, p50 and p95 model time, and the model and prompt versions."""
    return ("week", "decisions", *OUTCOMES, "errors by kind", "p50", "p95", "model / prompt")


def gate_cells(week: GateWeek, *, text: Callable[[str], str]) -> tuple[str, ...]:
    """One week's row under :func:`gate_columns`.

    Args:
        week: the week's figures.
        text: the sink for stored strings (the week, error kinds, model names, prompt
            versions): the store may be shared, and model names come from settings and,
            through the repository's file, from its committers; a markdown reply passes
            :func:`~bot.neutralise.code_span`, the CLI's table shows plain text (it passes
            each cell through ``log_value`` itself).
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
    """The per-version table's headings: model, prompt version, decisions, each outcome's
    share (``validator-error``'s is the error rate) and the error rate by kind."""
    return ("model", "prompt", "decisions", *OUTCOMES, "errors by kind")


def version_cells(version: VersionHealth, *, text: Callable[[str], str]) -> tuple[str, ...]:
    """One model and prompt version's row under :func:`version_columns` (shares as whole
    percentages of its decisions); ``text`` is the sink for stored strings, as in
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
    """A mermaid ``xychart-beta`` of the ``validator-error`` share (%) of decisions per week,
    for GitHub markdown: numbers, and each week as stored through
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
