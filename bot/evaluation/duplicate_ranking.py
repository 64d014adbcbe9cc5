"""``triage-bot eval --only duplicates``: the shipped ranking measured on a pool of reports and
its resolved duplicate pairs.

The pool is indexed into an in-memory SQLite store and every report is ranked through
:class:`bot.duplicates.rank.Ranker`, as the bot ranks a new issue. Each pair's ``id`` is ranked
against the whole pool, or with ``earlier_only`` against the reports created before it; the
statement "the top candidate above T is a duplicate" is judged over every pool report, so false
alarms count.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.duplicates.pool import DuplicatePair, PoolReport
from bot.duplicates.rank import Candidate, Ranker
from bot.duplicates.statement import choose_threshold
from bot.duplicates.terms import BODY_CHARS, issue_terms
from bot.duplicates.title_stage import Encoder, TitleStage
from bot.errors import ConfigError
from bot.evaluation.sets import load_jsonl
from bot.history.protocol import IndexedIssue
from bot.history.store import Store
from bot.neutralise import log_value
from bot.regular_file import check_output, write_output
from bot.shares import wilson

__all__ = ["RANKS", "Statement", "duplicates_report", "run_duplicates_eval", "statements"]

RANKS = (1, 5, 10)
_REPO = "eval/pool"
WORDS_ONLY = "words only"
WORDS_AND_TITLES = "words and title meaning"
_SHOWN_THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


@dataclass(frozen=True)
class Statement:
    """A pool report's top candidate, its score, and whether the two are a known pair."""

    id: str
    top: str
    score: float
    right: bool


def _index(store: Store, pool: Sequence[PoolReport]) -> dict[str, int]:
    """Index the pool; each report's number is its place in time order (from 1)."""
    ordered = sorted(pool, key=lambda r: (r.created_at, r.id))
    numbers = {report.id: n for n, report in enumerate(ordered, start=1)}
    rows = []
    for report in ordered:
        terms = issue_terms(report.title, report.body)
        rows.append(
            IndexedIssue(
                number=numbers[report.id],
                title=report.title,
                body=(report.body or "")[:BODY_CHARS],
                title_terms=terms.title,
                body_terms=terms.body,
                created_at=report.created_at.isoformat(),
            )
        )
    store.index_issues(_REPO, rows)
    return numbers


def _ranked(
    ranker: Ranker, report: PoolReport, number: int, k: int, earlier_only: bool
) -> list[Candidate]:
    before = report.created_at.isoformat() if earlier_only else None
    terms = issue_terms(report.title, report.body)
    return ranker.rank(terms, exclude=number, before=before, k=k, title=report.title)


def statements(
    found: Mapping[str, Candidate | None], ids: Mapping[int, str], pairs: Sequence[DuplicatePair]
) -> list[Statement]:
    """Each report's top candidate judged against the pairs (either direction), best first."""
    known = {frozenset((p.id, p.dup_of)) for p in pairs}
    made = [
        Statement(report, ids[top.number], top.score, frozenset((report, ids[top.number])) in known)
        for report, top in found.items()
        if top is not None
    ]
    return sorted(made, key=lambda s: (-s.score, s.id))


def _share(k: int, n: int) -> dict[str, Any]:
    low, high = wilson(k, n) if n else (0.0, 1.0)
    return {"k": k, "n": n, "share": k / n if n else None, "interval": [low, high]}


def duplicates_report(
    pool: Sequence[PoolReport],
    pairs: Sequence[DuplicatePair],
    *,
    earlier_only: bool = False,
    bound: float = 0.9,
    encoder: Encoder | None = None,
) -> dict[str, Any]:
    """The figures of the shipped ranking on ``pool`` and ``pairs`` (the report's section);
    without ``encoder``, by words only."""
    by_id = {report.id: report for report in pool}
    store = Store(":memory:")
    try:
        numbers = _index(store, pool)
        ids = {n: report for report, n in numbers.items()}
        stage = None if encoder is None else TitleStage(store, _REPO, encoder, keep=True)
        ranker = Ranker(store, _REPO, stage)
        ranks: list[int | None] = []
        tops: dict[str, Candidate | None] = {}
        for pair in pairs:
            report = by_id[pair.id]
            # the top 10 as the gate ranks (its shortlist); a rank below that from all retrieved
            found = _ranked(ranker, report, numbers[pair.id], max(RANKS), earlier_only)
            order = [ids[c.number] for c in found]
            if pair.dup_of not in order:
                deeper = _ranked(ranker, report, numbers[pair.id], 10_000, earlier_only)
                order += [ids[c.number] for c in deeper if ids[c.number] not in order]
            ranks.append(order.index(pair.dup_of) + 1 if pair.dup_of in order else None)
            tops[pair.id] = found[0] if found else None
        for report in pool:
            if report.id not in tops:
                found = _ranked(ranker, report, numbers[report.id], 1, earlier_only)
                tops[report.id] = found[0] if found else None
    finally:
        store.close()
    made = statements(tops, ids, pairs)
    total = len(pairs)
    earned = choose_threshold([(s.score, s.right) for s in made], bound)
    return {
        "pool": len(pool),
        "pairs": total,
        "earlier_only": earlier_only,
        "ranking": WORDS_ONLY if encoder is None else WORDS_AND_TITLES,
        "recall": {
            str(k): _share(sum(1 for r in ranks if r is not None and r <= k), total) for k in RANKS
        },
        "mrr": sum(1 / r for r in ranks if r is not None) / total if total else None,
        "statement": {
            "bound": bound,
            "threshold": None if earned is None else earned.threshold,
            "precision": None if earned is None else _share(earned.right, earned.made),
            "coverage": None if earned is None else earned.made / len(pool),
            "at": [
                {
                    "threshold": t,
                    "made": sum(1 for s in made if s.score >= t),
                    "precision": _share(
                        sum(1 for s in made if s.score >= t and s.right),
                        sum(1 for s in made if s.score >= t),
                    ),
                    "coverage": sum(1 for s in made if s.score >= t) / len(pool),
                }
                for t in _SHOWN_THRESHOLDS
            ],
        },
        "outcomes": [
            {"id": p.id, "dup_of": p.dup_of, "rank": r} for p, r in zip(pairs, ranks, strict=True)
        ],
    }


def _load(flags: Mapping[str, Any]) -> tuple[list[PoolReport], list[DuplicatePair]]:
    pool_path: Path | None = flags.get("pool")
    pairs_path: Path | None = flags.get("pairs")
    if pool_path is None or pairs_path is None:
        raise ConfigError("eval --only duplicates needs --pool and --pairs (JSONL)")
    pool = load_jsonl(pool_path, PoolReport, what="--pool")
    pairs = load_jsonl(pairs_path, DuplicatePair, what="--pairs")
    if not pool or not pairs:
        raise ConfigError("eval --only duplicates: --pool and --pairs need at least one row each")
    ids = [r.id for r in pool]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"--pool {pool_path}: a report id appears twice")
    known = set(ids)
    for pair in pairs:
        missing = [i for i in (pair.id, pair.dup_of) if i not in known]
        if missing:
            raise ConfigError(
                f"--pairs {pairs_path}: {log_value(missing[0])} is not a report of --pool"
            )
        if pair.id == pair.dup_of:
            raise ConfigError(f"--pairs {pairs_path}: {log_value(pair.id)} paired with itself")
    return pool, pairs[: flags.get("limit")]


def _file_block(threshold: float, right: int, made: int) -> list[str]:
    """The repository file's ``duplicates.statement`` for a chosen threshold (YAML lines; the
    threshold rounded down, so every measured statement is still made)."""
    shown = math.floor(threshold * 10_000) / 10_000
    return [
        "duplicates:",
        f"  statement: {{threshold: {shown}, right: {right}, made: {made}}}",
    ]


def _text(section: Mapping[str, Any], out: Path) -> str:
    table = Table(title_justify="left")
    for column in ("recall@1", "recall@5", "recall@10", "MRR"):
        table.add_column(column, justify="right")
    recall = section["recall"]
    cells = [
        f"{recall[str(k)]['share']:.3f} [{recall[str(k)]['interval'][0]:.2f}, "
        f"{recall[str(k)]['interval'][1]:.2f}]"
        for k in RANKS
    ]
    table.add_row(*cells, f"{section['mrr']:.3f}")
    buffer = io.StringIO()
    Console(file=buffer, width=100, color_system=None, legacy_windows=False).print(table)
    statement = section["statement"]
    mode = "reports created before it" if section["earlier_only"] else "the whole pool"
    lines = [
        f"{section['pairs']} pairs, each ranked against {mode} ({section['pool']} reports), "
        f"by {section['ranking']}",
        *(line.rstrip() for line in buffer.getvalue().strip("\n").splitlines()),
    ]
    if statement["threshold"] is None:
        lines.append(
            f"no threshold gives 'top candidate is a duplicate' a precision ≥ "
            f"{statement['bound']:.0%} at its lower limit"
        )
    else:
        p = statement["precision"]
        lines.append(
            f"'top candidate is a duplicate' from score {statement['threshold']:.3f}: "
            f"{p['k']}/{p['n']} right ({p['share']:.1%}), said for "
            f"{statement['coverage']:.1%} of the reports"
        )
        if section["earlier_only"] and section["ranking"] == WORDS_AND_TITLES:
            lines += [
                "to let the gate say it, paste into .github/triage-bot.yml:",
                *_file_block(statement["threshold"], p["k"], p["n"]),
            ]
        elif section["earlier_only"]:
            lines.append("the gate says nothing when ranking by words only: no block to paste")
    lines.append(f"report written to {log_value(str(out))}")
    return "\n".join(lines) + "\n"


def run_duplicates_eval(
    flags: Mapping[str, Any], encoder: Encoder | None = None, no_encoder: str | None = None
) -> str:
    """``eval --only duplicates``: rank, write the report; return the text to print.
    ``no_encoder``: why there is no title model though one was asked for (said first).

    Raises:
        ConfigError: missing or unreadable ``--pool`` / ``--pairs``, a pair naming a report the
            pool lacks, an output that cannot be written.
    """
    check_output(flags["out"], what="--out")
    pool, pairs = _load(flags)
    section = duplicates_report(
        pool,
        pairs,
        earlier_only=bool(flags.get("earlier_only")),
        bound=flags.get("min_precision") or 0.9,
        encoder=encoder,
    )
    report = {"duplicates": section}
    write_output(
        flags["out"], json.dumps(report, indent=2, ensure_ascii=False) + "\n", what="--out"
    )
    text = _text(section, flags["out"])
    if no_encoder is not None:
        why = log_value(no_encoder, max_chars=400)
        text = f"title model: {why}; ranked by words only\n{text}"
    return text
