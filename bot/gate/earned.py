"""Which record decides the author comment: the repository's live record, or the calibration.

The author comment is earned by the needs-refinement precision of the model identity, prompt
version and policy in use: the repository's own settled decisions once they hold
:data:`LIVE_MIN_SETTLED` settled NEEDS_REFINEMENT decisions, the policy's calibrated figure
before that. Both are point estimates against ``comment-min-precision``; a live record that
cannot be read withholds the comment (docs/live-record.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from bot.errors import StoreError
from bot.gate.types import GateDecision
from bot.history.protocol import HistoryStore
from bot.history.record import gate_records
from bot.shares import Share

__all__ = ["LIVE_MIN_SETTLED", "CommentBound", "LiveRecords", "comment_bound", "read_live_records"]

LIVE_MIN_SETTLED = 30
"""Settled NEEDS_REFINEMENT decisions from which the live record decides instead of the
calibrated figure."""


@dataclass(frozen=True)
class LiveRecords:
    """A repository's NEEDS_REFINEMENT precision per model identity, prompt version and policy,
    read once per run; ``error`` when the store could not be read."""

    precision: Mapping[tuple[str, str, str], Share] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    error: str | None = None

    def share_for(self, decision: GateDecision) -> Share:
        """The precision of the record ``decision`` belongs to (of 0 when it has none)."""
        identity = self.aliases.get(decision.model, decision.model)
        policy = decision.policy.policy.version if decision.policy is not None else ""
        return self.precision.get((identity, decision.prompt_version, policy), Share(0, 0))


def read_live_records(
    store: HistoryStore, repo: str, aliases: Mapping[str, str] | None = None
) -> LiveRecords:
    """The live records of ``repo`` (one grouped query); a failed read is kept as ``error``."""
    names = dict(aliases or {})
    try:
        records = gate_records(store, repo, names, by_reason=False)
    except StoreError as exc:
        return LiveRecords(aliases=names, error=str(exc))
    precision = {(r.model, r.prompt_version, r.policy_version): r.nr_precision for r in records}
    return LiveRecords(precision, names)


@dataclass(frozen=True)
class CommentBound:
    """Whether a NEEDS_REFINEMENT decision's author comment is earned, and by which record.

    ``withheld`` is why it is not posted (``None``: posted); ``basis`` names the record that
    decided and its figure, plain text for the caller's sink.
    """

    withheld: str | None
    basis: str


def _live_line(share: Share) -> str:
    return (
        f"the live record's needs-refinement precision for this model, prompt and policy, {share}"
    )


def comment_bound(
    decision: GateDecision, min_precision: float, live: LiveRecords | None = None
) -> CommentBound:
    """The author comment's bound for ``decision``: the live record once it holds
    :data:`LIVE_MIN_SETTLED` settled NEEDS_REFINEMENT decisions, else the calibrated figure.

    ``live`` ``None``: no live record is consulted (the calibrated figure decides).
    """
    if decision.ruling is not None and decision.ruling.model_fault:
        why = "the model's quotes could not be found in the issue: its error, not the author's"
        return CommentBound(why, "the model's fault")
    if min_precision <= 0:
        return CommentBound(None, "no bound (comment-min-precision is 0)")
    chosen = decision.policy
    if chosen is None:
        return CommentBound("no policy decided", "no policy")
    if live is not None and live.error is not None:
        why = f"the live record could not be read ({live.error}); the comment waits until it can"
        return CommentBound(why, "the live record, unreadable")
    share = live.share_for(decision) if live is not None else Share(0, 0)
    bound = f"{min_precision:.0%}"
    if share.n >= LIVE_MIN_SETTLED and share.value is not None:
        basis = f"the live record ({share} for this model, prompt and policy)"
        if share.value < min_precision:
            return CommentBound(f"{_live_line(share)}, is below {bound}", basis)
        return CommentBound(None, basis)
    basis = "the policy's calibrated figure" + (
        f" (the live record holds {share.n} of the {LIVE_MIN_SETTLED} settled "
        "needs-refinement decisions it decides from)"
        if live is not None
        else ""
    )
    precision = chosen.nr_precision
    if precision is None:
        why = (
            f"the policy {chosen.policy.name} is not measured for this model and prompt "
            f"({chosen.mismatch}); calibrate one to ask authors"
        )
        return CommentBound(why, basis)
    if precision < min_precision:
        why = f"the policy's measured needs-refinement precision, {precision:.0%}, is below {bound}"
        return CommentBound(why, basis)
    return CommentBound(None, basis)
