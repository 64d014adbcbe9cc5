"""The auditor: one segment in, an accepted audit or a rejection out.

Attempt, check, and on any violation one repair turn quoting them all; check again. Only the
seven-section contract rejects: a defect whose evidence still fails after the repair is dropped
with a note, so every defect an accepted audit holds is verified. A repair never turns a reply
that met the contract into a rejection. A truncated reply gets the repair turn; any other model
fault rejects the segment at once. A rejected audit's text is never kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.audit.checker import DEFAULT_FORBIDDEN, SegmentRef, check_response
from bot.audit.contract import (
    NONE,
    CheckResult,
    Confidence,
    Verdict,
    Violation,
    render_sections,
)
from bot.audit.enclosing import Context
from bot.audit.evidence import Claim, defect_items, keep_verified, parse_claim
from bot.audit.prompt import (
    AuditFormat,
    repair_message,
    repair_version,
    segment_message,
    system_prompt,
)
from bot.audit.selection import Segment
from bot.audit.structured import AuditJSON, parse_audit_json
from bot.chat import (
    CallUsage,
    ChatMessage,
    ChatModel,
    RoleOptions,
    Turn,
    structured_output_schema,
)
from bot.config import AUDITOR_JSON_OPTIONS, AUDITOR_OPTIONS, Settings
from bot.errors import ModelError, ModelOutputError, ModelTruncated

__all__ = [
    "AuditOutcome",
    "AuditRejected",
    "AuditResult",
    "Auditor",
    "Outcome",
    "audit_format",
    "make_auditor",
]


@dataclass(frozen=True)
class _Usage:
    calls: tuple[CallUsage, ...] = ()

    @classmethod
    def of(cls, exc: ModelError, turn: Turn) -> _Usage:
        """What a failed call cost (no call when it reported none)."""
        call = CallUsage.of_error(exc, "auditor", turn)
        return cls(() if call is None else (call,))

    def __add__(self, other: _Usage) -> _Usage:
        return _Usage(self.calls + other.calls)

    @property
    def prompt_tokens(self) -> int:
        return sum(c.prompt_tokens for c in self.calls)

    @property
    def output_tokens(self) -> int:
        return sum(c.output_tokens for c in self.calls)

    @property
    def duration_ms(self) -> float:
        return sum(c.duration_ms for c in self.calls)


@dataclass(frozen=True)
class AuditOutcome:
    """What every audit outcome records; tokens and ``duration_ms`` summed over attempts.

    ``calls`` holds each call's cost, first then repair, a failed call only if it reported one.
    """

    segment: Segment
    retried: bool
    model: str
    prompt_version: str
    prompt_tokens: int
    output_tokens: int
    duration_ms: float
    calls: tuple[CallUsage, ...] = field(default=(), kw_only=True)


@dataclass(frozen=True)
class AuditResult(AuditOutcome):
    """An accepted audit of one segment; ``dropped`` counts unverifiable defects removed."""

    markdown: str
    sections: dict[str, str]
    verdict: Verdict
    confidence: Confidence
    dropped: int = 0

    @property
    def defects(self) -> tuple[Claim, ...]:
        """The verified defects of section 2, in order; empty for ``None``."""
        body = self.sections.get("verified_defects", "")
        return () if body in ("", NONE) else tuple(parse_claim(i) for i in defect_items(body))


@dataclass(frozen=True)
class AuditRejected(AuditOutcome):
    """A segment that could not be audited; holds the violations, never the text.

    ``error_kind`` is the model fault's ``BotError.kind``, ``None`` for a contract failure.
    """

    violations: tuple[Violation, ...]
    error_kind: str | None


Outcome = AuditResult | AuditRejected
"""What auditing one segment gives: accepted or rejected."""


@dataclass(frozen=True)
class _Attempt:
    raw: str
    check: CheckResult
    usage: _Usage = field(default_factory=_Usage)


class Auditor:
    """Audits segments with a :class:`ChatModel`; ``forbidden`` phrases reject a response."""

    def __init__(
        self,
        model: ChatModel,
        options: RoleOptions,
        *,
        fmt: AuditFormat = "markdown",
        forbidden: tuple[str, ...] = DEFAULT_FORBIDDEN,
    ) -> None:
        self._model = model
        self._options = options
        self._fmt: AuditFormat = fmt
        self._forbidden = forbidden

    @property
    def model_name(self) -> str:
        """The model's name, as each audit records it."""
        return self._model.name

    @property
    def prompt_version(self) -> str:
        """The system prompt's version, as each audit records it."""
        return system_prompt(self._fmt)[1]

    @property
    def prompt_versions(self) -> dict[Turn, str]:
        """The version of the prompt each turn answers: the system prompt, the repair turn."""
        return {"first": system_prompt(self._fmt)[1], "repair": repair_version(self._fmt)}

    def _attempt(
        self, messages: Sequence[ChatMessage], ref: SegmentRef, turn: Turn = "first"
    ) -> _Attempt:
        schema = structured_output_schema(AuditJSON) if self._fmt == "json" else None
        try:
            result = self._model.chat(messages, options=self._options, schema=schema)
        except ModelTruncated as exc:
            cut = Violation.about(
                "truncated", "The response was cut off; keep every section short."
            )
            return _Attempt("", CheckResult((cut,), {}), _Usage.of(exc, turn))
        usage = _Usage((CallUsage.of(result, "auditor", turn),))
        text = result.text
        if self._fmt == "json":
            try:
                text = render_sections(parse_audit_json(result.text).bodies())
            except ModelOutputError as exc:
                return _Attempt(
                    result.text,
                    CheckResult((Violation.about("json_schema", str(exc)),), {}),
                    usage,
                )
        return _Attempt(result.text, check_response(text, ref, forbidden=self._forbidden), usage)

    def audit(
        self, segment: Segment, lines: Sequence[str], context: Context | None = None
    ) -> Outcome:
        """Audit one segment: attempt, check, repair once, check again.

        ``lines`` are the segment's; ``context`` is shown around them but never audited.
        Never raises for model faults: they reject the segment.
        """
        system, version = system_prompt(self._fmt)
        messages = [
            ChatMessage("system", system),
            segment_message(segment, lines, context=context),
        ]
        shown = "\n".join(context.lines) if context else ""
        ref = SegmentRef(segment.path, segment.start, segment.end, "\n".join(lines), shown)
        usage = _Usage()
        retried = False
        try:
            attempt = self._attempt(messages, ref)
            usage += attempt.usage
            if not attempt.check.ok:
                retried = True
                first = attempt
                attempt = self._attempt(self._repair(messages, attempt), ref, "repair")
                usage += attempt.usage
                if first.check.contract_ok and not attempt.check.contract_ok:
                    # the repair was for evidence only and broke the contract: the first
                    # reply stands, its unverified defects dropped below
                    attempt = first
        except ModelError as exc:
            usage += _Usage.of(exc, "repair" if retried else "first")
            return self._rejected(segment, (), exc.kind, retried, version, usage)
        check, dropped = attempt.check, 0
        if check.contract_ok:
            bodies, dropped = keep_verified(check.sections, segment.start, segment.end, lines)
            check = check_response(render_sections(bodies), ref, forbidden=self._forbidden)
        # an accepted response has a verdict and a confidence (rules verdict_value,
        # confidence_value); the two None tests only narrow the types
        if not check.ok or check.verdict is None or check.confidence is None:
            return self._rejected(segment, check.violations, None, retried, version, usage)
        return AuditResult(
            *self._common(segment, retried, version, usage),
            markdown=render_sections(check.sections),
            sections=check.sections,
            verdict=check.verdict,
            confidence=check.confidence,
            dropped=dropped,
            calls=usage.calls,
        )

    def _repair(self, messages: list[ChatMessage], attempt: _Attempt) -> list[ChatMessage]:
        """The repair turn: markdown continues the chat; JSON asks afresh, code and violations."""
        repair = repair_message(attempt.check.violations, self._fmt)
        if self._fmt == "json":  # given its earlier JSON, a small model copied it word for word
            system, code = messages
            return [system, ChatMessage("user", f"{code.content}\n\n{repair.content}")]
        return [*messages, ChatMessage("assistant", attempt.raw), repair]

    def _common(
        self, segment: Segment, retried: bool, version: str, usage: _Usage
    ) -> tuple[Segment, bool, str, str, int, int, float]:
        return (
            segment,
            retried,
            self._model.name,
            version,
            usage.prompt_tokens,
            usage.output_tokens,
            usage.duration_ms,
        )

    def _rejected(
        self,
        segment: Segment,
        violations: tuple[Violation, ...],
        error_kind: str | None,
        retried: bool,
        version: str,
        usage: _Usage,
    ) -> AuditRejected:
        return AuditRejected(
            *self._common(segment, retried, version, usage),
            violations=violations,
            error_kind=error_kind,
            calls=usage.calls,
        )


def audit_format(settings: Settings) -> AuditFormat:
    return "json" if settings.audit_format == "json" else "markdown"


def make_auditor(settings: Settings, model: ChatModel) -> Auditor:
    """The one place an auditor is built from settings, for a run and an eval alike."""
    fmt = audit_format(settings)
    return Auditor(model, AUDITOR_JSON_OPTIONS if fmt == "json" else AUDITOR_OPTIONS, fmt=fmt)
