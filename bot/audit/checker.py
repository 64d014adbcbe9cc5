"""The audit contract's checker: one response in, every violation out.

Every violation, never only the first: the repair turn quotes them all. A JSON reply is
rendered to the canonical markdown first, so "accepted" means the same in both formats.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from bot.audit.contract import (
    CONFIDENCES,
    NONE,
    SECTIONS,
    VERDICT_RULES,
    VERDICTS,
    CheckResult,
    VerdictRule,
    Violation,
    heading,
    one_of,
    section,
    split_sections,
    verdicts_where,
)
from bot.audit.evidence import check_claim, defect_items, parse_claim

__all__ = ["DEFAULT_FORBIDDEN", "SegmentRef", "check_response"]

DEFAULT_FORBIDDEN: tuple[str, ...] = (
    "Self-Correction", "As an AI", "as a language model", "<think>", "</think>", "<thinking>",
    "</thinking>", "<|im_start|>", "<|im_end|>", "<start_of_turn>", "<end_of_turn>",
)  # fmt: skip
"""Phrases that reject a response (case-insensitive); configurable per run."""


@dataclass(frozen=True)
class SegmentRef:
    """What a response is checked against: the audited range and its code.

    ``start`` and ``end`` are 1-based, inclusive; ``code`` has no line numbers. The bottom line
    may name something in ``context``, the enclosing block; a defect may not.
    """

    path: str
    start: int
    end: int
    code: str
    context: str = ""


# the sections the checks read, by key (a key the contract lacks fails at import)
_BOTTOM, _DEFECTS, _RISKS, _VERDICT, _CONFIDENCE = (
    section(k).key
    for k in ("bottom_line", "verified_defects", "non_blocking_risks", "verdict", "confidence")
)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
_STOPWORDS = frozenset(
    "the and for this that with from into when then than code line lines file segment function "
    "value values none not are was were has have its will can should may".split()
)


def _check_bottom_line(body: str, segment: SegmentRef) -> list[Violation]:
    out = []
    if re.search(r"\n\s*\n", body):
        out.append(Violation("bottom_line", ("", " must be a single paragraph."), _BOTTOM))
    code_names = {n.lower() for n in _IDENT.findall(f"{segment.code}\n{segment.context}")}
    code_names -= _STOPWORDS
    names = {n.lower() for n in _IDENT.findall(body)}
    basename = segment.path.rsplit("/", 1)[-1].lower()
    if not (names & code_names) and basename not in body.lower():
        examples = ", ".join(f"`{n}`" for n in _example_names(segment.code))
        offered = f"one of these names from the code: {examples}, or " if examples else ""
        out.append(
            Violation(
                "bottom_line",
                (
                    "",
                    " must name something in the segment: rewrite it to start with "
                    f"{offered}the file {segment.path}.",
                ),
                _BOTTOM,
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
    """Up to ``count`` names a bottom line could use, for the repair turn.

    A small model fixes "name something in the code" far more often when shown candidates.
    """
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
    lines = segment.code.split("\n")
    claims = (parse_claim(item) for item in defect_items(body))
    found = (check_claim(c, segment.start, segment.end, lines) for c in claims)
    return [v for v in found if v is not None]


def check_response(
    text: str, segment: SegmentRef, *, forbidden: tuple[str, ...] = DEFAULT_FORBIDDEN
) -> CheckResult:
    """Check one audit response against the contract; return every violation.

    ``forbidden`` phrases match case-insensitively. Never raises on any input text.
    """
    violations: list[Violation] = []
    lowered = text.lower()
    for phrase in forbidden:
        if phrase.lower() in lowered:
            violations.append(Violation.about("forbidden_phrase", f"Remove the phrase '{phrase}'."))
    preamble, found = split_sections(text)
    if preamble.strip():
        violations.append(
            Violation.about("preamble", f"Start with '{heading(SECTIONS[0])}'; nothing before it.")
        )
    keys = [key for key, _, _ in found]
    bodies: dict[str, str] = {}
    for s in SECTIONS:
        count = keys.count(s.key)
        if count == 0:
            violations.append(
                Violation("missing_section", (f"Add the heading '{heading(s)}' exactly.",), s.key)
            )
        elif count > 1:
            violations.append(
                Violation("duplicate_section", (f"'{heading(s)}' appears {count} times.",), s.key)
            )
    numbers = [section(key).number for key in keys]
    firsts = [n for i, n in enumerate(numbers) if n not in numbers[:i]]
    if firsts != sorted(firsts):
        violations.append(Violation.about("order", "Keep the seven sections in order 1 to 7."))
    for key, _, lines in found:
        bodies.setdefault(key, "\n".join(lines).strip())
    for s in SECTIONS:
        if s.key in bodies and not bodies[s.key]:
            hint = " (write None if there is nothing)" if s.allows_none else ""
            violations.append(Violation("empty_section", ("", f" is empty{hint}."), s.key))
    if bodies.get(_BOTTOM):
        violations.extend(_check_bottom_line(bodies[_BOTTOM], segment))
    defects = bodies.get(_DEFECTS, "")
    if defects and defects != NONE:
        violations.extend(_check_defects(defects, segment))
    verdict = bodies.get(_VERDICT)
    if verdict is not None and verdict and verdict not in VERDICTS:
        violations.append(
            Violation("verdict_value", ("", f" must be exactly {one_of(VERDICTS)}."), _VERDICT)
        )
    confidence = bodies.get(_CONFIDENCE)
    if confidence:
        first, _, rest = confidence.partition("\n")
        if first.strip() not in CONFIDENCES:
            violations.append(
                Violation(
                    "confidence_value",
                    ("", f" must be exactly {one_of(CONFIDENCES)}."),
                    _CONFIDENCE,
                )
            )
        if rest.strip():
            violations.append(
                Violation("trailing_text", ("Nothing may follow ", "'s value."), _CONFIDENCE)
            )
    rule = next((r for r in VERDICT_RULES if r.verdict == verdict), None)
    if rule is not None and defects:
        violations.extend(_check_consistency(rule, has_defects=defects != NONE))
    risks = bodies.get(_RISKS, "")
    if rule is not None and not rule.risks and risks and risks != NONE:
        instead = one_of(verdicts_where(defects=False, risks=True))
        violations.append(
            Violation.about("soft_go", f"Risks are listed, so use {instead}, not {rule.verdict}.")
        )
    return CheckResult(violations=tuple(violations), sections=bodies)


def _check_consistency(rule: VerdictRule, *, has_defects: bool) -> list[Violation]:
    if has_defects and not rule.defects:
        wanted = one_of(verdicts_where(defects=True))
        return [
            Violation.about(
                "verdict_inconsistent", f"Defects are listed, so the verdict is {wanted}."
            )
        ]
    if not has_defects and rule.defects:
        others = one_of(verdicts_where(defects=False))
        return [
            Violation(
                "verdict_inconsistent",
                (
                    f"The verdict is {rule.verdict} but ",
                    " lists no defect: list each defect you found in ",
                    f" with its line, or use {others} if there is none.",
                ),
                _DEFECTS,
            )
        ]
    return []
