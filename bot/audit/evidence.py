"""Evidence for each verified defect: the line it cites is audited, the code it quotes is there.

A defect is a section-2 item that starts with its citation::

    - Line 13 (off-by-one): `len(recent) <= MAX_UPLOADS` admits MAX_UPLOADS + 1 uploads.

``Line N`` or ``Lines N-M``, an optional category, and the first code span after it as quote.
A defect still failing after the repair is dropped with a note in the bot's words, never the
model's text (docs/audit.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.audit.contract import (
    CATEGORIES,
    NONE,
    Category,
    Verdict,
    Violation,
    section,
    verdicts_where,
)

__all__ = [
    "CITATION",
    "MIN_QUOTE_CHARS",
    "Claim",
    "check_claim",
    "defect_items",
    "keep_verified",
    "normalise",
    "parse_claim",
    "quote_line",
    "verdict_after_drop",
]

_DEFECTS, _RISKS, _VERDICT = (
    section(k).key for k in ("verified_defects", "non_blocking_risks", "verdict")
)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
CITATION = re.compile(r"\b(?:lines?|L)\s*(\d+)(?:\s*(?:-|–|to)\s*(\d+))?", re.IGNORECASE)
"""A line citation anywhere in a defect: ``Line 13``, ``lines 10-12``, ``L7``."""
_LEAD = re.compile(
    r"^\s*(?:(?:[-*+]|\d+[.)])\s+)?(?:\*\*)?lines?\s*(\d+)(?:\s*(?:-|–|to)\s*(\d+))?(?:\*\*)?"
    r"\s*(?:\((?P<category>[^()\n]{1,40})\))?\s*[:.—–-]?\s*",
    re.IGNORECASE,
)
MIN_QUOTE_CHARS = 2
"""Shortest quote that counts, whitespace removed (characters): ``<=`` is evidence of an
off-by-one, a lone ``(`` or ``x`` is on almost any line and proves nothing."""


def normalise(code: str) -> str:
    """``code`` without whitespace: how quotes and lines compare (models re-space code)."""
    return "".join(code.split())


def defect_items(body: str) -> list[str]:
    """Section 2's bullet lines, or the whole body when it has none."""
    lines = [line for line in body.splitlines() if line.strip()]
    bullets = [line for line in lines if _BULLET.match(line)]
    return bullets or ([body] if body.strip() else [])


@dataclass(frozen=True)
class Claim:
    """One defect as written in section 2; ``cited`` holds ``(first, last)`` file lines."""

    text: str
    cited: tuple[tuple[int, int], ...]
    quote: str | None
    category: Category | None

    @property
    def line(self) -> int | None:
        return self.cited[0][0] if self.cited else None

    @property
    def label(self) -> str:
        """How the repair turn names the defect: its first 60 characters."""
        return self.text[:60]


def _code_span(text: str) -> str | None:
    """A CommonMark code span's content at the start of ``text``, or ``None``."""
    opening = re.match(r"`+", text)
    if opening is None:
        return None
    fence = opening.group(0)
    closing = re.compile(r"(?<!`)" + fence + r"(?!`)")
    found = closing.search(text, opening.end())
    return text[opening.end() : found.start()] if found else None


def parse_claim(item: str) -> Claim:
    """Read one section-2 item. Never raises."""
    text = " ".join(item.split())
    lead = _LEAD.match(text)
    quote: str | None = None
    category: Category | None = None
    prose = text
    if lead is not None:
        quote = _code_span(text[lead.end() :])
        named = (lead.group("category") or "").strip().lower()
        category = next((c for c in CATEGORIES if c.lower() == named), None)
        if quote is not None:  # code such as `L2 = 3` is not a citation
            prose = text[: lead.end()] + text[lead.end() :].replace(quote, " ", 1)
    cited = tuple(
        (int(a), int(b) if b else int(a))
        for a, b in CITATION.findall(prose)
        if len(a) < 10 and len(b) < 10  # past any file's length: never a huge int
    )
    return Claim(text, cited, quote, category)


def check_claim(claim: Claim, start: int, end: int, lines: Sequence[str]) -> Violation | None:
    """The defect's ``defect_citation`` or ``defect_quote`` violation, or ``None`` if it holds.

    ``start`` and ``end`` are the segment's file lines, 1-based, inclusive; ``lines[0]`` is
    ``start``. A quote must be :data:`MIN_QUOTE_CHARS` long, whitespace removed.
    """
    if not claim.cited:
        return Violation(
            "defect_citation", (f"Defect '{claim.label}' cites no line number.",), _DEFECTS
        )
    if any(lo < start or hi > end or lo > hi for lo, hi in claim.cited):
        return Violation(
            "defect_citation",
            (f"Defect '{claim.label}' cites a line outside {start}-{end}.",),
            _DEFECTS,
        )
    if claim.quote is None or quote_line(claim, start, end, lines) is not None:
        return None
    lo = claim.cited[0][0]
    shown = " ".join(lines[lo - start].split())[:120] if lo - start < len(lines) else ""
    return Violation(
        "defect_quote",
        (
            f"Defect '{claim.label}' quotes code that is not on line {lo}; line {lo} reads "
            f"`{shown}`. Quote the exact code of the line the defect is on, or drop the defect.",
        ),
        _DEFECTS,
    )


def _quote_key(quote: str) -> str:
    """The quote as compared: whitespace and wrapping backticks removed."""
    return normalise(quote).strip("`")


def quote_line(claim: Claim, start: int, end: int, lines: Sequence[str]) -> int | None:
    """The file line the quote starts on, near the first citation, or ``None``.

    A one-line citation also accepts the line just before or after: the quote is the evidence,
    and small models miscount lines by one. The quote may run on past its first line.
    """
    if claim.quote is None or not claim.cited:
        return None
    quoted = _quote_key(claim.quote)
    if len(quoted) < MIN_QUOTE_CHARS:
        return None
    lo, hi = claim.cited[0]
    candidates = list(range(lo, hi + 1)) + ([lo - 1, lo + 1] if lo == hi else [])
    for line in candidates:
        if not start <= line <= end:
            continue
        own = normalise(lines[line - start])
        rest = normalise("".join(lines[line - start :]))
        found = rest.find(quoted)
        if 0 <= found < len(own):
            return line
    return None


def verdict_after_drop(verdict: Verdict, *, defects_left: bool) -> Verdict:
    """The verdict once defects are dropped: ``FIX`` with none left becomes ``GO_WITH_NOTES``."""
    if defects_left or verdict not in verdicts_where(defects=True):
        return verdict
    return verdicts_where(defects=False, risks=True)[0]


def _drop_note(claim: Claim, violation: Violation) -> str:
    where = f"line {claim.line}" if claim.line is not None else "no line"
    why = {
        "defect_citation": "not a line of the audited segment",
        "defect_quote": "its quoted code is not on that line",
    }.get(violation.rule, violation.rule)
    return f"{where} ({why})"


def _cite_quoted_line(claim: Claim, start: int, end: int, lines: Sequence[str]) -> tuple[str, bool]:
    """A verified defect's bullet, and whether its citation moved to its quote's line."""
    text = claim.text
    lead = _LEAD.match(text)
    line = quote_line(claim, start, end, lines)
    moved = lead is not None and lead.group(2) is None and line not in (None, claim.line)
    if moved and lead is not None:
        text = f"{text[: lead.start(1)]}{line}{text[lead.end(1) :]}"
    return (text if _BULLET.match(text) else f"- {text}"), moved


def keep_verified(
    bodies: Mapping[str, str], start: int, end: int, lines: Sequence[str]
) -> tuple[dict[str, str], int]:
    """Drop defects whose evidence fails and move citations to their quote's line.

    Returns ``(bodies, dropped)``. With drops, section 3 gains a note per dropped defect (never
    its text), section 2 keeps the rest, and the verdict follows :func:`verdict_after_drop`.
    """
    body = bodies.get(_DEFECTS, "")
    if not body or body == NONE:
        return dict(bodies), 0
    kept: list[str] = []
    notes: list[str] = []
    moved = False
    for item in defect_items(body):
        claim = parse_claim(item)
        violation = check_claim(claim, start, end, lines)
        if violation is None:
            bullet, relocated = _cite_quoted_line(claim, start, end, lines)
            moved = moved or relocated
            kept.append(bullet)
        else:
            notes.append(_drop_note(claim, violation))
    if not notes:
        out = dict(bodies)
        if moved:  # a citation moved to its quote's line; otherwise the body stays as written
            out[_DEFECTS] = "\n".join(kept)
        return out, 0
    note = (
        f"- triage-bot dropped {len(notes)} claimed defect(s) it could not verify: "
        + "; ".join(notes)
        + "."
    )
    risks = bodies.get(_RISKS, "")
    out = dict(bodies)
    out[_DEFECTS] = "\n".join(kept) if kept else NONE
    out[_RISKS] = note if not risks or risks == NONE else f"{risks}\n{note}"
    verdict = next((v for v in verdicts_where(defects=True) if v == bodies.get(_VERDICT)), None)
    if verdict is not None:
        out[_VERDICT] = verdict_after_drop(verdict, defects_left=bool(kept))
    return out, len(notes)
