"""Fuzzing: the verdict parser, contract checker, command parser, selection, path rules.

Each property: the target never raises anything but its own refusal, and whatever it *accepts*
keeps the rule, checked here independently of the code under test. Profiles:
tests/support/profiles.py
(``ci``, 200 examples each, by default; ``bench`` with ``TRIAGE_FUZZ_EXAMPLES``). :data:`RUNS` /
:data:`ACCEPTED` count the examples actually run / accepted; when ``TRIAGE_FUZZ_REPORT`` names a
file, they are written there as JSON at module teardown.
"""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.audit.checker import DEFAULT_FORBIDDEN, SegmentRef, check_response
from bot.audit.contract import CONFIDENCES, SECTIONS, VERDICT_RULES, VERDICTS, heading
from bot.audit.ranges import check_range_in_file, normalise_path, parse_range_spec
from bot.audit.selection import DEFAULT_SKIP_GLOBS, select_segments
from bot.clients.github_port import ChangedFile
from bot.commands.handlers import COMMANDS
from bot.commands.parser import MAX_LINE_CHARS, Command, Malformed, parse_command
from bot.errors import InvalidRange, ModelOutputError
from bot.gate.verdict import QUOTE_MAX_CHARS, REASON_MAX_CHARS, parse_verdict
from tests.support.profiles import FUZZ, PROFILE

RUNS: Counter[str] = Counter()  # examples each property ran (target name → count)
ACCEPTED: Counter[str] = Counter()  # of those, inputs the target accepted (the rule checks bite)


@pytest.fixture(scope="module", autouse=True)
def _report_counts() -> Iterator[None]:
    yield
    report = os.environ.get("TRIAGE_FUZZ_REPORT")
    if report:
        data = {"profile": PROFILE, "runs": dict(RUNS), "accepted": dict(ACCEPTED)}
        Path(report).write_text(json.dumps(data), encoding="utf-8")


def _invisible(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cf")


# --- verdict parser -----------------------------------------------------------------------------

_WORDS = st.sampled_from(
    ["VALID", "NEEDS_REFINEMENT", "valid", "Valid", "INVALID", "VALID ", "NEEDS REFINEMENT", ""]
)
_REASONS = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=80),
    st.text(alphabet="Steps gvn, vrsion é 3.\n", min_size=1, max_size=80),
    st.sampled_from(["Steps and version given.", "\u200b", "ok\x00", "x" * 601, "ok\u202e", "."]),
)
_VALUES = st.one_of(_WORDS, _REASONS, st.integers(), st.none(), st.booleans())
_OK_VERDICT = st.sampled_from(["VALID", "NEEDS_REFINEMENT"])
_VERDICT_VALUE = st.one_of(_OK_VERDICT, _OK_VERDICT, _WORDS, _VALUES)
_OK_REASON = st.text(alphabet="Steps gvn, vrsion é 3.\n", min_size=8, max_size=80).filter(
    lambda s: any(ch.isalnum() for ch in s)
)
_REASON = st.one_of(_OK_REASON, _REASONS)
_OK_QUOTE = st.one_of(
    st.just(""),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=60),
    st.sampled_from(["KeyError: 'id'", "run `tool export`", "\u200b", "it crashes"]),
)
_QUOTES = st.one_of(_OK_QUOTE, _OK_QUOTE, st.just("x" * 401), _VALUES)
_QUOTE_KEYS = {"problem": _QUOTES, "trigger": _QUOTES, "expected": _QUOTES}
_ORDERED = st.fixed_dictionaries(  # the schema's order (what constrained decoding writes)
    {"problem": _OK_QUOTE, "trigger": _OK_QUOTE, "expected": _OK_QUOTE, "reason": _REASON,
     "verdict": st.one_of(_OK_VERDICT, _VERDICT_VALUE)}
)  # fmt: skip
_OBJECTS = st.one_of(
    _ORDERED,
    _ORDERED,
    # any order, any value, sometimes an extra or a case-variant key
    st.fixed_dictionaries(
        {"verdict": _VERDICT_VALUE, "reason": _REASON, **_QUOTE_KEYS},
        optional={"extra": _VALUES, "Verdict": _WORDS},
    ),
    # keys left out: the shape before v13 (no quotes) among them
    st.fixed_dictionaries({"verdict": _VERDICT_VALUE, "reason": _REASON}, optional=_QUOTE_KEYS),
)
_WRAPS = ["", "", "", "", "", "fence", "fence", "space"]
_WRAPS += ["bare", "prose", "after", "twice", "cut", "dup", "bold"]


@st.composite
def verdict_replies(draw: st.DrawFn) -> str:
    """Model replies: arbitrary text, or a JSON object (mostly near-valid) wrapped in a mutation."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.text(max_size=300))
    obj = draw(_OBJECTS)
    body = json.dumps(
        obj, ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 2]))
    )
    wrap = draw(st.sampled_from(_WRAPS))
    if wrap == "dup":
        body = body.replace("{", '{"verdict": "VALID", ', 1)
    wrapped = {
        "fence": f"```json\n{body}\n```", "bare": f"```\n{body}\n```", "prose": f"Sure:\n{body}",
        "after": f"{body}\nDone.", "twice": body + body, "bold": f"**{body}**",
        "cut": body[: draw(st.integers(0, max(0, len(body) - 1)))], "space": f" \n\t{body}\n ",
    }  # fmt: skip
    return wrapped.get(wrap, body)


@FUZZ
@given(verdict_replies())
def test_fuzz_verdict_parser(text: str) -> None:
    RUNS["verdict"] += 1
    try:
        verdict = parse_verdict(text)
    except ModelOutputError:
        return
    ACCEPTED["verdict"] += 1
    assert verdict.verdict in ("VALID", "NEEDS_REFINEMENT")
    assert 1 <= len(verdict.reason) <= REASON_MAX_CHARS
    assert any(ch.isalnum() for ch in verdict.reason)
    assert not any(_invisible(ch) and ch not in "\n\t" for ch in verdict.reason)
    assert parse_verdict(verdict.model_dump_json()) == verdict  # round trip
    body = text.strip()
    if body.startswith("```json"):
        body = body.removeprefix("```json").removesuffix("```")
    pairs = json.loads(body, object_pairs_hook=lambda p: p)  # exactly one object, five keys
    assert sorted(pairs) == sorted(
        [
            ("problem", verdict.problem),
            ("trigger", verdict.trigger),
            ("expected", verdict.expected),
            ("reason", verdict.reason),
            ("verdict", verdict.verdict),
        ]
    )
    assert all(isinstance(q, str) and len(q) <= QUOTE_MAX_CHARS for q in verdict.quotes.values())


# --- contract checker ---------------------------------------------------------------------------

CODE = "def read_config(path):\n    handle = open(path)\n    return handle.read()\n"
SEG = SegmentRef("src/config.py", 10, 12, CODE)
_TEXT = st.text(alphabet="abcdefgh ijklm,.;-*#\n", min_size=1, max_size=30)
_PHRASE = st.one_of(_TEXT, st.sampled_from([*DEFAULT_FORBIDDEN, "read_config", "handle", "None"]))
_CITATION = re.compile(r"\b(?:lines?|L)\s*(\d+)(?:\s*(?:-|–|to)\s*(\d+))?", re.IGNORECASE)
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_IDENTS = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


@st.composite
def audit_responses(draw: st.DrawFn) -> str:
    """Seven-section responses built to be mostly valid, then 0-3 random mutations."""
    cited = st.one_of(st.integers(SEG.start, SEG.end), st.integers(1, 30))
    defects = draw(st.lists(st.tuples(cited, _TEXT), max_size=3))
    risks = draw(st.lists(_PHRASE, max_size=2))
    verdict = "FIX" if defects else ("GO_WITH_NOTES" if risks else draw(st.sampled_from(VERDICTS)))
    bodies = [
        f"read_config {draw(_TEXT)}", _listed([f"Line {n}: {w}" for n, w in defects]),
        _listed(risks), _listed(draw(st.lists(_PHRASE, max_size=2))), "None",
        draw(st.sampled_from([verdict, verdict, *VERDICTS, "go", "GO.", "**FIX**", "FIX\nGO", ""])),
        draw(st.sampled_from([*CONFIDENCES, *CONFIDENCES, "high", "High.", "Medium\nmore"])),
    ]  # fmt: skip
    blocks = [[heading(s), body] for s, body in zip(SECTIONS, bodies, strict=True)]
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2, 3]))):
        i = draw(st.integers(0, len(blocks) - 1))
        op = draw(st.sampled_from(["drop", "dup", "swap", "retitle", "body", "pre", "tail"]))
        if op == "drop" and len(blocks) > 1:
            del blocks[i]
        elif op == "dup":
            blocks.insert(i, list(blocks[i]))
        elif op == "swap":
            j = draw(st.integers(0, len(blocks) - 1))
            blocks[i], blocks[j] = blocks[j], blocks[i]
        elif op == "retitle":
            blocks[i][0] = draw(st.sampled_from(["### 6. Verdict", "## 6 Verdict", "## 2. Bugs"]))
        elif op == "body":
            blocks[i][1] = draw(st.one_of(st.text(max_size=60), _PHRASE))
        elif op == "tail":
            blocks[i][1] += "\n\n" + draw(_PHRASE)
        elif op == "pre":
            blocks.insert(0, ["", draw(_PHRASE)])
    return "\n\n".join(f"{h}\n{b}" if h else b for h, b in blocks) + "\n"


def _listed(items: list[str]) -> str:
    return "\n".join(f"- {i}" for i in items) or "None"


def _cites_in_range(item: str) -> bool:
    cited = [(int(a), int(b) if b else int(a)) for a, b in _CITATION.findall(item)]
    return bool(cited) and all(SEG.start <= lo <= hi <= SEG.end for lo, hi in cited)


@FUZZ
@given(st.one_of(audit_responses(), audit_responses(), st.text(max_size=300)))
def test_fuzz_contract_checker(text: str) -> None:
    RUNS["contract"] += 1
    result = check_response(text, SEG)
    assert all(v.rule and v.message for v in result.violations)
    if not result.ok:
        return
    ACCEPTED["contract"] += 1
    lines = text.splitlines()
    titles = {heading(s) for s in SECTIONS}
    at = [i for i, line in enumerate(lines) if line.strip() in titles]
    assert [lines[i].strip() for i in at] == [heading(s) for s in SECTIONS]  # 7, once, in order
    assert not "\n".join(lines[: at[0]]).strip()
    spans = zip(at, [*at[1:], len(lines)], strict=True)
    body = {
        s.key: "\n".join(lines[a + 1 : b]).strip()
        for s, (a, b) in zip(SECTIONS, spans, strict=True)
    }
    assert all(body.values())
    assert result.sections == body
    bottom, defects, risks = (
        body["bottom_line"],
        body["verified_defects"],
        body["non_blocking_risks"],
    )
    verdict = body["verdict"]
    assert verdict in VERDICTS
    assert body["confidence"] in CONFIDENCES
    assert not any(p.lower() in text.lower() for p in DEFAULT_FORBIDDEN)
    assert not re.search(r"\n\s*\n", bottom)
    code_names = {n.lower() for n in _IDENTS.findall(CODE)}
    assert code_names & {n.lower() for n in _IDENTS.findall(bottom)} or "config.py" in bottom
    rule = next(r for r in VERDICT_RULES if r.verdict == verdict)  # when it may be given
    if defects == "None":
        assert not rule.defects  # GO or GO_WITH_NOTES
    else:
        assert rule.defects  # FIX
        items = [ln for ln in defects.splitlines() if _BULLET.match(ln)] or [defects]
        assert all(_cites_in_range(item) for item in items)
    assert rule.risks or risks == "None"  # no GO with risks


# --- command parser -----------------------------------------------------------------------------

_NAMES = st.sampled_from([*COMMANDS, *COMMANDS, "Audit", "AUDIT_HISTORY", "triage!", "", "etc/x"])
_ARGS = st.one_of(
    st.integers(-5, 2_000_000).map(str),
    st.sampled_from(["src/a.py:1-10", "../x:1-2", "0", "007", "1e3", "+5", "٣", "５", "1٠"]),
    st.sampled_from(["٣", "５", "١٢", "𝟓", "1_0", " 7", "0x1", "-0", "3.0", "10", "50", "51"]),
    st.text(max_size=10),
)
_LEADS = st.sampled_from(["", "", " ", "    ", "\t", "\n", "\r\n", "> ", "```\n", "~~~ ", "/"])
_SEPS = st.sampled_from([" ", " ", "  ", "\t", "\u00a0", "\u2003", ""])


@st.composite
def comments(draw: st.DrawFn) -> str | None:
    """Comment bodies: arbitrary text, or a command-shaped first line with arbitrary parts."""
    if draw(st.integers(0, 3)) == 0:
        return draw(st.one_of(st.none(), st.text(max_size=300)))
    sep = draw(_SEPS)
    line = sep.join(["/" + draw(_NAMES), *draw(st.lists(_ARGS, max_size=3))])
    tail = draw(
        st.one_of(st.sampled_from(["", "\n/triage", "\nmore", "\r\n"]), st.text(max_size=30))
    )
    return draw(_LEADS) + line + tail


@FUZZ
@given(comments())
def test_fuzz_command_parser(body: str | None) -> None:
    RUNS["commands"] += 1
    result = parse_command(body)
    first = (body or "").lstrip("\r\n").split("\n", 1)[0].rstrip("\r")
    if first.startswith(("    ", "\t")) or first.strip().startswith((">", "```", "~~~")):
        assert result is None  # code blocks and quotes are never commands
    if result is None:
        return
    assert isinstance(result, Command | Malformed)
    assert first.strip().startswith("/")
    if isinstance(result, Malformed):
        assert result.reply
        assert "\n" not in result.reply
        return
    ACCEPTED["commands"] += 1
    assert len(first) <= MAX_LINE_CHARS
    words = first.strip()[1:].split()
    assert words[0].lower() == result.name
    assert result.name in COMMANDS
    spec = COMMANDS[result.name]
    args = words[1:]
    if spec.arg == "none":
        assert (result.count, result.range, result.choice, args) == (None, None, None, [])
    elif spec.arg == "count":
        assert (result.range, result.choice) == (None, None)
        assert len(args) <= 1
        assert all(re.fullmatch(r"[0-9]{1,6}", arg) for arg in args)  # ASCII digits only
        assert result.count == (int(args[0]) if args else spec.default)
        assert spec.minimum <= result.count <= spec.maximum
    elif spec.arg == "choice":
        assert (result.count, result.range) == (None, None)
        assert len(args) <= 1
        assert result.choice == (args[0].lower() if args else None)
        assert result.choice is None or result.choice in spec.choices
    else:
        assert (result.count, result.choice) == (None, None)
        assert len(args) <= 1
        assert result.range == (args[0] if args else None)


# --- segment selection --------------------------------------------------------------------------

_PATHS = st.one_of(
    st.sampled_from(["src/app.py", "package-lock.json", "vendor/x.go", "web/a.min.js", "x.lock"]),
    st.text(alphabet="ab/._-", min_size=1, max_size=10),
)
_OPS = st.lists(st.tuples(st.sampled_from(" +-\\"), st.integers(1, 120)), max_size=12)


@st.composite
def changed_file(draw: st.DrawFn, path: str) -> tuple[ChangedFile, set[int] | None]:
    """A changed file and the new-side numbers of its added lines (``None``: unknown)."""
    status = draw(st.sampled_from(["added", "modified", "renamed", "removed", "copied"]))
    kind = draw(st.integers(0, 7))
    if kind < 2:
        return ChangedFile(path, status, draw(st.none() if kind else st.text(max_size=200))), None
    lines: list[str] = []
    added: set[int] = set()
    for start, ops in draw(st.lists(st.tuples(st.integers(1, 3000), _OPS), min_size=1, max_size=3)):
        lines.append(f"@@ -{start},9 +{start},9 @@ def f():")
        new = start
        for op, count in ops:
            if op == "\\":
                lines.append("\\ No newline at end of file")
                continue
            lines.extend(f"{op}x" for _ in range(count))
            if op == "+":
                added.update(range(new, new + count))
            new += count if op in " +" else 0
    return ChangedFile(path, status, draw(st.sampled_from(["\n", "\r\n"])).join(lines)), added


@FUZZ
@given(st.data(), st.lists(_PATHS, max_size=4, unique=True), st.integers(1, 12))
def test_fuzz_selection(data: st.DataObject, paths: list[str], cap: int) -> None:
    drawn = [data.draw(changed_file(path)) for path in paths]
    gap, max_lines = data.draw(st.integers(0, 5)), data.draw(st.integers(1, 200))
    RUNS["selection"] += 1  # after the draws: an example whose data ran out is not counted
    files = [f for f, _ in drawn]
    selection = select_segments(files, max_segments=cap, merge_gap=gap, max_lines=max_lines)
    assert len(selection.segments) <= cap
    assert list(selection.segments) == sorted(selection.segments)
    ACCEPTED["selection"] += bool(selection.segments)
    capped = [s.segment for s in selection.skipped if s.segment is not None]
    for changed, added in drawn:
        mine = [s for s in selection.segments if s.path == changed.path]
        pieces = sorted(mine + [s for s in capped if s.path == changed.path])
        whole = [s for s in selection.skipped if s.path == changed.path and s.segment is None]
        assert bool(pieces) != bool(whole)  # every file is audited or skipped with a reason
        globbed = any(fnmatch.fnmatchcase(changed.path, g) for g in DEFAULT_SKIP_GLOBS)
        if changed.status == "removed" or not changed.patch or globbed:
            assert not pieces
        for piece in pieces:
            assert 1 <= piece.lines <= max_lines <= 200
        if added is None or not pieces:
            continue
        covered = [n for p in pieces for n in range(p.start, p.end + 1)]
        assert len(covered) == len(set(covered))  # no line audited twice
        assert added <= set(covered)  # no added line lost
        for piece in pieces:  # within the patch's added lines; none only unchanged lines
            assert min(added) <= piece.start <= piece.end <= max(added)
            # (with max_lines <= merge_gap a piece can fall in a merged gap: not the bot's 200/3)
            assert max_lines <= gap or added & set(range(piece.start, piece.end + 1))


# --- explicit range and path rules --------------------------------------------------------------

_PARTS = st.one_of(
    st.sampled_from(["..", ".", "", "...", ".. ", " ..", "..\u200b", "\u2024\u2024", "%2e%2e"]),
    st.sampled_from(["src", "app.py", "café", "cafe\u0301", "%2e%2e", "%2F", "a\\b", "a/"]),
    st.sampled_from(["C:", "a\x00", "\u200b", " ", "w:n.txt", "~", "．．", "\u202e", "…"]),
    st.text(max_size=5),
)
_OK_RANGE = st.tuples(st.integers(1, 500), st.integers(0, 210))
_RANGES = st.one_of(
    _OK_RANGE.map(lambda t: f"{t[0]}-{t[0] + t[1]}"),
    _OK_RANGE.map(lambda t: f"{t[0]}-{t[0] + t[1]}"),
    st.tuples(st.integers(-3, 10**10), st.integers(-3, 10**10)).map(lambda t: f"{t[0]}-{t[1]}"),
    st.sampled_from(["1-200", "1-201", "0-5", "5-4", "01-02", " 3-4 ", "1 - 2", "١-٢", "1-"]),
    st.text(max_size=8),
)
_PREFIXES = st.sampled_from(["", "", "", "./", "/", "//", " ", "././", "C:/"])
_GOOD_PARTS = st.sampled_from(["src", "app.py", "café", "cafe\u0301", "w:n.txt", "a b", "．．"])
_SPEC_PARTS = st.lists(st.one_of(_GOOD_PARTS, _GOOD_PARTS, _PARTS), min_size=1, max_size=4)


@FUZZ
@given(_PREFIXES, _SPEC_PARTS, _RANGES, st.integers(0, 400))
def test_fuzz_range_and_path_rules(prefix: str, parts: list[str], rng: str, lines: int) -> None:
    RUNS["ranges"] += 1
    raw = prefix + "/".join(parts)
    changed = [raw, "src/app.py", unicodedata.normalize("NFD", raw)]
    try:
        segment = parse_range_spec(f"{raw}:{rng}", changed)
    except InvalidRange:
        return
    ACCEPTED["ranges"] += 1
    assert segment.path in changed  # GitHub's own spelling (NFD stays NFD)
    path = unicodedata.normalize("NFC", segment.path)
    assert path == normalise_path(path)
    assert posixpath.normpath(path) == path  # no traversal, no "." or empty segment
    assert not {"", ".", ".."} & set(path.split("/"))
    refused = (r"^/", r"%[0-9A-Fa-f]{2}", r"\\")  # absolute, encoded, backslash
    assert not any(re.search(pattern, path) for pattern in refused)
    assert not any(map(_invisible, path))
    assert re.fullmatch(r"[0-9]+-[0-9]+", rng.strip())
    assert 1 <= segment.start <= segment.end <= segment.start + 199
    try:
        check_range_in_file(segment, lines)
    except InvalidRange:
        assert segment.end > lines
    else:
        assert segment.end <= lines
