"""Run the gate and the auditor over labelled sets and compute the eval's figures.

Pure but for the model calls; the figures are defined in docs/evaluation.md.
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
from bot.gate.types import GateDecision
from bot.gate.validator import Validator
from bot.gate.verdict import GATE_OUTCOMES, NO_VERDICT, VerdictValue
from bot.shares import Share

__all__ = [
    "LINE_SLACK",
    "Call",
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
    """A :class:`ChatModel` wrapper keeping every call's reply or fault, per thread, for the
    eval report and ``--save-replies``.

    The auditor keeps no rejected audit's text; the report shows it to say why.
    """

    def __init__(self, model: ChatModel) -> None:
        self._model = model
        self._local = threading.local()

    @property
    def _calls(self) -> list[Call]:
        if not hasattr(self._local, "calls"):
            self._local.calls = []
        calls: list[Call] = self._local.calls
        return calls

    @property
    def last_fault(self) -> str | None:
        """The fault kind of this thread's last call; ``None`` if it returned."""
        fault: str | None = getattr(self._local, "last_fault", None)
        return fault

    @property
    def name(self) -> str:
        return self._model.name

    def chat(
        self,
        messages: Sequence[ChatMessage],
        *,
        options: RoleOptions,
        schema: dict[str, Any] | None = None,
    ) -> ChatResult:
        try:
            result = self._model.chat(messages, options=options, schema=schema)
        except ModelError as exc:
            self._local.last_fault = exc.kind
            self._calls.append(Call(None, exc.kind))
            raise
        self._local.last_fault = None
        self._calls.append(Call(result.text, None))
        return result

    def take_calls(self) -> list[Call]:
        """This thread's calls since its last ``take`` or ``take_calls``, oldest first."""
        calls = self._calls
        self._local.calls = []
        return calls

    def take(self) -> list[str]:
        """The replies of :meth:`take_calls`: the texts of the calls that returned."""
        return [c.reply for c in self.take_calls() if c.reply is not None]


@dataclass(frozen=True)
class Call:
    """One recorded call: the model's text, or the kind of the fault it raised."""

    reply: str | None
    error: str | None


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0–1) by nearest rank; 0.0 for no values."""
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
    """The counts behind :func:`label_metrics`, each a :class:`Share`, in that order."""
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
    """Agreement (overall, non-borderline) and each verdict's precision and recall.

    A ``validator-error`` never agrees. An empty ratio is ``None``, except agreement and the
    validator-error rate, which are 0.0.
    """
    out: dict[str, Any] = {"items": len(outcomes)}
    for key, share in label_shares(outcomes).items():
        out[key] = share.value
    out["agreement"] = out["agreement"] or 0.0
    out["validator_error_rate"] = out["validator_error_rate"] or 0.0
    return out


@dataclass(frozen=True)
class Judged:
    """One labelled issue, the gate's decision, and the reply's text or fault kind."""

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
    """Judge every issue, up to ``concurrency`` at once (one at a time with ``replay``).

    ``recorder`` must be the validator's model. A model fault is an item's decision; any
    other error is raised once every item has ended. Raises :exc:`ConfigError` before judging
    if ``replay`` lacks an item.
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
    """One item's JSON-ready outcome, with ``verdict`` (the decision's, or another policy's)."""
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
    """The gate's figures over :func:`outcome_of` outcomes; per half with ``split``.

    ``raised`` counts the model's NEEDS_REFINEMENT decided VALID.
    """
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
    """The gate's JSON-ready report: prompt version, deciding policy, figures, outcomes.

    Arguments and errors as :func:`judge_items`; ``split`` adds figures per half.
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
"""How far a cited line may be from a defect line: models often cite the line next to it."""

_DEFECTS_KEY = section("verified_defects").key


_LEADING_CITATION = re.compile(r"\b(?:lines?|L)\s*(\d+)(?:\s*(?:-|–|to)\s*(\d+))?", re.IGNORECASE)
"""The citation forms the checker accepts: ``Line N``, ``Lines A-B``, ``L7``."""


def cited_lines(audit: str) -> list[int]:
    """The sorted file lines an audit (JSON reply or markdown) cites for its verified defects.

    In markdown only the first citation on each defect line counts: later ones are prose or
    quoted code. Text that is neither, or cites nothing, gives ``[]``.
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
    """Whether a cited line lies within :data:`LINE_SLACK` of a defect line."""
    return any(abs(c - d) <= LINE_SLACK for c in cited for d in defect_lines)


def _verdict_share(outcomes: Sequence[Mapping[str, Any]], *, flagging: bool) -> float | None:
    # A rejected audit has no verdict and counts for neither side.
    said = defect_verdicts()
    hits = sum(o["verdict"] is not None and (o["verdict"] in said) == flagging for o in outcomes)
    return _share(hits, len(outcomes))


def audit_metrics(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The audit figures, shares in 0–1, from per-segment outcomes (docs/evaluation.md).

    Each outcome needs ``id``, ``defect``, ``status`` and ``verdict``; ``twin_of`` and
    ``line_hit`` may be missing (older reports). A share over no items is ``None``.
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
    *,
    replay: ReplayModel | None = None,
) -> dict[str, Any]:
    """Audit every segment, up to ``concurrency`` at once (one at a time with ``replay``):
    figures, timing and outcomes, each with its calls (``turns``) when ``recorder`` is the
    auditor's model.

    A model fault rejects a segment; any other error is raised once every audit has ended.
    Raises :exc:`ConfigError` before auditing if ``replay`` lacks a segment.
    """
    if replay is not None:
        replay.require(item.id for item in items)

    def audit(item: EvalSegment) -> tuple[Outcome, list[Call]]:
        if replay is not None:
            replay.select(item.id)
        result = auditor.audit(Segment(item.path, item.start, item.end), item.lines)
        return result, recorder.take_calls() if recorder else []

    limit = 1 if replay is not None else concurrency
    audited = results_or_raise(
        map_bounded(audit, items, limit=limit, on_done=lambda _index: progress())
    )
    outcomes: list[dict[str, Any]] = []
    for item, (result, calls) in zip(items, audited, strict=True):
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
                "replies": [c.reply for c in calls if c.reply is not None],
                "turns": [{"reply": c.reply, "error": c.error} for c in calls],
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
