"""The live record: settled gate decisions and reported defects, as rows and as counts.

``gate_outcomes`` holds one row per issue: the outcome of the bot's latest decision on it
(earlier decisions are superseded). ``audit_defects`` holds one row per reported defect, its
outcome empty until the pull request is settled. ``settle_cursors`` holds where settling
resumes, per repository and kind. Writers run inside :meth:`HistoryStore.change`; readers are
one grouped query each.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.history.protocol import HistoryStore, utc_now
from bot.shares import Share

__all__ = [
    "CURSOR_TABLE",
    "DEFECT_TABLE",
    "GATE_TABLE",
    "DefectOutcome",
    "DefectRecord",
    "DefectRow",
    "DefectSettlement",
    "GateOutcome",
    "GateOutcomeRow",
    "GateRecord",
    "cursor",
    "defect_records",
    "gate_records",
    "pending_defects",
    "put_cursor",
    "put_defects",
    "put_gate_outcome",
    "settle_defect",
    "settle_defects",
]

GATE_TABLE = "gate_outcomes"
DEFECT_TABLE = "audit_defects"
CURSOR_TABLE = "settle_cursors"


class GateOutcome(StrEnum):
    """What the issue's history says of the bot's latest decision on it."""

    AGREE = "agree"
    """The maintainers' action (or the author's answer to the bot) matches the verdict."""
    DISAGREE = "disagree"
    """The maintainers' action on the closed issue is the other verdict."""
    OVERRIDE = "override"
    """A maintainer replaced or removed the bot's label on unchanged text: a disagreement."""
    UNSETTLED = "unsettled"
    """The rules cannot decide (yet); ``reason`` says why. Settled again on a later run."""

    @property
    def settled(self) -> bool:
        return self is not GateOutcome.UNSETTLED


class DefectOutcome(StrEnum):
    """What happened to a reported defect's line once its pull request closed."""

    ACTED_ON = "acted_on"
    """A later commit changed or removed the cited line, or its thread was resolved and the
    file touched."""
    ANSWERED = "answered"
    """Its review thread got a reply and nothing else changed: counted apart."""
    NOT_ACTED_ON = "not_acted_on"
    """The line stands unchanged at merge."""
    UNMERGED = "unmerged"
    """The pull request was closed unmerged: counted apart."""
    FILE_GONE = "file_gone"
    """The file no longer exists at merge: counted apart."""
    REPEATED = "repeated"
    """The same defect (file, category, line at merge) as one reported at an earlier head of
    the pull request: counted there, and nowhere here, not even as reported."""
    UNTRACEABLE = "untraceable"
    """The merged head cannot be compared line by line with the defect's head SHA (a
    force-push rewrote it, or GitHub shows no patch for the file): counted apart."""

    @property
    def counted(self) -> bool:
        """Whether it counts towards the acted-on share (its denominator)."""
        return self in (DefectOutcome.ACTED_ON, DefectOutcome.NOT_ACTED_ON)


@dataclass(frozen=True)
class GateOutcomeRow:
    """One issue's settled (or unsettled) latest decision."""

    repo: str
    issue: int
    decision_id: int
    model: str
    prompt_version: str
    policy_version: str
    verdict: str
    outcome: GateOutcome
    expected: str | None
    reason: str
    event_at: str | None = None


@dataclass(frozen=True)
class DefectRow:
    """One reported defect, as the audit posted it."""

    repo: str
    pr: int
    head_sha: str
    path: str
    line: int
    category: str
    model: str
    prompt_version: str
    review_comment_id: int | None = None
    created_at: str = ""


def put_gate_outcome(store: HistoryStore, row: GateOutcomeRow) -> None:
    """Write ``row`` as the issue's outcome, replacing the one before (idempotent).

    Raises:
        StoreError: the write failed or the store is read-only.
    """
    data: dict[str, Any] = {
        "repo": row.repo,
        "issue": row.issue,
        "decision_id": row.decision_id,
        "model": row.model,
        "prompt_version": row.prompt_version,
        "policy_version": row.policy_version,
        "verdict": row.verdict,
        "outcome": str(row.outcome),
        "expected": row.expected,
        "reason": row.reason,
        "event_at": row.event_at,
        "settled_at": utc_now(),
    }
    store.change(GATE_TABLE, lambda t: t.upsert(data, ("repo", "issue")))


def put_defects(store: HistoryStore, rows: Sequence[DefectRow]) -> None:
    """Record reported defects in one transaction; a defect already recorded keeps its outcome
    and takes the newer review comment id when one is given.

    Raises:
        StoreError: the write failed or the store is read-only.
    """
    now = utc_now()

    def write(table: Any) -> None:
        for row in rows:
            data: dict[str, Any] = {
                "repo": row.repo,
                "pr": row.pr,
                "head_sha": row.head_sha,
                "path": row.path,
                "line": row.line,
                "category": row.category,
                "model": row.model,
                "prompt_version": row.prompt_version,
                "created_at": row.created_at or now,
            }
            if row.review_comment_id is not None:
                data["review_comment_id"] = row.review_comment_id
            table.upsert(data, ("repo", "pr", "head_sha", "path", "line"))

    if rows:
        store.change(DEFECT_TABLE, write)


def settle_defect(
    store: HistoryStore,
    key: dict[str, Any],
    outcome: DefectOutcome,
    reason: str,
    event_at: str | None = None,
    review_comment_id: int | None = None,
) -> None:
    """Set the outcome of the defect with ``key`` (repo, pr, head_sha, path, line), and its
    review comment id when one is given.

    Raises:
        StoreError: the write failed or the store is read-only.
    """
    values: dict[str, Any] = {"outcome": str(outcome), "reason": reason, "event_at": event_at}
    values["settled_at"] = utc_now()
    if review_comment_id is not None:
        values["review_comment_id"] = review_comment_id
    store.change(DEFECT_TABLE, lambda t: t.update(key, values))


_PENDING_SQL = (
    f"select repo, pr, head_sha, path, line, category, review_comment_id, model, "  # noqa: S608
    f"prompt_version, created_at from {DEFECT_TABLE} "
    "where repo = ? and outcome is null and created_at >= ? order by pr, created_at, path, line"
)


def pending_defects(store: HistoryStore, repo: str, since: str = "") -> list[DefectRow]:
    """The defects of ``repo`` not settled yet, recorded at or after ``since`` (ISO 8601;
    ``""``: all), by pull request number.

    Raises:
        StoreError: the read failed.
    """
    return [
        DefectRow(
            repo=str(r[0]),
            pr=int(r[1]),
            head_sha=str(r[2]),
            path=str(r[3]),
            line=int(r[4]),
            category=str(r[5]),
            review_comment_id=None if r[6] is None else int(r[6]),
            model=str(r[7]),
            prompt_version=str(r[8]),
            created_at=str(r[9]),
        )
        for r in store.fetch(_PENDING_SQL, [repo, since])
    ]


@dataclass(frozen=True)
class DefectSettlement:
    """One defect's outcome: the reason shown with it, the deciding event's time and the
    review comment found for it."""

    defect: DefectRow
    outcome: DefectOutcome
    reason: str
    event_at: str | None = None
    review_comment_id: int | None = None


def settle_defects(store: HistoryStore, settled: Sequence[DefectSettlement]) -> None:
    """Set the outcomes of several defects in one transaction (all or none).

    Raises:
        StoreError: the write failed or the store is read-only.
    """
    now = utc_now()

    def write(table: Any) -> None:
        for item in settled:
            row = item.defect
            key = {
                "repo": row.repo,
                "pr": row.pr,
                "head_sha": row.head_sha,
                "path": row.path,
                "line": row.line,
            }
            values: dict[str, Any] = {
                "outcome": str(item.outcome),
                "reason": item.reason,
                "event_at": item.event_at,
                "settled_at": now,
            }
            if item.review_comment_id is not None:
                values["review_comment_id"] = item.review_comment_id
            table.update(key, values)

    if settled:
        store.change(DEFECT_TABLE, write)


def cursor(store: HistoryStore, repo: str, kind: str) -> str | None:
    """Where settling ``kind`` resumes, or ``None``: for ``issues`` an ISO 8601 time; for
    ``pulls`` the last pull request number visited (:data:`bot.settle.pulls.CURSOR_KIND`)."""
    row = store.get(CURSOR_TABLE, {"repo": repo, "kind": kind})
    return str(row["since"]) if row else None


def put_cursor(store: HistoryStore, repo: str, kind: str, since: str) -> None:
    """Move the cursor of ``kind`` to ``since``.

    Raises:
        StoreError: the write failed or the store is read-only.
    """
    data = {"repo": repo, "kind": kind, "since": since, "updated_at": utc_now()}
    store.change(CURSOR_TABLE, lambda t: t.upsert(data, ("repo", "kind")))


@dataclass(frozen=True)
class GateRecord:
    """The settled decisions of one model, prompt version and policy in a repository."""

    model: str
    prompt_version: str
    policy_version: str
    agreed: Share
    """Agreement with the maintainers over every settled decision."""
    nr_precision: Share
    """Settled NEEDS_REFINEMENT decisions the maintainers agreed with."""
    valid_precision: Share
    """Settled VALID decisions the maintainers agreed with."""
    overrides: int
    unsettled: int
    unsettled_by_reason: dict[str, int] = field(default_factory=dict)
    """The unsettled decisions by the reason the rules gave, most first."""

    @property
    def settled(self) -> int:
        return self.agreed.n


@dataclass(frozen=True)
class DefectRecord:
    """The reported defects of one model and prompt version in a repository."""

    model: str
    prompt_version: str
    reported: int
    """Distinct defects: one reported again at a later head of its pull request counts once."""
    acted_on: Share
    """Defects acted on among those settled as acted on or not."""
    answered: int
    apart: dict[str, int] = field(default_factory=dict)
    """Settled but not counted (closed unmerged, file gone, untraceable), by outcome."""
    pending: int = 0


_GATE_RECORD_SQL = (
    f"select model, prompt_version, policy_version, verdict, outcome, count(*) "  # noqa: S608
    f"from {GATE_TABLE} where repo = ? group by model, prompt_version, policy_version, "
    "verdict, outcome"
)

# outcome as a literal: the partial index gate_outcomes_unsettled answers it alone
_UNSETTLED_SQL = (
    f"select model, prompt_version, policy_version, verdict, reason, count(*) "  # noqa: S608
    f"from {GATE_TABLE} where repo = ? and outcome = '{GateOutcome.UNSETTLED}' "
    "group by model, prompt_version, policy_version, verdict, reason"
)

_DEFECT_RECORD_SQL = (
    f"select model, prompt_version, outcome, count(*) from {DEFECT_TABLE} "  # noqa: S608
    "where repo = ? group by model, prompt_version, outcome"
)


_VERDICTS = ("VALID", "NEEDS_REFINEMENT")


def _identity(model: str, aliases: dict[str, str]) -> str:
    return aliases.get(model, model)


def gate_records(
    store: HistoryStore,
    repo: str,
    aliases: dict[str, str] | None = None,
    *,
    by_reason: bool = True,
) -> list[GateRecord]:
    """Each model identity, prompt version and policy's record in ``repo``, most settled
    first; ``aliases`` maps a model name to the name of the same weights. One grouped query,
    and a second over the unsettled rows when ``by_reason``.

    Raises:
        StoreError: the read failed.
    """
    names = aliases or {}
    groups: dict[tuple[str, str, str], dict[tuple[str, str], int]] = {}
    for model, prompt, policy, verdict, outcome, count in store.fetch(_GATE_RECORD_SQL, [repo]):
        key = (_identity(str(model), names), str(prompt), str(policy or ""))
        cell = groups.setdefault(key, {})
        cell[(str(verdict), str(outcome))] = cell.get((str(verdict), str(outcome)), 0) + int(count)
    reasons: dict[tuple[str, str, str], dict[str, int]] = {}
    rows = store.fetch(_UNSETTLED_SQL, [repo]) if by_reason else []
    for model, prompt, policy, verdict, why, count in rows:
        if verdict in _VERDICTS:
            by = reasons.setdefault(
                (_identity(str(model), names), str(prompt), str(policy or "")), {}
            )
            by[str(why or "")] = by.get(str(why or ""), 0) + int(count)
    records = [_gate_record(key, cell, reasons.get(key, {})) for key, cell in groups.items()]
    return sorted(records, key=lambda r: (-r.settled, r.model, r.prompt_version))


def _gate_record(
    key: tuple[str, str, str], cell: dict[tuple[str, str], int], reasons: dict[str, int]
) -> GateRecord:
    def count(verdicts: Iterable[str], outcomes: Iterable[GateOutcome]) -> int:
        wanted = {(v, str(o)) for v in verdicts for o in outcomes}
        return sum(n for k, n in cell.items() if k in wanted)

    both = _VERDICTS
    settled = [o for o in GateOutcome if o.settled]
    return GateRecord(
        model=key[0],
        prompt_version=key[1],
        policy_version=key[2],
        agreed=Share(count(both, [GateOutcome.AGREE]), count(both, settled)),
        nr_precision=Share(
            count(["NEEDS_REFINEMENT"], [GateOutcome.AGREE]), count(["NEEDS_REFINEMENT"], settled)
        ),
        valid_precision=Share(count(["VALID"], [GateOutcome.AGREE]), count(["VALID"], settled)),
        overrides=count(both, [GateOutcome.OVERRIDE]),
        unsettled=count(both, [GateOutcome.UNSETTLED]),
        unsettled_by_reason=dict(sorted(reasons.items(), key=lambda item: (-item[1], item[0]))),
    )


def defect_records(
    store: HistoryStore, repo: str, aliases: dict[str, str] | None = None
) -> list[DefectRecord]:
    """Each model identity and prompt version's reported defects in ``repo``, most first.

    Raises:
        StoreError: the read failed.
    """
    groups: dict[tuple[str, str], dict[str | None, int]] = {}
    for model, prompt, outcome, count in store.fetch(_DEFECT_RECORD_SQL, [repo]):
        key = (_identity(str(model), aliases or {}), str(prompt))
        cell = groups.setdefault(key, {})
        name = None if outcome is None else str(outcome)
        cell[name] = cell.get(name, 0) + int(count)
    records = []
    for (model, prompt), cell in groups.items():
        acted = cell.get(DefectOutcome.ACTED_ON, 0)
        counted = acted + cell.get(DefectOutcome.NOT_ACTED_ON, 0)
        apart = {
            str(o): cell[o]
            for o in DefectOutcome
            if o not in (DefectOutcome.ANSWERED, DefectOutcome.REPEATED)
            and not o.counted
            and cell.get(o)
        }
        records.append(
            DefectRecord(
                model=model,
                prompt_version=prompt,
                reported=sum(n for o, n in cell.items() if o != DefectOutcome.REPEATED),
                acted_on=Share(acted, counted),
                answered=cell.get(DefectOutcome.ANSWERED, 0),
                apart=apart,
                pending=cell.get(None, 0),
            )
        )
    return sorted(records, key=lambda r: (-r.reported, r.model, r.prompt_version))
