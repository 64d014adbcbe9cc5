"""The seven-section audit contract: its single definition, the vocabulary every reader uses.

The prompt, the JSON
schema of ``--audit-format json``, the checker (:mod:`bot.audit.checker`), the comment, the
history statistics (CLI and ``/audit_stats``), the eval, the README table and the tests all read
this module: :data:`SECTIONS` (looked up by ``key``), the verdicts (:data:`VERDICTS`, and when
each is given: :data:`VERDICT_RULES`), the confidences (:data:`CONFIDENCES`) and the violation
codes (:data:`RULES`); nothing else spells them.

The canonical response is seven markdown headings ``## N. Title``, in order, each followed by its
body (:func:`render_sections`). Violation codes, each stable:

``preamble``             text before the section 1 heading
``missing_section``      a heading is absent (or not spelled ``## N. Title``)
``duplicate_section``    a heading appears more than once
``order``                headings out of order
``empty_section``        a section has no body (sections 2–5 say ``None`` when empty)
``bottom_line``          section 1 is not one paragraph naming something in the segment
``defect_citation``      a verified defect cites no line, or a line outside the audited range
``defect_quote``         a verified defect's quote is not on the line it cites
``verdict_value``        section 6 is not exactly one of :data:`VERDICTS`
``confidence_value``     section 7 is not exactly one of :data:`CONFIDENCES`
``trailing_text``        anything after section 7's value
``forbidden_phrase``     a forbidden phrase (e.g. ``Self-Correction``, thinking tags)
``verdict_inconsistent`` defects listed but a verdict for none, or none listed but a defect verdict
``soft_go``              risks listed but a verdict that admits none (``GO``)
``truncated``            the reply was cut at ``num_predict`` (the auditor's own)
``json_schema``          ``--audit-format json``: the reply is not the schema (the auditor's own)

The two defect rules (:data:`EVIDENCE_RULES`) are about one defect, not the contract: the repair
turn names the defect, and one still failing after the repair is dropped from the audit with a
note (:mod:`bot.audit.evidence`), never rejected with it. A verified defect carries a category
from :data:`CATEGORIES`.
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
    """``A, B or C``: how rules and messages list the allowed values."""
    return ", ".join(values[:-1]) + " or " + values[-1] if len(values) > 1 else "".join(values)


@dataclass(frozen=True)
class VerdictRule:
    """When a verdict is given, as the prompt says it and the checker enforces it.

    Attributes:
        verdict: the value.
        when: the prompt's words for when it is given (``when any defect is listed``).
        defects: ``True``: given exactly when section 2 lists a defect; ``False``: only when
            it lists none (rule ``verdict_inconsistent``).
        risks: whether it may stand with risks listed in section 3 (rule ``soft_go``).
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
    """The verdicts given when defects are listed (``FIX``): the eval's recall and the
    statistics' chart count these."""
    return verdicts_where(defects=True)


def verdicts_where(*, defects: bool, risks: bool | None = None) -> tuple[Verdict, ...]:
    """The verdicts whose rule has ``defects`` (and ``risks``, unless ``None``), in order."""
    return tuple(
        r.verdict
        for r in VERDICT_RULES
        if r.defects == defects and (risks is None or r.risks == risks)
    )


def verdict_guide() -> str:
    """The prompt's verdict rule, strongest verdict first: ``FIX when any defect is listed;
    GO_WITH_NOTES when only risks are listed; GO when there is nothing``."""
    return "; ".join(f"{r.verdict} {r.when}" for r in reversed(VERDICT_RULES))


@dataclass(frozen=True)
class Section:
    """One contract section: ``number`` 1–7, its ``title``, JSON ``key`` and the ``rule``."""

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
    """The section whose ``key`` is given (``"verdict"``).

    Raises:
        KeyError: no section has that key.
    """
    return _BY_KEY[key]


Rule = Literal[
    "preamble", "missing_section", "duplicate_section", "order", "empty_section", "bottom_line",
    "defect_citation", "defect_quote", "verdict_value", "confidence_value", "trailing_text",
    "forbidden_phrase",
    "verdict_inconsistent", "soft_go", "truncated", "json_schema",
]  # fmt: skip
"""A violation code (the module docstring says what each means)."""
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
    """The exact heading line of a section, e.g. ``## 6. Verdict``."""
    return f"## {section.number}. {section.title}"


def markdown_name(section: Section) -> str:
    """How the markdown repair turn names a section: ``Section 6``."""
    return f"Section {section.number}"


@dataclass(frozen=True)
class Violation:
    """One broken rule, worded for the repair turn.

    Attributes:
        rule: a code from :data:`RULES`.
        parts: the message's text around each mention of ``section``; the message is
            ``name.join(parts)``, ``name`` being how the response's format names the section
            (:func:`markdown_name`: ``Section 6``; the JSON repair: ``"verdict"``). Text quoted
            from the response sits in ``parts`` and is never searched or rewritten.
        section: the key of the section the violation is about, or ``None`` (the response as a
            whole: preamble, order, forbidden phrase, truncation, schema).
    """

    rule: Rule
    parts: tuple[str, ...]
    section: str | None = None

    @classmethod
    def about(cls, rule: Rule, text: str) -> Violation:
        """A violation of the whole response, with a plain message."""
        return cls(rule, (text,))

    @property
    def message(self) -> str:
        """The message as the markdown repair turn words it."""
        return self.worded(markdown_name)

    def worded(self, name: Callable[[Section], str]) -> str:
        """The message with the section named by ``name`` (unused when ``section`` is None)."""
        if self.section is None:
            return "".join(self.parts)
        return name(section(self.section)).join(self.parts)


@dataclass(frozen=True)
class CheckResult:
    """The checker's answer: ``sections`` maps section key → body (stripped)."""

    violations: tuple[Violation, ...]
    sections: dict[str, str]

    @property
    def ok(self) -> bool:
        """Whether the response satisfies the whole contract, every defect's evidence too."""
        return not self.violations

    @property
    def contract_ok(self) -> bool:
        """Whether the seven-section contract holds, leaving aside defects whose evidence
        fails (:data:`EVIDENCE_RULES`: those defects are dropped, the audit stands)."""
        return all(v.rule in EVIDENCE_RULES for v in self.violations)

    @property
    def verdict(self) -> Verdict | None:
        """Section 6's value when it is one of :data:`VERDICTS`, else ``None``."""
        body = self.sections.get("verdict")
        return next((v for v in VERDICTS if v == body), None)

    @property
    def confidence(self) -> Confidence | None:
        """Section 7's value (its first line) when it is one of :data:`CONFIDENCES`."""
        first = self.sections.get("confidence", "").split("\n", 1)[0].strip()
        return next((c for c in CONFIDENCES if c == first), None)


_HEADING_LINE = {heading(s): s.key for s in SECTIONS}


def render_sections(bodies: Mapping[str, str]) -> str:
    """The canonical markdown for section bodies keyed by section ``key`` (missing bodies are
    empty)."""
    parts = [f"{heading(s)}\n{bodies.get(s.key, '').strip()}" for s in SECTIONS]
    return "\n\n".join(parts) + "\n"


def split_sections(text: str) -> tuple[str, list[tuple[str, int, list[str]]]]:
    """Split a response at contract headings.

    Returns:
        ``(preamble, [(section_key, line_index, body_lines), ...])`` in order of appearance.
    """
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
