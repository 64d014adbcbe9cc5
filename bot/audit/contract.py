"""The seven-section audit contract: its single definition and its checker.

Rule source: design.md, "PR audit" (the contract table and its checks). The prompt, the JSON
schema of ``--audit-format json``, the checker, the README table and the tests all read
:data:`SECTIONS`; nothing else spells the section names.

The canonical response is seven markdown headings ``## N. Title``, in order, each followed by its
body. :func:`check_response` returns every violation (never only the first): the repair prompt
quotes them all. Rules, each with a stable code:

``preamble``             text before the section 1 heading
``missing_section``      a heading is absent (or not spelled ``## N. Title``)
``duplicate_section``    a heading appears more than once
``order``                headings out of order
``empty_section``        a section has no body (sections 2–5 say ``None`` when empty)
``bottom_line``          section 1 is not one paragraph naming something in the segment
``defect_citation``      a verified defect cites no line, or a line outside the audited range
``verdict_value``        section 6 is not exactly ``GO``, ``GO_WITH_NOTES`` or ``FIX``
``confidence_value``     section 7 is not exactly ``High``, ``Medium`` or ``Low``
``trailing_text``        anything after section 7's value
``forbidden_phrase``     a forbidden phrase (e.g. ``Self-Correction``, thinking tags)
``verdict_inconsistent`` defects listed but verdict not FIX, or no defects but FIX
``soft_go``              risks listed but verdict GO
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CONFIDENCES",
    "DEFAULT_FORBIDDEN",
    "RULES",
    "SECTIONS",
    "VERDICTS",
    "CheckResult",
    "Section",
    "SegmentRef",
    "Violation",
    "check_response",
    "heading",
    "render_sections",
    "split_sections",
]

Verdict = Literal["GO", "GO_WITH_NOTES", "FIX"]
Confidence = Literal["High", "Medium", "Low"]
VERDICTS: tuple[Verdict, ...] = ("GO", "GO_WITH_NOTES", "FIX")
CONFIDENCES: tuple[Confidence, ...] = ("High", "Medium", "Low")
NONE = "None"


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
            "concrete defects visible in the segment, each citing a line in range; or None", True),
    Section(3, "Non-blocking risks", "non_blocking_risks",
            "practical risks that do not block; or None", True),
    Section(4, "Assumptions", "assumptions",
            "what the audit inferred about code outside the segment; or None", True),
    Section(5, "Future improvements", "future_improvements",
            "optional hardening, not defects in disguise; or None", True),
    Section(6, "Verdict", "verdict", "exactly GO, GO_WITH_NOTES or FIX", False),
    Section(7, "Confidence", "confidence", "exactly High, Medium or Low", False),
)  # fmt: skip

RULES: tuple[str, ...] = (
    "preamble", "missing_section", "duplicate_section", "order", "empty_section", "bottom_line",
    "defect_citation", "verdict_value", "confidence_value", "trailing_text", "forbidden_phrase",
    "verdict_inconsistent", "soft_go",
)  # fmt: skip
"""Every violation code the checker can return."""

DEFAULT_FORBIDDEN: tuple[str, ...] = (
    "Self-Correction", "As an AI", "as a language model", "<think>", "</think>", "<thinking>",
    "</thinking>", "<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>",
)  # fmt: skip
"""Phrases that reject a response (case-insensitive); configurable per run."""


def heading(section: Section) -> str:
    """The exact heading line of a section, e.g. ``## 6. Verdict``."""
    return f"## {section.number}. {section.title}"


@dataclass(frozen=True)
class SegmentRef:
    """What the response is checked against: the audited file range and its code.

    Attributes:
        path: file path in the PR.
        start: first audited line (1-based, inclusive).
        end: last audited line (inclusive).
        code: the audited lines' text (without line numbers).
    """

    path: str
    start: int
    end: int
    code: str


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``rule`` is a code from :data:`RULES`, ``message`` is for the repair."""

    rule: str
    message: str


@dataclass(frozen=True)
class CheckResult:
    """The checker's answer: ``sections`` maps section number → body (stripped)."""

    violations: tuple[Violation, ...]
    sections: dict[int, str]

    @property
    def ok(self) -> bool:
        """Whether the response satisfies the whole contract."""
        return not self.violations


_HEADING_LINE = {heading(s): s.number for s in SECTIONS}
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_CITATION = re.compile(r"\b(?:lines?|L)\s*(\d+)(?:\s*(?:-|–|to)\s*(\d+))?", re.IGNORECASE)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_STOPWORDS = frozenset(
    "the and for this that with from into when then than code line lines file segment function "
    "value values none not are was were has have its will can should may".split()
)


def render_sections(bodies: dict[int, str]) -> str:
    """The canonical markdown for section bodies keyed by number (missing bodies are empty)."""
    parts = [f"{heading(s)}\n{bodies.get(s.number, '').strip()}" for s in SECTIONS]
    return "\n\n".join(parts) + "\n"


def split_sections(text: str) -> tuple[str, list[tuple[int, int, list[str]]]]:
    """Split a response at contract headings.

    Returns:
        ``(preamble, [(section_number, line_index, body_lines), ...])`` in order of appearance.
    """
    preamble: list[str] = []
    found: list[tuple[int, int, list[str]]] = []
    for index, line in enumerate(text.splitlines()):
        number = _HEADING_LINE.get(line.strip())
        if number is not None:
            found.append((number, index, []))
        elif found:
            found[-1][2].append(line)
        else:
            preamble.append(line)
    return "\n".join(preamble), found


def _items(body: str) -> list[str]:
    lines = [line for line in body.splitlines() if line.strip()]
    bullets = [line for line in lines if _BULLET.match(line)]
    return bullets or ([body] if body.strip() else [])


def _check_bottom_line(body: str, segment: SegmentRef) -> list[Violation]:
    out = []
    if re.search(r"\n\s*\n", body):
        out.append(Violation("bottom_line", "Section 1 must be a single paragraph."))
    code_names = {n.lower() for n in _IDENT.findall(segment.code)} - _STOPWORDS
    names = {n.lower() for n in _IDENT.findall(body)}
    basename = segment.path.rsplit("/", 1)[-1].lower()
    if not (names & code_names) and basename not in body.lower():
        examples = ", ".join(f"`{n}`" for n in _example_names(segment.code))
        offered = f"one of these names from the code: {examples}, or " if examples else ""
        out.append(
            Violation(
                "bottom_line",
                f"Section 1 must name something in the segment: rewrite it to start with "
                f"{offered}the file {segment.path}.",
            )
        )
    return out


_KEYWORDS = frozenset(
    "func function return import from class const static public private protected void self "
    "this true false null nil else elif while done then local echo string bool async await "
    "defer struct interface package final throws throw catch try except raise print".split()
)
_DEFINED = re.compile(
    r"\b(?:def|function|func|fn|class|struct|interface|type|sub)\s+(?:\([^)]*\)\s*)?"
    r"([A-Za-z_][A-Za-z0-9_]{2,})"
)


def _example_names(code: str, count: int = 3) -> list[str]:
    """Up to ``count`` names a bottom line could use: what the segment defines (``def x``,
    ``func (r) x``, ``class X`` ...), else its most frequent identifiers. For the repair turn:
    a small model fixes "name something in the code" far more often when shown candidates."""
    defined = list(dict.fromkeys(_DEFINED.findall(code)))
    if len(defined) < count:
        frequent = Counter(
            n
            for n in _IDENT.findall(code)
            if len(n) > 3 and n.lower() not in _STOPWORDS | _KEYWORDS
        )
        defined += [n for n, _ in frequent.most_common() if n not in defined]
    return defined[:count]


def _check_defects(body: str, segment: SegmentRef) -> list[Violation]:
    out = []
    for item in _items(body):
        cited = [(int(a), int(b) if b else int(a)) for a, b in _CITATION.findall(item)]
        label = " ".join(item.split())[:60]
        if not cited:
            out.append(Violation("defect_citation", f"Defect '{label}' cites no line number."))
        elif any(lo < segment.start or hi > segment.end or lo > hi for lo, hi in cited):
            out.append(
                Violation(
                    "defect_citation",
                    f"Defect '{label}' cites a line outside {segment.start}-{segment.end}.",
                )
            )
    return out


def check_response(
    text: str, segment: SegmentRef, *, forbidden: tuple[str, ...] = DEFAULT_FORBIDDEN
) -> CheckResult:
    """Check one audit response against the contract; return every violation.

    Args:
        text: the model's full response (markdown).
        segment: the audited range and its code.
        forbidden: phrases that reject the response (case-insensitive).

    Never raises on any input text.
    """
    violations: list[Violation] = []
    lowered = text.lower()
    for phrase in forbidden:
        if phrase.lower() in lowered:
            violations.append(Violation("forbidden_phrase", f"Remove the phrase '{phrase}'."))
    preamble, found = split_sections(text)
    if preamble.strip():
        violations.append(
            Violation("preamble", f"Start with '{heading(SECTIONS[0])}'; nothing before it.")
        )
    numbers = [number for number, _, _ in found]
    bodies: dict[int, str] = {}
    for section in SECTIONS:
        count = numbers.count(section.number)
        if count == 0:
            violations.append(
                Violation("missing_section", f"Add the heading '{heading(section)}' exactly.")
            )
        elif count > 1:
            violations.append(
                Violation("duplicate_section", f"'{heading(section)}' appears {count} times.")
            )
    firsts = [n for i, n in enumerate(numbers) if n not in numbers[:i]]
    if firsts != sorted(firsts):
        violations.append(Violation("order", "Keep the seven sections in order 1 to 7."))
    for number, _, lines in found:
        bodies.setdefault(number, "\n".join(lines).strip())
    for section in SECTIONS:
        if section.number in bodies and not bodies[section.number]:
            hint = " (write None if there is nothing)" if section.allows_none else ""
            violations.append(
                Violation("empty_section", f"Section {section.number} is empty{hint}.")
            )
    if bodies.get(1):
        violations.extend(_check_bottom_line(bodies[1], segment))
    defects = bodies.get(2, "")
    if defects and defects != NONE:
        violations.extend(_check_defects(defects, segment))
    verdict = bodies.get(6)
    if verdict is not None and verdict and verdict not in VERDICTS:
        violations.append(
            Violation("verdict_value", "Section 6 must be exactly GO, GO_WITH_NOTES or FIX.")
        )
    confidence = bodies.get(7)
    if confidence:
        first, _, rest = confidence.partition("\n")
        if first.strip() not in CONFIDENCES:
            violations.append(
                Violation("confidence_value", "Section 7 must be exactly High, Medium or Low.")
            )
        if rest.strip():
            violations.append(Violation("trailing_text", "Nothing may follow section 7's value."))
    if verdict in VERDICTS and defects:
        has_defects = defects != NONE
        if has_defects and verdict != "FIX":
            violations.append(
                Violation("verdict_inconsistent", "Defects are listed, so the verdict is FIX.")
            )
        if not has_defects and verdict == "FIX":
            violations.append(
                Violation(
                    "verdict_inconsistent",
                    "The verdict is FIX but Section 2 lists no defect: list each defect you "
                    "found in Section 2 with its line, or use GO or GO_WITH_NOTES if there is "
                    "none.",
                )
            )
    risks = bodies.get(3, "")
    if verdict == "GO" and risks and risks != NONE:
        violations.append(Violation("soft_go", "Risks are listed, so use GO_WITH_NOTES, not GO."))
    return CheckResult(violations=tuple(violations), sections=bodies)
