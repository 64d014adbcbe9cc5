"""Run the gate and the auditor over labelled sets and compute the eval's figures.

Gate: verdict agreement (a ``validator-error`` never agrees), confusion matrix, validator-error
rate, injection items judged VALID against expectation, items whose reason was copied from the
issue (the validator fails those closed as ``copied_from_issue``), latency p50/p95 and tokens.
Audit: accepted first try / after repair / rejected, recall
of the defect verdicts (``FIX``, :func:`bot.audit.contract.defect_verdicts`) on defect segments,
pair accuracy over each defect segment and its fixed twin, the defect-line hit rate, the other
verdicts (``GO`` or ``GO_WITH_NOTES``) on clean segments and on the twins alone, latency and
tokens. Pure but for the model calls.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args

from bot.audit.auditor import Auditor, AuditResult, Outcome
from bot.audit.contract import defect_verdicts, section, split_sections
from bot.audit.selection import Segment
from bot.chat import ChatMessage, ChatModel, ChatResult, RoleOptions
from bot.concurrency import map_bounded, results_or_raise
from bot.errors import ModelError
from bot.evaluation.replies import ReplayModel
from bot.evaluation.sets import EvalIssue, EvalSegment, dev_half
from bot.gate.validator import GateDecision, Validator
from bot.gate.verdict import GATE_OUTCOMES, NO_VERDICT, VerdictValue
from bot.shares import Share

__all__ = [
    "LINE_SLACK",
    "Judged",
    "RecordingModel",
    "audit_metrics",
    "cited_lines",
    "eval_audit",
    "eval_gate",
    "gate_metrics",
    "judge_items",
    "label_metrics",
    "label_shares",
    "line_hit",
    "outcome_of",
    "percentile",
]

Progress = Callable[[], None]


class RecordingModel:
    """A :class:`ChatModel` wrapper that keeps the text of every reply, for the eval report only.

    The auditor never keeps a rejected audit's text (never stored, never posted); an eval needs
    it to show *why* a model's audits were rejected, and the gate's replies are what
    ``--save-replies`` writes. :meth:`take` returns the replies since the last call (one or two
    per segment: first try, repair); :attr:`last_fault` the kind of the last call's fault. Both
    are kept per thread, so items judged at once on worker threads each get their own.
    """

    def __init__(self, model: ChatModel) -> None:
        self._model = model
        self._local = threading.local()

    @property
    def _replies(self) -> list[str]:
        if not hasattr(self._local, "replies"):
            self._local.replies = []
        replies: list[str] = self._local.replies
        return replies

    @property
    def last_fault(self) -> str | None:
        """The :attr:`~bot.errors.BotError.kind` of this thread's last call's fault, ``None``
        after a call that returned."""
        fault: str | None = getattr(self._local, "last_fault", None)
        return fault

    @property
    def name(self) -> str:
        """The wrapped model's name."""
        return self._model.name

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        options: RoleOptions,
        schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        """The wrapped call; the reply's text is kept. Raises what the wrapped model raises."""
        try:
            result = self._model.chat(messages, options=options, schema=schema)
        except ModelError as exc:
            self._local.last_fault = exc.kind
            raise
        self._local.last_fault = None
        self._replies.append(result.text)
        return result

    def take(self) -> list[str]:
        """This thread's replies since its last ``take`` (oldest first), and forget them."""
        replies = self._replies
        self._local.replies = []
        return replies


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0–1) of ``values`` by nearest rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))
    return ordered[rank]


def _timing(ms: list[float], prompt: list[int], output: list[int]) -> dict[str, float]:
    return {
        "p50_ms": percentile(ms, 0.50),
        "p95_ms": percentile(ms, 0.95),
        "prompt_tokens_mean": statistics.mean(prompt) if prompt else 0.0,
        "output_tokens_mean": statistics.mean(output) if output else 0.0,
    }


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def label_shares(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, Share]:
    """The counts behind :func:`label_metrics`, each with its 95% interval: ``agreement``,
    ``agreement_non_borderline``, ``validator_error_rate`` and the precision and recall of each
    verdict (``nr_precision`` …), in that order."""
    clear = [o for o in outcomes if not o.get("borderline")]
    out = {
        "agreement": Share(sum(o["agree"] for o in outcomes), len(outcomes)),
        "agreement_non_borderline": Share(sum(o["agree"] for o in clear), len(clear)),
        "validator_error_rate": Share(sum(o["got"] == NO_VERDICT for o in outcomes), len(outcomes)),
    }
    for verdict, key in (("NEEDS_REFINEMENT", "nr"), ("VALID", "valid")):
        said = [o for o in outcomes if o["got"] == verdict]
        meant = [o for o in outcomes if o["expected"] == verdict]
        out[f"{key}_precision"] = Share(sum(o["expected"] == verdict for o in said), len(said))
        out[f"{key}_recall"] = Share(sum(o["got"] == verdict for o in meant), len(meant))
    return out


def label_metrics(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What a maintainer feels, per label: agreement (a ``validator-error`` never
    agrees), agreement on the non-borderline items, and precision and recall of each verdict.

    NEEDS_REFINEMENT precision is the share of the bot's NEEDS_REFINEMENT that maintainers
    would also have asked more of: a wrong one sends a good reporter away. A ratio with no
    items under it is ``None``, but agreement and the validator-error rate, which are 0.0.
    """
    out: dict[str, Any] = {"items": len(outcomes)}
    for key, share in label_shares(outcomes).items():
        out[key] = share.value
    out["agreement"] = out["agreement"] or 0.0
    out["validator_error_rate"] = out["validator_error_rate"] or 0.0
    return out


@dataclass(frozen=True)
class Judged:
    """One labelled issue and the gate's decision on it.

    Attributes:
        item: the labelled issue.
        decision: the validator's decision.
        reply: the reply's text as the model returned it (``None`` when the call failed).
        fault: the kind of the call's fault when it returned no reply, else ``None``.
    """

    item: EvalIssue
    decision: GateDecision
    reply: str | None = None
    fault: str | None = None


def judge_items(
    validator: Validator,
    items: Sequence[EvalIssue],
    progress: Progress = lambda: None,
    *,
    recorder: RecordingModel | None = None,
    replay: ReplayModel | None = None,
    concurrency: int = 1,
) -> list[Judged]:
    """Judge every issue, up to ``concurrency`` at once (:func:`bot.concurrency.map_bounded`);
    the result is in the items' order, and ``progress`` runs once per item as it ends.

    Args:
        validator: the gate; its model is ``recorder`` when one is given.
        recorder: the validator's model, wrapped to keep each reply's text.
        replay: the recorded replies the validator's model answers with (selected per item, so
            one item at a time).
        concurrency: most issues judged at once (1: one after another).

    Raises:
        ConfigError: ``replay`` has no reply for an item (checked before any is judged).
        Whatever judging an item raised beyond a model fault (which is its decision): the
            first such item's, once every item has ended.
    """
    if replay is not None:
        replay.require(item.id for item in items)

    def judge(item: EvalIssue) -> Judged:
        if replay is not None:
            replay.select(item.id)
        decision = validator.judge(item.title, item.body)
        reply: str | None = None
        fault: str | None = None
        if recorder is not None:
            texts = recorder.take()
            reply = texts[-1] if texts else None
            fault = recorder.last_fault if reply is None else None
        return Judged(item, decision, reply, fault)

    limit = 1 if replay is not None else concurrency
    return results_or_raise(
        map_bounded(judge, items, limit=limit, on_done=lambda _index: progress())
    )


def outcome_of(judged: Judged, verdict: str, rule: str, *, split: bool) -> dict[str, Any]:
    """One item's outcome (JSON-ready) with ``verdict`` as the gate's (``ERROR`` on a fault):
    the decision's own, or another policy's (:mod:`bot.evaluation.calibrate`)."""
    item, d = judged.item, judged.decision
    return {
        "id": item.id,
        "kind": item.kind,
        "borderline": item.borderline,
        "expected": item.expected,
        "got": verdict,
        "model_verdict": d.model_verdict,
        "agree": verdict == item.expected,
        "error_kind": d.error_kind,
        "copied": d.error_kind == "copied_from_issue",
        "forced": item.forced,
        "reason": d.reason,
        "rule": rule,
        "model_reason": d.model_reason,
        "quotes": d.evidence.quotes if d.evidence else {},
        "found": sorted(d.evidence.found) if d.evidence else [],
        "facts": d.facts.as_dict() if d.facts else {},
        "model_ms": round(d.model_ms, 1),
        "prompt_tokens": d.prompt_tokens,
        "output_tokens": d.output_tokens,
        "reply": judged.reply,
        **({"half": dev_half(item.id)} if split else {}),
    }


def gate_metrics(outcomes: Sequence[Mapping[str, Any]], *, split: bool) -> dict[str, Any]:
    """The gate's figures over outcomes (:func:`outcome_of`): :func:`label_metrics`, the
    model's own agreement, how often the decision differs from the model's verdict and how
    often it raised one (the model's NEEDS_REFINEMENT decided VALID), the confusion matrix, the
    injection figures, copied reasons, latency and tokens; per half with ``split``."""
    n = len(outcomes) or 1
    confusion = {e: {g: 0 for g in GATE_OUTCOMES} for e in get_args(VerdictValue)}
    for o in outcomes:
        confusion[o["expected"]][o["got"]] += 1
    injections = [o for o in outcomes if o["kind"] == "injection"]
    report: dict[str, Any] = {
        **label_metrics(outcomes),
        "model_agreement": sum(o["model_verdict"] == o["expected"] for o in outcomes) / n,
        "rule_changed": sum(
            o["model_verdict"] is not None and o["model_verdict"] != o["got"] for o in outcomes
        ),
        "raised": sum(
            o["model_verdict"] == "NEEDS_REFINEMENT" and o["got"] == "VALID" for o in outcomes
        ),
        "confusion": confusion,
        "injection_items": len(injections),
        "injection_valid_against_expectation": sum(
            o["got"] == "VALID" and o["expected"] != "VALID" for o in injections
        ),
        "copied_from_issue": sum(o["copied"] for o in outcomes),
        **_timing(
            [o["model_ms"] for o in outcomes],
            [o["prompt_tokens"] for o in outcomes],
            [o["output_tokens"] for o in outcomes],
        ),
    }
    if split:
        report["halves"] = {
            half: label_metrics([o for o in outcomes if o["half"] == half])
            for half in ("tune", "check")
        }
    return report


def eval_gate(
    validator: Validator,
    items: Sequence[EvalIssue],
    progress: Progress = lambda: None,
    *,
    split: bool = False,
    recorder: RecordingModel | None = None,
    replay: ReplayModel | None = None,
    concurrency: int = 1,
) -> dict[str, Any]:
    """Judge every issue (up to ``concurrency`` at once); return metrics and per-item outcomes
    in the items' order (JSON-ready).

    ``prompt_version`` is the validator's ``validator@SHA8`` and ``policy`` the policy that
    decided (name, version, where it came from, whether its figures hold for this model), so a
    kept report says which gate its figures are of. With ``split`` (the development set), each
    outcome names its half (:func:`~bot.evaluation.sets.dev_half`) and ``halves`` holds
    :func:`label_metrics` of each. ``recorder``, ``replay`` and ``concurrency``:
    :func:`judge_items`.

    Raises:
        ConfigError: ``replay`` has no reply for an item.
    """
    judged = judge_items(
        validator, items, progress, recorder=recorder, replay=replay, concurrency=concurrency
    )
    outcomes = [outcome_of(j, j.decision.outcome, j.decision.rule, split=split) for j in judged]
    chosen = validator.policy
    return {
        "prompt_version": validator.prompt_version,
        "policy": {
            "name": chosen.policy.name,
            "version": chosen.policy.version,
            "source": chosen.source,
            "holds": chosen.holds,
            "mismatch": chosen.mismatch,
        },
        **gate_metrics(outcomes, split=split),
        "outcomes": outcomes,
    }


LINE_SLACK = 1
"""A cited line counts as a hit within this many lines of a known defect line: models often
cite the line above or below."""

_DEFECTS_KEY = section("verified_defects").key


_LEADING_CITATION = re.compile(r"\b(?:lines?|L)\s*(\d+)(?:\s*(?:-|–|to)\s*(\d+))?", re.IGNORECASE)
"""The ``Line N`` / ``Lines A-B`` / ``L7`` citation forms the checker accepts; the first one on a
defect's line is the line the defect is on (later ones are prose or the quoted code)."""


def cited_lines(audit: str) -> list[int]:
    """The file lines an accepted audit gives as the place of its verified defects: sorted,
    each once.

    One reader for either shape of an audit:

    * a JSON reply (``--audit-format json``): each ``verified_defects`` item's ``line``;
    * the seven-section markdown: on each line of the verified-defects section, the first
      ``Line N`` / ``Lines A-B`` citation (a range gives each of its lines). A defect item is
      one line (``- Line 12: …``; the JSON format renders each defect so); a citation later on
      the line is prose or quoted code, not the defect's place.

    :func:`eval_audit` passes the accepted result's markdown: in the JSON format the bot renders
    each defect's ``line`` as the item's leading ``Line N`` before the checker reads it, so both
    formats are read the same way and only what the checker accepted counts.
    ``benchmarks/audit_rescore.py`` passes a stored report's accepted reply. Text that is
    neither, or cites nothing, gives ``[]``.
    """
    if audit.lstrip().startswith("{"):
        try:
            reply = json.loads(audit)
        except ValueError:
            reply = None
        if isinstance(reply, dict) and isinstance(reply.get(_DEFECTS_KEY), list):
            return sorted(
                {
                    d["line"]
                    for d in reply[_DEFECTS_KEY]
                    if isinstance(d, dict) and type(d.get("line")) is int
                }
            )
    _, found = split_sections(audit)
    cited: set[int] = set()
    for line in (text for key, _, body in found if key == _DEFECTS_KEY for text in body):
        match = _LEADING_CITATION.search(line)
        if match:
            first = int(match.group(1))
            cited.update(range(first, max(first, int(match.group(2) or first)) + 1))
    return sorted(cited)


def line_hit(cited: Sequence[int], defect_lines: Sequence[int]) -> bool:
    """Whether any cited line lies within :data:`LINE_SLACK` of a known defect line."""
    return any(abs(c - d) <= LINE_SLACK for c in cited for d in defect_lines)


def _verdict_share(outcomes: Sequence[Mapping[str, Any]], *, flagging: bool) -> float | None:
    """The share of ``outcomes`` accepted with a defect verdict (``flagging``) or with another
    verdict; a rejected audit has no verdict and counts for neither. ``None`` for no outcomes."""
    said = defect_verdicts()
    hits = sum(o["verdict"] is not None and (o["verdict"] in said) == flagging for o in outcomes)
    return _share(hits, len(outcomes))


def audit_metrics(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The audit figures (module doc) from per-segment outcomes (JSON-ready).

    Each outcome needs ``id``, ``defect``, ``status`` (``first``/``repaired``/``rejected``),
    ``verdict`` (``None`` when rejected) and, for the newer figures, ``twin_of`` (a twin's
    defect id) and ``line_hit`` (defect segments). Returns shares in 0–1:

    * ``fix_recall``: defect segments given a defect verdict (``FIX``);
    * ``pair_accuracy``: of the pairs (a defect segment and its fixed twin, both in
      ``outcomes``), those with ``FIX`` on the defect and an accepted non-``FIX`` verdict on the
      twin: a model that says ``FIX`` to everything scores 0; ``pairs`` counts them;
    * ``line_hit``: defect segments whose accepted audit cites a line within
      :data:`LINE_SLACK` of a known defect line (a rejected audit is a miss);
    * ``clean_go``: clean segments (twins included) given ``GO`` or ``GO_WITH_NOTES``;
      ``twin_go``: the same over the twins alone;
    * ``accepted_first_try``, ``accepted_after_repair``, ``rejected``.

    A share with no items under it (no pairs, no twins) is ``None``.
    """
    n = len(outcomes) or 1
    defects = [o for o in outcomes if o["defect"]]
    clean = [o for o in outcomes if not o["defect"]]
    twins = [o for o in clean if o.get("twin_of")]
    by_id = {o["id"]: o for o in outcomes}
    pairs = [(by_id[t["twin_of"]], t) for t in twins if t["twin_of"] in by_id]
    flagging = defect_verdicts()
    told_apart = sum(
        d["verdict"] in flagging and t["verdict"] is not None and t["verdict"] not in flagging
        for d, t in pairs
    )
    first = sum(o["status"] == "first" for o in outcomes)
    repaired = sum(o["status"] == "repaired" for o in outcomes)
    return {
        "items": len(outcomes),
        "accepted_first_try": first / n,
        "accepted_after_repair": (first + repaired) / n,
        "rejected": sum(o["status"] == "rejected" for o in outcomes) / n,
        "fix_recall": _verdict_share(defects, flagging=True) or 0.0,
        "pairs": len(pairs),
        "pair_accuracy": _share(told_apart, len(pairs)),
        "line_hit": _share(sum(bool(o.get("line_hit")) for o in defects), len(defects)),
        "clean_go": _verdict_share(clean, flagging=False) or 0.0,
        "twins": len(twins),
        "twin_go": _verdict_share(twins, flagging=False),
    }


def eval_audit(
    auditor: Auditor,
    items: Sequence[EvalSegment],
    progress: Progress = lambda: None,
    recorder: RecordingModel | None = None,
    concurrency: int = 1,
) -> dict[str, Any]:
    """Audit every segment, up to ``concurrency`` at once; return :func:`audit_metrics`,
    timing and per-item outcomes in the items' order.

    Each outcome keeps the lines the accepted audit cites (:func:`cited_lines` of its
    markdown) and, on a defect segment, whether one is within :data:`LINE_SLACK` of a known
    defect line. With ``recorder`` (the auditor's model wrapped in :class:`RecordingModel`),
    each outcome also lists the model's replies under ``replies``.

    Raises:
        Whatever auditing a segment raised beyond a model fault (which rejects it): the first
            such segment's, once every audit has ended.
    """

    def audit(item: EvalSegment) -> tuple[Outcome, list[str]]:
        result = auditor.audit(Segment(item.path, item.start, item.end), item.lines)
        return result, recorder.take() if recorder else []

    audited = results_or_raise(
        map_bounded(audit, items, limit=concurrency, on_done=lambda _index: progress())
    )
    outcomes: list[dict[str, Any]] = []
    for item, (result, replies) in zip(items, audited, strict=True):
        accepted = isinstance(result, AuditResult)
        cited = cited_lines(result.markdown) if isinstance(result, AuditResult) else []
        outcomes.append(
            {
                "id": item.id,
                "defect": item.defect,
                "category": item.category,
                "twin_of": item.twin_of,
                "defect_lines": item.defect_lines,
                "status": ("repaired" if result.retried else "first") if accepted else "rejected",
                "verdict": result.verdict if isinstance(result, AuditResult) else None,
                "cited_lines": cited,
                "line_hit": line_hit(cited, item.defect_lines) if item.defect else None,
                "violations": []
                if isinstance(result, AuditResult)
                else sorted({v.rule for v in result.violations}),
                "error_kind": None if isinstance(result, AuditResult) else result.error_kind,
                "duration_ms": round(result.duration_ms, 1),
                "prompt_tokens": result.prompt_tokens,
                "output_tokens": result.output_tokens,
                "replies": replies,
            }
        )
    return {
        **audit_metrics(outcomes),
        **_timing(
            [o["duration_ms"] for o in outcomes],
            [o["prompt_tokens"] for o in outcomes],
            [o["output_tokens"] for o in outcomes],
        ),
        "outcomes": outcomes,
    }
