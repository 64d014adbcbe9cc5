"""Evidence for each verified defect: the line it cites is audited, the code it quotes is there.

Every defect is evidence the bot can check. A verified defect is one item of section 2 that starts
with its citation::

    - Line 13 (off-by-one): `len(recent) <= MAX_UPLOADS` admits MAX_UPLOADS + 1 uploads.

``Line N`` (or ``Lines N-M``) is the file line, the optional ``(category)`` one of
:data:`~bot.audit.contract.CATEGORIES`, and the first code span right after the citation the
quote: the exact code on the line, or a part of it. The JSON format always writes this shape
(:mod:`bot.audit.structured`); in the markdown format the quote is there when the model writes
it. :func:`check_claim` verifies a defect: every cited line lies in the audited segment (rule
``defect_citation``), and the quote, whitespace removed, is part of the cited lines' code,
whitespace removed (rule ``defect_quote``). The checker reports a failing defect by name and the
auditor sends it to the repair turn; :func:`keep_verified` then drops a defect that still fails,
with a note in the bot's own words (never the model's text), and gives the verdict the contract
gives for what remains: a ``FIX`` left with no defect becomes ``GO_WITH_NOTES``, the drop note
being the note (:func:`verdict_after_drop`).
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
    """``code`` with every whitespace character removed: how quotes and lines are compared
    (a model re-spaces ``a+b`` as ``a + b`` and drops indentation)."""
    return "".join(code.split())


def defect_items(body: str) -> list[str]:
    """Section 2's items: its bullet lines, or the whole body when it has no bullets."""
    lines = [line for line in body.splitlines() if line.strip()]
    bullets = [line for line in lines if _BULLET.match(line)]
    return bullets or ([body] if body.strip() else [])


@dataclass(frozen=True)
class Claim:
    """One defect as written in section 2.

    Attributes:
        text: the item, one line, whitespace collapsed.
        cited: every ``(first, last)`` line range it cites, in order (file lines).
        quote: the code span right after the leading citation, or ``None``.
        category: the ``(category)`` after the leading citation when it is one of
            :data:`~bot.audit.contract.CATEGORIES`, else ``None``.
    """

    text: str
    cited: tuple[tuple[int, int], ...]
    quote: str | None
    category: Category | None

    @property
    def line(self) -> int | None:
        """The first cited line, or ``None``."""
        return self.cited[0][0] if self.cited else None

    @property
    def label(self) -> str:
        """How the repair turn names the defect: its first 60 characters."""
        return self.text[:60]


def _code_span(text: str) -> str | None:
    """The content of a code span at the start of ``text`` (CommonMark: a run of N backticks
    up to the next run of exactly N), or ``None``."""
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
    """The defect's evidence against the segment, or ``None`` when it holds.

    Args:
        claim: the parsed defect.
        start / end: the segment's first and last file line (1-based, inclusive).
        lines: the segment's lines (``lines[0]`` is line ``start``).

    Returns:
        a ``defect_citation`` violation (no line cited, or one outside the segment, or a
        backwards range) or a ``defect_quote`` violation (the quote, whitespace removed, is not
        part of the cited lines' code or is shorter than :data:`MIN_QUOTE_CHARS`).
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
    """The quote as compared: whitespace removed, and the backticks a model wraps code in
    (`` `x[1]` `` inside the JSON ``quote`` field) taken off both ends."""
    return normalise(quote).strip("`")


def quote_line(claim: Claim, start: int, end: int, lines: Sequence[str]) -> int | None:
    """The file line the claim's quote starts on, near its first citation, or ``None``.

    The quote (:func:`_quote_key`) counts when it is at least :data:`MIN_QUOTE_CHARS` long and
    starts on a cited line (``lo``..``hi`` of the first citation); it may run on into the lines
    after it (a statement a model quotes across its line breaks). A one-line citation also
    accepts the line just before or after it when the quote starts there and not on the cited
    line: the quote is the evidence, the number a count a small model gets wrong by one; the
    kept defect then cites the line the quote is on (:func:`keep_verified`).

    Args:
        claim: a parsed defect with a quote and at least one citation inside the segment.
        start / end / lines: the audited segment (see :func:`check_claim`).
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
    """The verdict once unverifiable defects are dropped: unchanged while a defect is left;
    a defect verdict (``FIX``) left with none becomes the contract's verdict for notes only
    (``GO_WITH_NOTES``: the drop note is listed under section 3)."""
    if defects_left or verdict not in verdicts_where(defects=True):
        return verdict
    return verdicts_where(defects=False, risks=True)[0]


def _drop_note(claim: Claim, violation: Violation) -> str:
    """The bot's words for a dropped defect: where it pointed and which check failed."""
    where = f"line {claim.line}" if claim.line is not None else "no line"
    why = {
        "defect_citation": "not a line of the audited segment",
        "defect_quote": "its quoted code is not on that line",
    }.get(violation.rule, violation.rule)
    return f"{where} ({why})"


def _cite_quoted_line(claim: Claim, start: int, end: int, lines: Sequence[str]) -> tuple[str, bool]:
    """A verified defect as a bullet, and whether its leading one-line citation was moved to
    the neighbouring line its quote is on (:func:`quote_line`)."""
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
    """Drop every defect whose evidence fails (:func:`check_claim`) from accepted sections,
    and move a one-line citation to the neighbouring line its quote is on (:func:`quote_line`).

    Args:
        bodies: section key → body, the contract otherwise met.
        start / end / lines: the audited segment (see :func:`check_claim`).

    Returns:
        ``(bodies, dropped)``: the new bodies and how many defects were dropped. Without drops
        or moves the bodies are returned as written. With drops,
        section 3 gains one bullet naming each dropped defect's line and failed check (never
        its text: unverified model claims are neither stored nor posted), section 2 keeps the
        verified ones (``None`` when none is left) and the verdict follows
        :func:`verdict_after_drop`.
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
