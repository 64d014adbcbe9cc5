"""Each verified defect is evidence the bot checks: its line in the segment,
its quote on that line; what stays unverifiable after the repair is dropped, never stored or
posted, whatever the model replies."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from bot.audit.auditor import Auditor
from bot.audit.contract import CATEGORIES, split_sections
from bot.audit.evidence import (
    check_claim,
    defect_items,
    keep_verified,
    normalise,
    parse_claim,
    quote_line,
    verdict_after_drop,
)
from bot.audit.plan import apply_audit, plan_audit
from bot.clients.github_port import ChangedFile, PullRef
from bot.config import AUDITOR_OPTIONS
from bot.history.store import Store
from tests.support import FakeChatModel
from tests.support.fake_github import FakeGitHub
from tests.support.profiles import FUZZ

FILE = [
    '"""Rate limits for the upload endpoint."""',
    "",
    "import time",
    "",
    "WINDOW_S = 60",
    "MAX_UPLOADS = 10",
    "",
    "",
    "def allowed(history: list[float], now: float | None = None) -> bool:",
    '    """Whether one more upload fits in the window."""',
    "    now = time.time() if now is None else now",
    "    recent = [t for t in history if now - t < WINDOW_S]",
    "    return len(recent) <= MAX_UPLOADS",
]
PATCH = "@@ -1,6 +1,13 @@\n" + "\n".join(
    (" " if n <= 6 else "+") + line for n, line in enumerate(FILE, 1)
)
START, END = 7, 13
SEGMENT_LINES = FILE[START - 1 : END]
PULL = PullRef("o/r", 2, "ec26c3e57ca3a959ca5aad62de7213c562f8c821")


def test_a_quote_matches_with_whitespace_removed() -> None:
    claim = parse_claim("- Line 13 (off-by-one): `len( recent )<=MAX_UPLOADS` — one too many")
    assert (claim.line, claim.category) == (13, "off-by-one")
    assert check_claim(claim, START, END, SEGMENT_LINES) is None
    assert normalise(" a +\tb\n") == "a+b"


def test_evidence_failures_name_the_defect() -> None:
    outside = check_claim(parse_claim("- Line 3: `import time` x"), START, END, SEGMENT_LINES)
    elsewhere = check_claim(parse_claim("- Line 11: `<= MAX` x"), START, END, SEGMENT_LINES)
    tiny = check_claim(parse_claim("- Line 13: `(` x"), START, END, SEGMENT_LINES)
    assert outside is not None
    assert (outside.rule, outside.message) == (
        "defect_citation",
        "Defect '- Line 3: `import time` x' cites a line outside 7-13.",
    )
    assert elsewhere is not None
    assert elsewhere.rule == "defect_quote"
    assert "line 11 reads `now = time.time() if now is None else now`" in (elsewhere.message)
    assert tiny is not None
    assert tiny.rule == "defect_quote"


def test_a_quote_in_backticks_or_run_on_to_the_next_line_is_found() -> None:
    """The JSON quote field as Qwen2.5-Coder 1.5B fills it: wrapped in backticks, or a whole
    statement across its line breaks (both failed the check before and cost a repair turn)."""
    ticked = parse_claim("- Line 13 (off-by-one): `` `len(recent) <= MAX_UPLOADS` `` x")
    run_on = parse_claim(
        "- Line 12 (other): `recent = [t for t in history if now - t < "
        "WINDOW_S] return len(recent)` x"
    )
    late_start = parse_claim("- Line 12 (other): `return len(recent)` x")
    assert check_claim(ticked, START, END, SEGMENT_LINES) is None
    assert quote_line(run_on, START, END, SEGMENT_LINES) == 12
    assert quote_line(late_start, START, END, SEGMENT_LINES) == 13  # the neighbour, below
    two_off = parse_claim("- Line 11 (other): `return len(recent)` x")
    assert quote_line(two_off, START, END, SEGMENT_LINES) is None
    ranged = parse_claim("- Lines 10-11 (other): `return len(recent)` x")
    assert quote_line(ranged, START, END, SEGMENT_LINES) is None  # ranges are not widened


def test_a_one_line_citation_moves_to_the_neighbouring_line_its_quote_is_on() -> None:
    bodies = {
        "verified_defects": "- Line 12 (off-by-one): `len(recent) <= MAX_UPLOADS` one too many",
        "non_blocking_risks": "None",
        "verdict": "FIX",
    }
    kept, dropped = keep_verified(bodies, START, END, SEGMENT_LINES)
    assert dropped == 0
    assert kept["verified_defects"] == (
        "- Line 13 (off-by-one): `len(recent) <= MAX_UPLOADS` one too many"
    )
    assert kept["verdict"] == "FIX"
    exact = {**bodies, "verified_defects": "* Line 13: `<=`   as written"}
    assert keep_verified(exact, START, END, SEGMENT_LINES) == (exact, 0)


def test_a_markdown_defect_without_a_quote_is_checked_by_its_line_only() -> None:
    claim = parse_claim("- Line 13: the comparison admits one upload too many")
    assert claim.quote is None
    assert check_claim(claim, START, END, SEGMENT_LINES) is None


def test_code_in_the_quote_is_not_a_citation() -> None:
    claim = parse_claim("- Line 12 (bounds): `L2 = lines 3` — x")
    assert claim.cited == ((12, 12),)


def test_keep_verified_drops_with_a_note_and_the_contracts_verdict() -> None:
    bodies = {
        "verified_defects": "- Line 13: `<=` admits one more\n- Line 40: SECRET",
        "non_blocking_risks": "None",
        "verdict": "FIX",
    }
    kept, dropped = keep_verified(bodies, START, END, SEGMENT_LINES)
    assert dropped == 1
    assert kept["verified_defects"] == "- Line 13: `<=` admits one more"
    assert kept["verdict"] == "FIX"
    assert "SECRET" not in json.dumps(kept)
    none_left, _ = keep_verified(
        {**bodies, "verified_defects": "- Line 40: SECRET"}, START, END, SEGMENT_LINES
    )
    assert (none_left["verified_defects"], none_left["verdict"]) == ("None", "GO_WITH_NOTES")
    assert none_left["non_blocking_risks"].startswith("- triage-bot dropped 1 claimed defect")
    assert verdict_after_drop("FIX", defects_left=True) == "FIX"
    assert verdict_after_drop("GO", defects_left=False) == "GO"


# --- the property: whatever the model replies, no unverifiable defect is stored or posted ------

QUOTES = st.one_of(
    st.sampled_from([line.strip() for line in FILE if line.strip()]),  # real code, maybe elsewhere
    st.sampled_from(["<=", "now - t", "len(recent)", "(", "history.clear()", "x", "`a`"]),
    st.text(alphabet="ab()<=+ `_", min_size=1, max_size=12),
)
DEFECT = st.fixed_dictionaries(
    {
        "line": st.integers(1, 20),
        "quote": QUOTES.filter(lambda q: q.strip() != ""),
        "category": st.sampled_from(CATEGORIES),
    }
)


def _verifiable(line: int, quote: str) -> bool:
    """The rule, written out independently of bot.audit.evidence (the test oracle): the quote,
    whitespace and the backticks at its ends removed, starts on the cited line or a neighbour
    inside the segment, and may run on into the lines after it."""
    if not START <= line <= END:
        return False
    wanted = "".join(quote.split()).strip("`")
    if len(wanted) < 2:
        return False
    for at in (line, line - 1, line + 1):
        if START <= at <= END:
            own = "".join(FILE[at - 1].split())
            rest = "".join("".join(FILE[at - 1 : END]).split())
            if any(rest.startswith(wanted, k) for k in range(len(own))):
                return True
    return False


def _run(replies: list[str], fmt: str) -> tuple[list[dict[str, Any]], str]:
    """Audit the PR with the replies; return the stored rows and every text posted."""
    github = FakeGitHub(
        files={2: [ChangedFile("src/limits.py", "modified", PATCH)]},
        contents={"src/limits.py": list(FILE)},
    )
    model = FakeChatModel().enqueue(*replies)
    auditor = Auditor(model, AUDITOR_OPTIONS, fmt=fmt)  # type: ignore[arg-type]
    plan = plan_audit(PULL, github, auditor, audit_format=fmt, review_comments=True)
    store = Store(":memory:")
    apply_audit(plan, github, store)
    rows = store.audits("o/r")
    posted = [c.body for c in github.comments[2]]
    posted += [body for _, body, _ in github.reviews[2]]
    posted += [c.body for _, _, comments in github.reviews[2] for c in comments]
    return rows, "\n".join(posted)


def _assert_only_verified(rows: list[dict[str, Any]], posted: str, claims: list[Any]) -> None:
    for number, (line, quote) in enumerate(claims):
        marker = f"CLAIMQ{number}Z"
        if not _verifiable(line, quote):
            assert marker not in posted
            assert all(marker not in row["markdown"] for row in rows)
    for row in rows:  # and every stored defect passes the check, read back from the row
        _, found = split_sections(row["markdown"])
        body = {key: "\n".join(lines) for key, _, lines in found}["verified_defects"]
        if body.strip() != "None":
            for item in defect_items(body):
                assert check_claim(parse_claim(item), START, END, SEGMENT_LINES) is None


@FUZZ
@given(st.lists(DEFECT, min_size=1, max_size=4), st.lists(DEFECT, max_size=4))
def test_json_replies_store_and_post_only_verified_defects(
    first: list[dict[str, Any]], second: list[dict[str, Any]]
) -> None:
    def reply(defects: list[dict[str, Any]], offset: int) -> str:
        listed = [{**d, "failure": f"CLAIMQ{offset + i}Z breaks"} for i, d in enumerate(defects)]
        return json.dumps(
            {
                "bottom_line": "allowed() counts recent uploads.",
                "verified_defects": listed,
                "non_blocking_risks": [],
                "assumptions": [],
                "future_improvements": [],
                "verdict": "FIX" if defects else "GO",
                "confidence": "Medium",
            }
        )

    rows, posted = _run([reply(first, 0), reply(second, len(first))], "json")
    claims = [(d["line"], d["quote"]) for d in first + second]
    _assert_only_verified(rows, posted, claims)


@FUZZ
@given(st.lists(DEFECT.filter(lambda d: "`" not in d["quote"]), min_size=1, max_size=4))
def test_markdown_replies_store_and_post_only_verified_defects(
    defects: list[dict[str, Any]],
) -> None:
    items = [f"- Line {d['line']}: `{d['quote']}` CLAIMQ{i}Z breaks" for i, d in enumerate(defects)]
    text = (
        "## 1. Bottom line\nallowed() counts recent uploads.\n\n## 2. Verified defects\n"
        + "\n".join(items)
        + "\n\n## 3. Non-blocking risks\nNone\n\n## 4. Assumptions\nNone\n\n"
        "## 5. Future improvements\nNone\n\n## 6. Verdict\nFIX\n\n## 7. Confidence\nLow\n"
    )
    rows, posted = _run([text, text], "markdown")
    claims = [(d["line"], d["quote"]) for d in defects]
    _assert_only_verified(rows, posted, claims)


def test_the_docs_list_every_category_of_the_contract() -> None:
    from tests.support import user_docs

    readme = " ".join(user_docs().split())
    assert ", ".join(f"`{c}`" for c in CATEGORIES) in readme
