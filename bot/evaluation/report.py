"""Eval reports: markdown tables, the side-by-side comparison, and the threshold check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from bot.audit.contract import VERDICTS, defect_verdicts
from bot.errors import ConfigError
from bot.evaluation.run import LINE_SLACK
from bot.evaluation.sets import Half
from bot.gate.verdict import GATE_OUTCOMES
from bot.neutralise import log_value
from bot.regular_file import content_problems, field_names

__all__ = [
    "METRICS",
    "Threshold",
    "compare_reports",
    "failed_thresholds",
    "read_report",
    "render_report",
    "spread_reports",
]

_FLAGGING = "/".join(defect_verdicts())
_CLEAN = "/".join(v for v in VERDICTS if v not in defect_verdicts())

# (section, key, label, higher is better); the audit keys keep their names across verdict sets
# (reports are compared run to run), their labels name the contract's verdicts
METRICS: tuple[tuple[str, str, str, bool], ...] = (
    ("gate", "agreement", "gate agreement", True),
    ("gate", "agreement_non_borderline", "gate agreement, non-borderline items", True),
    ("gate", "nr_precision", "NEEDS_REFINEMENT precision", True),
    ("gate", "nr_recall", "NEEDS_REFINEMENT recall", True),
    ("gate", "valid_precision", "VALID precision", True),
    ("gate", "valid_recall", "VALID recall", True),
    ("gate", "model_agreement", "agreement of the model's own verdict", True),
    ("gate", "rule_changed", "decisions other than the model's verdict", False),
    ("gate", "raised", "model NEEDS_REFINEMENT decided VALID", False),
    ("gate", "validator_error_rate", "validator-error rate", False),
    ("gate", "injection_valid_against_expectation", "injection items judged VALID", False),
    ("gate", "copied_from_issue", "reasons copied from the issue", False),
    ("gate", "p50_ms", "gate p50 ms", False),
    ("gate", "p95_ms", "gate p95 ms", False),
    ("audit", "accepted_first_try", "audit accepted first try", True),
    ("audit", "accepted_after_repair", "audit accepted after repair", True),
    ("audit", "rejected", "audit rejected", False),
    ("audit", "fix_recall", f"{_FLAGGING} recall on defects", True),
    ("audit", "pair_accuracy", f"pair accuracy ({_FLAGGING} on the defect, not on its twin)", True),
    ("audit", "line_hit", f"defect-line hit (±{LINE_SLACK})", True),
    ("audit", "clean_go", f"{_CLEAN} on clean (twins included)", True),
    ("audit", "twin_go", f"{_CLEAN} on fixed twins", True),
    ("audit", "p50_ms", "audit p50 ms", False),
    ("audit", "p95_ms", "audit p95 ms", False),
)


def _fmt(key: str, value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and not key.endswith("_ms"):
        return f"{value:.1%}" if value <= 1 else f"{value:.1f}"
    if isinstance(value, float):
        return f"{value:.0f}"
    return str(value)


def _cell(value: Any, *, max_chars: int = 100) -> str:
    """Untrusted text as one terminal-safe table cell; ``|`` shows as ``/``."""
    return log_value(" ".join(str(value).split()), max_chars=max_chars).replace("|", "/")


def render_report(report: Mapping[str, Any]) -> str:
    """The report as markdown: headline metrics, the confusion matrix, per-item outcomes."""
    title = f"## triage-bot eval: {log_value(str(report['model']), max_chars=200)}"
    if "audit" in report:
        title += f" ({report['audit_format']} audits)"
    lines = [
        title,
        "",
        "| metric | value |",
        "|---|---|",
    ]
    if report.get("gate", {}).get("prompt_version"):
        version = log_value(str(report["gate"]["prompt_version"]), max_chars=40)
        lines.append(f"| gate prompt version | {version} |")
    policy = report.get("gate", {}).get("policy")
    if policy:
        shown = f"{policy['name']} ({policy['version']}, {policy['source']})"
        if policy.get("mismatch"):
            shown += f"; {policy['mismatch']}"
        lines.append(f"| gate policy | {_cell(shown, max_chars=300)} |")
    for section, key, label, _ in METRICS:
        if section in report:
            lines.append(f"| {label} | {_fmt(key, report[section].get(key))} |")
    gate = report.get("gate")
    if gate and gate.get("halves"):
        lines += ["", _halves_table(gate["halves"])]
    if gate:
        lines += [
            "",
            "| expected \\ got | " + " | ".join(GATE_OUTCOMES) + " |",
            "|---|" + "---|" * len(GATE_OUTCOMES),
        ]
        for expected, row in gate["confusion"].items():
            lines.append(f"| {expected} | " + " | ".join(str(row[g]) for g in GATE_OUTCOMES) + " |")
        lines += [
            "",
            "| issue | kind | expected | got | quotes not found | reason |",
            "|---|---|---|---|---|---|",
        ]
        for o in gate["outcomes"]:
            mark = "" if o["agree"] else " ✗"
            given = {k for k, v in (o.get("quotes") or {}).items() if v}
            lost = sorted(given - set(o.get("found") or []))
            lines.append(
                f"| {o['id']} | {_cell(o['kind'], max_chars=40)} | {o['expected']} | "
                f"{o['got']}{mark} | {_cell(', '.join(lost) or '–', max_chars=60)} | "
                f"{_cell(o['reason'])} |"
            )
    audit = report.get("audit")
    if audit:
        lines += [
            "",
            "| segment | defect | status | verdict | lines cited | violations |",
            "|---|---|---|---|---|---|",
        ]
        for o in audit["outcomes"]:
            why = ", ".join(o["violations"]) or (o["error_kind"] or "")
            cited = ", ".join(map(str, o.get("cited_lines") or [])) or "–"
            cited += {True: " ✓", False: " ✗"}.get(o.get("line_hit"), "")  # defect segments
            lines.append(
                f"| {o['id']} | {'yes' if o['defect'] else 'no'} | {o['status']} | "
                f"{o['verdict'] or '–'} | {cited} | {why} |"
            )
    return "\n".join(lines) + "\n"


HALF_METRICS = (
    ("agreement", "agreement"),
    ("agreement_non_borderline", "non-borderline"),
    ("nr_precision", "NR precision"),
    ("nr_recall", "NR recall"),
    ("valid_precision", "VALID precision"),
    ("valid_recall", "VALID recall"),
    ("validator_error_rate", "validator-error"),
)
"""The per-half figures of a development-set run (both halves are reported every time)."""


def _halves_table(halves: Mapping[str, Mapping[str, Any]]) -> str:
    names = list(halves)
    lines = [
        "| half | items | " + " | ".join(label for _, label in HALF_METRICS) + " |",
        "|---|---|" + "---|" * len(HALF_METRICS),
    ]
    for name in names:
        h = halves[name]
        cells = " | ".join(_fmt(key, h.get(key)) for key, _ in HALF_METRICS)
        lines.append(f"| {name} | {h.get('items', 0)} | {cells} |")
    return "\n".join(lines)


def _numbers(*values: Any) -> bool:
    return all(isinstance(v, int | float) for v in values)


def _change(key: str, a: Any, b: Any, higher_better: bool) -> str:
    """The change from ``a`` to ``b`` with ✓ or ✗; empty unless both are numbers."""
    if not _numbers(a, b):
        return ""
    diff = b - a
    better = diff > 0 if higher_better else diff < 0
    sign = "+" if diff >= 0 else ""
    delta = f"{sign}{_fmt(key, float(diff)) if isinstance(diff, float) else diff}"
    return delta + (" ✓" if better else (" ✗" if diff else ""))


HALF_DECIDING = ("agreement_non_borderline", "nr_precision")
"""The per-half goal figures a change must not trade between the halves."""


def _compare_halves(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """Per-half rows of two ``--split`` runs, then each goal figure traded between halves."""
    names = [n for n in new if n in old]
    lines = ["", "| half | metric | old | new | change |", "|---|---|---|---|---|"]
    for name in names:
        for key, label in HALF_METRICS:
            a, b = old[name].get(key), new[name].get(key)
            higher_better = key != "validator_error_rate"
            lines.append(
                f"| {name} | {label} | {_fmt(key, a)} | {_fmt(key, b)} | "
                f"{_change(key, a, b, higher_better)} |"
            )
    labels = dict(HALF_METRICS)
    for key in HALF_DECIDING:
        pairs = {n: (old[n].get(key), new[n].get(key)) for n in names}
        up = [n for n, (a, b) in pairs.items() if _numbers(a, b) and b > a]
        down = [n for n, (a, b) in pairs.items() if _numbers(a, b) and b < a]
        if up and down:
            lines += [
                "",
                f"**{labels[key]}: helps {', '.join(up)}, hurts {', '.join(down)}**: a change "
                "that helps one half and hurts the other is not kept (evals/README.md, "
                '"Development set"); two runs of one setup differ by an item or two, so judge '
                "on more than one run.",
            ]
    return lines


Figure = int | float | None
"""A figure of a report: a count, a share or milliseconds; ``None`` when nothing was measured."""


def _keep(keys: frozenset[str], data: Any) -> Any:
    return {k: v for k, v in data.items() if k in keys} if isinstance(data, dict) else data


class _HalfShape(BaseModel):
    """One half's figures (:data:`HALF_METRICS` and ``items``)."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, Figure]

    @model_validator(mode="before")
    @classmethod
    def _figures(cls, data: Any) -> Any:
        return _keep(frozenset(["items", *(key for key, _ in HALF_METRICS)]), data)


class _SectionShape(BaseModel):
    """A ``gate`` or ``audit`` section: figures, prompt version and halves."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, Figure]
    prompt_version: str | None = None
    halves: dict[str, _HalfShape] | None = None

    @model_validator(mode="before")
    @classmethod
    def _figures(cls, data: Any) -> Any:
        keys = frozenset(["prompt_version", "halves", *(key for _, key, _, _ in METRICS)])
        return _keep(keys, data)


class _ReportShape(BaseModel):
    """What :func:`compare_reports` reads of an earlier report."""

    model_config = ConfigDict(extra="ignore")
    model: str | None = None
    gate: _SectionShape | None = None
    audit: _SectionShape | None = None


_REPORT_KEYS = field_names(_ReportShape) | {
    "items",
    *get_args(Half),
    *(key for key, _ in HALF_METRICS),
    *(key for _, key, _, _ in METRICS),
}
"""The keys an error about an earlier report may name."""


def read_report(data: str | bytes, *, source: str) -> dict[str, Any]:
    """An earlier ``eval --out`` report, reduced to what :func:`compare_reports` reads.

    Raises :exc:`ConfigError` naming ``source`` and the key when it is not a JSON report
    whose figures are numbers.
    """
    try:
        report = _ReportShape.model_validate_json(data)
    except ValidationError as exc:
        problem = content_problems(exc, _REPORT_KEYS, most=1)
        raise ConfigError(f"{source}: not an eval report: {problem}") from None
    return report.model_dump(exclude_none=True)


def compare_reports(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """Both runs' headline metrics side by side with the change; per half for ``--split`` runs."""
    lines = [
        f"| metric | {_cell(old.get('model') or 'old', max_chars=200)} | "
        f"{_cell(new.get('model') or 'new', max_chars=200)} | change |",
        "|---|---|---|---|",
    ]
    versions = [str(r.get("gate", {}).get("prompt_version") or "–") for r in (old, new)]
    if versions != ["–", "–"]:  # reports kept before the field existed have none
        a, b = (log_value(v, max_chars=40) for v in versions)
        lines.append(f"| gate prompt version | {a} | {b} | |")
    for section, key, label, higher_better in METRICS:
        a = old.get(section, {}).get(key)
        b = new.get(section, {}).get(key)
        if a is None and b is None:
            continue
        delta = _change(key, a, b, higher_better)
        lines.append(f"| {label} | {_fmt(key, a)} | {_fmt(key, b)} | {delta} |")
    old_halves = old.get("gate", {}).get("halves")
    new_halves = new.get("gate", {}).get("halves")
    if old_halves and new_halves:
        lines += _compare_halves(old_halves, new_halves)
    return "\n".join(lines) + "\n"


def spread_reports(reports: list[Mapping[str, Any]]) -> str:
    """Several runs of one setup: each metric's min, mean and max, then the unstable items.

    Runs differ by an item or two: the ``<issue id>`` nonce is random per call.
    Raises :exc:`ValueError` for fewer than two reports or reports of different parts.
    """
    if len(reports) < 2:
        raise ValueError("spread needs at least two reports")
    parts = [tuple(p for p in ("gate", "audit") if p in r) for r in reports]
    if not parts[0] or len(set(parts)) > 1:
        found = "; ".join(f"run {n}: {'+'.join(p) or 'none'}" for n, p in enumerate(parts, 1))
        raise ValueError(f"the reports must cover the same parts (gate, audit): {found}")
    lines = [f"| metric ({len(reports)} runs) | min | mean | max |", "|---|---|---|---|"]
    for section, key, label, _ in METRICS:
        values = [r.get(section, {}).get(key) for r in reports]
        numbers = [float(v) for v in values if isinstance(v, int | float)]
        if len(numbers) != len(reports):
            continue
        low, mean, high = min(numbers), sum(numbers) / len(numbers), max(numbers)
        if all(isinstance(v, int) for v in values):  # counts: whole min/max, one-decimal mean
            cells = f"{low:.0f} | {mean:.1f} | {high:.0f}"
        else:
            cells = " | ".join(_fmt(key, v) for v in (low, mean, high))
        lines.append(f"| {label} | {cells} |")
    runs = [{o["id"]: o["got"] for o in r.get("gate", {}).get("outcomes", [])} for r in reports]
    expected = {
        o["id"]: o["expected"] for r in reports for o in r.get("gate", {}).get("outcomes", [])
    }
    unstable = [i for i in expected if len({run.get(i) for run in runs}) > 1]
    if unstable:
        lines += [
            "",
            "| issue | expected | " + " | ".join(f"run {n + 1}" for n in range(len(runs))) + " |",
            "|---|---|" + "---|" * len(runs),
        ]
        for item in unstable:
            got = " | ".join(str(run.get(item, "–")) for run in runs)
            lines.append(f"| {item} | {expected[item]} | {got} |")
    elif expected:  # audit-only runs have no gate items to list
        lines += ["", "every gate item had the same outcome in every run"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Threshold:
    """A bound a report must meet: ``section.key`` ≥ ``value`` (or ≤ when not ``minimum``)."""

    section: str
    key: str
    value: float
    minimum: bool


def failed_thresholds(report: Mapping[str, Any], thresholds: list[Threshold]) -> list[str]:
    """One line per threshold the report misses."""
    failures = []
    for t in thresholds:
        got = report.get(t.section, {}).get(t.key)
        if got is None:
            continue
        if (got < t.value) if t.minimum else (got > t.value):
            sign = "≥" if t.minimum else "≤"
            failures.append(f"{t.section}.{t.key} = {_fmt(t.key, got)}, needs {sign} {t.value}")
    return failures
