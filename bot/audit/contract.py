"""The seven-section audit contract: the one definition of its vocabulary.

The prompt, the JSON schema, the checker, the comment, the statistics, the eval, the README
table and the tests read :data:`SECTIONS`, the verdicts and their rules, the confidences, the
violation codes (:data:`RULES`) and the categories from here; nothing else spells them. The
canonical response is seven headings ``## N. Title`` in order, each with its body.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal, get_args

__all__ = [
    "AUDITOR_RULES",
    "CATEGORIES",
    "CONFIDENCES",
    "EVIDENCE_RULES",
    "MAX_DEFECTS",
    "RULES",
    "SECTIONS",
    "VERDICTS",
    "VERDICT_RULES",
    "Category",
    "CheckResult",
    "Confidence",
    "Rule",
    "Section",
    "Verdict",
    "VerdictRule",
    "Violation",
    "defect_verdicts",
    "heading",
    "markdown_name",
    "one_of",
    "render_sections",
    "section",
    "split_sections",
    "verdict_guide",
    "verdicts_where",
]

Verdict = Literal["GO", "GO_WITH_NOTES", "FIX"]
"""Section 6's values, mildest first (the order of the statistics columns)."""
Confidence = Literal["High", "Medium", "Low"]
"""Section 7's values, surest first."""
VERDICTS: tuple[Verdict, ...] = get_args(Verdict)
CONFIDENCES: tuple[Confidence, ...] = get_args(Confidence)
NONE = "None"

MAX_DEFECTS = 20
"""Most verified defects one audit posts: the JSON schema's bound on section 2's list, and the
number of line comments one audit of either format adds to a review (a markdown reply has no
schema, so its defects past this many stay in the summary comment only)."""


def one_of(values: tuple[str, ...]) -> str:
    return ", ".join(values[:-1]) + " or " + values[-1] if len(values) > 1 else "".join(values)


@dataclass(frozen=True)
class VerdictRule:
    """When a verdict is given, as the prompt says it and the checker enforces it.

    ``defects``: given exactly when section 2 lists a defect (``True``) or only when none;
    ``risks``: whether it may stand with risks in section 3.
    """

    verdict: Verdict
    when: str
    defects: bool
    risks: bool


VERDICT_RULES: tuple[VerdictRule, ...] = (
    VerdictRule("GO", "when there is nothing", defects=False, risks=False),
    VerdictRule("GO_WITH_NOTES", "when only risks are listed", defects=False, risks=True),
    VerdictRule("FIX", "when any defect is listed", defects=True, risks=True),
)
"""One rule per verdict, in :data:`VERDICTS` order (a test keeps the two equal)."""


def defect_verdicts() -> tuple[Verdict, ...]:
    """The verdicts given when defects are listed (``FIX``)."""
    return verdicts_where(defects=True)


def verdicts_where(*, defects: bool, risks: bool | None = None) -> tuple[Verdict, ...]:
    return tuple(
        r.verdict
        for r in VERDICT_RULES
        if r.defects == defects and (risks is None or r.risks == risks)
    )


def verdict_guide() -> str:
    """The prompt's verdict rule, strongest verdict first."""
    return "; ".join(f"{r.verdict} {r.when}" for r in reversed(VERDICT_RULES))


@dataclass(frozen=True)
class Section:
    number: int
    title: str
    key: str
    rule: str
    allows_none: bool


SECTIONS: tuple[Section, ...] = (
    Section(1, "Bottom line", "bottom_line",
            "one paragraph tied to this code (names something in the segment)", False),
    Section(2, "Verified defects", "verified_defects",
            "concrete defects visible in the segment, each with its line in range, the code on "
            "that line, its category and what goes wrong; or None", True),
    Section(3, "Non-blocking risks", "non_blocking_risks",
            "practical risks that do not block; or None", True),
    Section(4, "Assumptions", "assumptions",
            "what the audit inferred about code outside the segment; or None", True),
    Section(5, "Future improvements", "future_improvements",
            "optional hardening, not defects in disguise; or None", True),
    Section(6, "Verdict", "verdict", f"exactly {one_of(VERDICTS)}", False),
    Section(7, "Confidence", "confidence", f"exactly {one_of(CONFIDENCES)}", False),
)  # fmt: skip

_BY_KEY = {s.key: s for s in SECTIONS}


def section(key: str) -> Section:
    """The section whose ``key`` is given; :class:`KeyError` for none."""
    return _BY_KEY[key]


Rule = Literal[
    "preamble",  # text before the section 1 heading
    "missing_section",  # a heading is absent, or not spelled ``## N. Title``
    "duplicate_section",  # a heading appears more than once
    "order",  # headings out of order
    "empty_section",  # a section has no body (sections 2-5 say ``None`` when empty)
    "bottom_line",  # section 1 is not one paragraph naming something in the segment
    "defect_citation",  # a defect cites no line, or one outside the segment
    "defect_quote",  # a defect's quote is not on the line it cites
    "verdict_value",  # section 6 is not exactly one of VERDICTS
    "confidence_value",  # section 7 is not exactly one of CONFIDENCES
    "trailing_text",  # anything after section 7's value
    "forbidden_phrase",  # e.g. ``Self-Correction``, thinking tags
    "verdict_inconsistent",  # defects but a verdict for none, or none but a defect verdict
    "soft_go",  # risks listed but a verdict that admits none (GO)
    "truncated",  # the reply was cut at num_predict (the auditor's own)
    "json_schema",  # the reply is not the JSON schema (the auditor's own)
]
"""A violation code, stable; the comment beside each says what it means."""
RULES: tuple[Rule, ...] = get_args(Rule)
"""Every violation code: the checker's, then the auditor's own."""
AUDITOR_RULES: tuple[Rule, ...] = ("truncated", "json_schema")
"""The codes the auditor reports itself (:mod:`bot.audit.auditor`), never the checker."""
EVIDENCE_RULES: tuple[Rule, ...] = ("defect_citation", "defect_quote")
"""The codes about one defect's evidence (its line, its quote): after the repair turn the
defect is dropped with a note, the audit is not rejected for them."""

Category = Literal[
    "off-by-one", "bounds", "loop termination", "injection", "input validation",
    "resource leak", "unchecked error", "null/None", "race", "wrong condition", "other",
]  # fmt: skip
"""A verified defect's kind, from a fixed list (``other`` for anything else)."""
CATEGORIES: tuple[Category, ...] = get_args(Category)
"""Every defect category, in the order the prompt lists them."""


def heading(section: Section) -> str:
    """The exact heading line, e.g. ``## 6. Verdict``."""
    return f"## {section.number}. {section.title}"


def markdown_name(section: Section) -> str:
    return f"Section {section.number}"


@dataclass(frozen=True)
class Violation:
    """One broken rule, worded for the repair turn.

    The message is ``name.join(parts)``, ``name`` being how the format names ``section``; quoted
    response text sits in ``parts`` and is never rewritten. ``section`` ``None``: the whole reply.
    """

    rule: Rule
    parts: tuple[str, ...]
    section: str | None = None

    @classmethod
    def about(cls, rule: Rule, text: str) -> Violation:
        return cls(rule, (text,))

    @property
    def message(self) -> str:
        """The message as the markdown repair turn words it."""
        return self.worded(markdown_name)

    def worded(self, name: Callable[[Section], str]) -> str:
        if self.section is None:
            return "".join(self.parts)
        return name(section(self.section)).join(self.parts)


@dataclass(frozen=True)
class CheckResult:
    """The checker's answer: ``sections`` maps section key → stripped body."""

    violations: tuple[Violation, ...]
    sections: dict[str, str]

    @property
    def ok(self) -> bool:
        """Whether the whole contract holds, every defect's evidence too."""
        return not self.violations

    @property
    def contract_ok(self) -> bool:
        """Whether the contract holds, leaving aside defects whose evidence fails."""
        return all(v.rule in EVIDENCE_RULES for v in self.violations)

    @property
    def verdict(self) -> Verdict | None:
        """Section 6's value if it is a verdict, else ``None``."""
        body = self.sections.get("verdict")
        return next((v for v in VERDICTS if v == body), None)

    @property
    def confidence(self) -> Confidence | None:
        """Section 7's first line if it is a confidence, else ``None``."""
        first = self.sections.get("confidence", "").split("\n", 1)[0].strip()
        return next((c for c in CONFIDENCES if c == first), None)


_HEADING_LINE = {heading(s): s.key for s in SECTIONS}


def render_sections(bodies: Mapping[str, str]) -> str:
    """The canonical markdown for bodies keyed by section ``key`` (missing: empty)."""
    parts = [f"{heading(s)}\n{bodies.get(s.key, '').strip()}" for s in SECTIONS]
    return "\n\n".join(parts) + "\n"


def split_sections(text: str) -> tuple[str, list[tuple[str, int, list[str]]]]:
    """Split a response at its headings: ``(preamble, [(key, line_index, body_lines)])``."""
    preamble: list[str] = []
    found: list[tuple[str, int, list[str]]] = []
    for index, line in enumerate(text.splitlines()):
        key = _HEADING_LINE.get(line.strip())
        if key is not None:
            found.append((key, index, []))
        elif found:
            found[-1][2].append(line)
        else:
            preamble.append(line)
    return "\n".join(preamble), found
