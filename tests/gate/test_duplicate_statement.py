"""The gate's "possibly the same as #N" (bot.gate.possible_duplicates.earned), through the runner
on the fake GitHub and a real store: said only when the repository's measured statement earns
it, never after a dismissal or a person's removal of the label, never naming an issue GitHub no
longer has; its section in the one author comment, its label in the gate label's write, the
suggestion recorded; a dry run writes nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot import runner
from bot.clients.github_port import IssueState, LabelEvent
from bot.config import Settings
from bot.duplicates.rank import Candidate
from bot.duplicates.suggestions import (
    Suggestion,
    dismiss,
    record_ranking,
    settle_suggestion,
    suggestion,
)
from bot.factory import make_store
from bot.gate.author_comment import duplicate_comment, duplicate_section
from bot.gate.possible_duplicates import (
    WORDS_ONLY,
    DuplicatesPlan,
    StatementRecord,
    earned,
    index_row,
)
from bot.gate.types import AUTHOR_MARKER
from bot.repo_file import REPO_FILE_PATH, parse_repo_file
from bot.run_report import RunReport
from tests.support import FakeChatModel, load_webhook, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.markdown_oracle import render
from tests.support.profiles import FUZZ
from tests.support.replies import COMPLETE_BODY, NEEDS_REPLY, VALID_REPLY
from tests.support.title_encoder import WordHash

REPO = "Codertocat/Hello-World"
BOT = "github-actions[bot]"
LABEL = "possible-duplicate"
MEASURED = "  statement: {threshold: 0.3, right: 95, made: 100}\n"
"""A statement whose lower limit (about 91%) clears the default bound, 80%."""
TITLE = "Saving a file with a unicode name crashes the editor"
BODY = "When I save a file named café.txt the editor crashes with a UnicodeEncodeError."
SHORT_BODY = "The app crashes when I click save."


@pytest.fixture(autouse=True)
def _title_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs rank with a stand-in title model: a statement is said only with one."""
    monkeypatch.setattr(runner, "load_titles", lambda settings: WordHash())


def _file(statement: str | None = MEASURED, label: str | None = LABEL) -> str:
    text = "duplicates:\n"
    text += f"  label: {label}\n" if label else ""
    text += statement or ""
    return text if (label or statement) else ""


def _payload(
    action: str = "opened", labels: tuple[str, ...] = (), body: str = COMPLETE_BODY
) -> dict[str, Any]:
    payload = load_webhook("issues.opened.18")  # repository.default_branch: master
    payload["action"] = action
    if action == "edited":
        payload["changes"] = {"body": {"from": "an earlier body"}}
    payload["issue"].update(
        number=1,
        title=TITLE,
        body=f"{BODY}\n\n{body}",
        created_at="2025-06-01T00:00:00Z",
        labels=[{"name": n} for n in labels],
    )
    return payload


def _settings(tmp_path: Path, db: str, payload: dict[str, Any], **kw: Any) -> Settings:
    base = Settings(
        github_token="t",  # never sent: the GitHub port is the fake
        event_name="issues",
        event_path=write_payload(tmp_path, payload),
        db_path=db,
        bot_login=BOT,
    )
    return replace(base, **kw)


def _seed(tmp_path: Path, db: str, *issues: tuple[int, str, str]) -> None:
    """Earlier issues in the store's index, and GitHub has each as an open issue."""
    store = make_store(_settings(tmp_path, db, _payload()))
    try:
        rows = [
            index_row(n, title, body, datetime(2025, 1, n, tzinfo=UTC)) for n, title, body in issues
        ]
        store.index_issues(REPO, rows)
    finally:
        store.close()


def _ranking(tmp_path: Path, db: str) -> Suggestion | None:
    store = make_store(_settings(tmp_path, db, _payload()))
    try:
        return suggestion(store, REPO, 1)
    finally:
        store.close()


def _suggestion(tmp_path: Path, db: str) -> Suggestion | None:
    """The issue's row when something was said or dismissed (every ranking keeps a row)."""
    found = _ranking(tmp_path, db)
    if found is None or (found.suggested_at is None and not found.dismissed):
        return None
    return found


def _open(github: FakeGitHub, *numbers: int) -> None:
    for n in numbers:
        github.issue_states_now[n] = IssueState(n, "OPEN", False, REPO)


def _run(tmp_path: Path, db: str, github: FakeGitHub, file: str, **kw: Any) -> RunReport:
    github.repo_files[("master", REPO_FILE_PATH)] = file
    payload = kw.pop("payload", None) or _payload()
    return runner.run_event(_settings(tmp_path, db, payload, **kw))


def _label_writes(github: FakeGitHub) -> list[tuple[str, ...]]:
    return [w for w in github.writes if w[0] == "add_labels"]


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "triage.db")


EARLIER = (7, "Editor crashes saving a unicode file name", BODY)
OTHER = (3, "Dark mode for the settings page", "Please add a dark theme to settings.")


# --- the rule ---------------------------------------------------------------------------------
PLAN = DuplicatesPlan((Candidate(7, "t", 0.6), Candidate(9, "u", 0.5)), size=10)
CONFIG = parse_repo_file(_file()).duplicates


@pytest.mark.parametrize(
    ("plan", "statement", "bound", "why"),
    [
        (PLAN, None, 0.8, "not said: no measured statement in the repository file"),
        (DuplicatesPlan(size=10), MEASURED, 0.8, "not said: no candidate"),
        (
            PLAN,
            "  statement: {threshold: 0.61, right: 95, made: 100}\n",
            0.8,
            "not said: #7 scores below the statement's 0.61",
        ),
        (  # 9 of 10 is 90%, but its lower limit is not
            PLAN,
            "  statement: {threshold: 0.3, right: 9, made: 10}\n",
            0.8,
            "not said: the repository file's measurement (9/10 right, lower limit 72%) is "
            "below 80%",
        ),
    ],
)
def test_the_statement_is_unsaid_without_a_measurement_that_earns_it(
    plan: DuplicatesPlan, statement: str | None, bound: float, why: str
) -> None:
    config = parse_repo_file(_file(statement)).duplicates
    asked: list[bool] = []
    assert earned(plan, config, bound, dismissed=lambda: asked.append(True) or None) == (None, why)
    assert not asked  # the dismissal (a store read, maybe a GitHub read) is asked last


def test_the_top_candidate_is_said_when_earned_unless_dismissed() -> None:
    top, why = earned(PLAN, CONFIG, 0.8)
    assert top == PLAN.candidates[0]
    assert why.startswith("said: possibly the same as #7 (the repository file's measurement")
    assert earned(PLAN, CONFIG, 0.8, dismissed=lambda: "dismissed by octocat") == (
        None,
        "not said: dismissed by octocat",
    )
    assert earned(PLAN, CONFIG, 0.92)[0] is None  # the lower limit, about 91%, decides


def test_a_record_given_takes_over_from_the_file() -> None:
    """The seam a live record uses: the figure passed in decides, not the file's."""
    live = StatementRecord(0.7, 300, 310, "the live record")
    assert earned(PLAN, CONFIG, 0.8, record=live)[1] == (
        "not said: #7 scores below the statement's 0.70"
    )
    assert earned(PLAN, None, 0.8, record=replace(live, threshold=0.5))[0] == PLAN.candidates[0]


# --- through the runner -----------------------------------------------------------------------
def test_earned_the_comment_names_it_the_label_rides_the_gate_write_and_it_is_recorded(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, store_target: str
) -> None:
    _seed(tmp_path, store_target, EARLIER, OTHER)
    _open(github, 7, 3)
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, store_target, github, _file())
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev", LABEL)]
    assert github.requests.count("issue_states") == 1
    (comment,) = github.bot_comments(1)
    assert comment.body == duplicate_comment(7, EARLIER[1])
    assert "Possibly the same as #7" in render(comment.body).text
    assert "said: possibly the same as #7" in report.text
    assert f"+ready-for-dev  +{LABEL}" in report.text
    shown = render(report.summary).text.replace("\u200b", "")  # a reference made inert
    assert "said: possibly the same as #7" in shown
    found = _suggestion(tmp_path, store_target)
    assert found is not None
    assert found.candidates == (7,)
    assert not found.dismissed
    assert github.writes.count(("close_issue", "1")) == 0


def test_on_needs_refinement_it_is_a_section_of_the_one_comment(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, db: str
) -> None:
    _seed(tmp_path, db, EARLIER)
    _open(github, 7)
    model.enqueue(NEEDS_REPLY, NEEDS_REPLY)
    payload = _payload(body=SHORT_BODY)
    _run(tmp_path, db, github, _file(), payload=payload, comment_min_precision=0.0)
    (comment,) = github.bot_comments(1)
    assert comment.body.startswith(AUTHOR_MARKER)
    assert "it needs a little more" in comment.body
    assert comment.body.endswith(duplicate_section(7, EARLIER[1]))
    assert _label_writes(github) == [("add_labels", "1", "needs-refinement", LABEL)]
    # an edit: the same comment edited in place, still one, the label not added again
    github.issue_labels[1] = ["needs-refinement", LABEL]
    edited = _payload("edited", ("needs-refinement", LABEL), body=SHORT_BODY + " Really.")
    _run(tmp_path, db, github, _file(), payload=edited, comment_min_precision=0.0)
    (comment,) = github.bot_comments(1)
    assert comment.body.endswith(duplicate_section(7, EARLIER[1]))
    assert _label_writes(github) == [("add_labels", "1", "needs-refinement", LABEL)]


NO_STATEMENT = (
    "not said: no measured statement in the repository file, and the live record holds 0 of "
    "the 30 settled rankings it decides from"
)


@pytest.mark.parametrize(
    ("file", "why"),
    [
        ("", NO_STATEMENT),
        (_file(statement=None), NO_STATEMENT),
        (
            _file("  statement: {threshold: 0.99, right: 95, made: 100}\n"),
            "not said: #7 scores below the statement's 0.99",
        ),
    ],
)
def test_unearned_nothing_is_said_and_the_plan_says_why(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, db: str, file: str, why: str
) -> None:
    _seed(tmp_path, db, EARLIER)
    _open(github, 7)
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, db, github, file)
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev")]
    assert github.bot_comments(1) == []
    assert github.requests.count("issue_states") == 1  # the listing's, nothing more
    assert "duplicates: #7 " in report.text
    assert f"({why})" in report.text
    assert _suggestion(tmp_path, db) is None
    ranked = _ranking(tmp_path, db)  # unsaid, the ranking is kept for settling
    assert ranked is not None
    assert (ranked.top, ranked.outcome) == (7, None)


def test_without_the_title_model_it_lists_by_words_and_says_and_records_nothing(
    tmp_path: Path,
    github: FakeGitHub,
    model: FakeChatModel,
    db: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The measured statement is of the score with the title stage: a words-only score cannot
    earn it, and a words-only ranking does not enter the live record."""
    monkeypatch.setattr(runner, "load_titles", None)
    _seed(tmp_path, db, EARLIER)
    _open(github, 7)
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, db, github, _file())
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev")]
    assert github.bot_comments(1) == []
    assert "duplicates: #7 " in report.text
    said = "not said: a statement is measured with the title model"
    assert f"({WORDS_ONLY}: no title model in this job) ({said})" in report.text
    assert _ranking(tmp_path, db) is None


def test_a_dismissed_issue_is_not_suggested_again_on_an_edit(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, store_target: str
) -> None:
    _seed(tmp_path, store_target, EARLIER)
    _open(github, 7)
    store = make_store(_settings(tmp_path, store_target, _payload()))
    try:
        dismiss(store, REPO, 1, "octocat")
    finally:
        store.close()
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, store_target, github, _file(), payload=_payload("edited"))
    assert "(not said: dismissed by octocat)" in report.text
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev")]
    assert github.bot_comments(1) == []


def test_a_person_removing_the_label_dismisses_and_later_edits_stay_quiet(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, store_target: str
) -> None:
    _seed(tmp_path, store_target, EARLIER)
    _open(github, 7)
    model.enqueue(VALID_REPLY, VALID_REPLY, VALID_REPLY)
    _run(tmp_path, store_target, github, _file())
    assert _label_writes(github)[-1] == ("add_labels", "1", "ready-for-dev", LABEL)
    github.unlabel_by_hand(1, LABEL, login="maintainer")
    edited = _payload("edited", ("ready-for-dev",), body=COMPLETE_BODY + " More.")
    report = _run(tmp_path, store_target, github, _file(), payload=edited)
    assert "(not said: maintainer removed the possible-duplicate label)" in report.text
    found = _suggestion(tmp_path, store_target)
    assert found is not None
    assert found.dismissed_by == "maintainer"
    github.events[1].clear()  # the recorded dismissal alone keeps it quiet
    again = _payload("edited", ("ready-for-dev",), body=COMPLETE_BODY + " Even more.")
    report = _run(tmp_path, store_target, github, _file(), payload=again)
    assert "(not said: dismissed by maintainer)" in report.text
    assert len(_label_writes(github)) == 1


def test_a_candidate_github_no_longer_has_is_never_suggested(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, db: str
) -> None:
    similar = (8, "The editor crashes when saving unicode file names", BODY + " Same here.")
    _seed(tmp_path, db, EARLIER, similar)
    _open(github, 8)  # #7 is gone: deleted or transferred
    github.issue_states_now[8] = IssueState(8, "OPEN", True, REPO)  # and #8 locked
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, db, github, _file())
    assert "#7 " not in report.text.split("duplicates:", 1)[1]
    assert "(#7, #8 gone or locked)" in report.text
    assert "said: possibly" not in report.text
    assert github.bot_comments(1) == []
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev")]
    assert _suggestion(tmp_path, db) is None


def test_a_candidate_gone_leaves_the_next_one_that_earns_it(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, db: str
) -> None:
    similar = (8, "The editor crashes when saving unicode file names", BODY + " Same here.")
    _seed(tmp_path, db, EARLIER, similar)
    _open(github, 8)
    model.enqueue(VALID_REPLY)
    _run(tmp_path, db, github, _file())
    (comment,) = github.bot_comments(1)
    assert "#8" in comment.body
    assert "#7" not in comment.body
    found = _suggestion(tmp_path, db)
    assert found is not None
    assert found.candidates == (8,)


def test_a_dry_run_plans_it_and_writes_nothing(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, db: str
) -> None:
    # a dry run indexes nothing: the issue is there from an earlier run
    _seed(tmp_path, db, EARLIER, OTHER, (1, TITLE, f"{BODY}\n\n{COMPLETE_BODY}"))
    _open(github, 7)
    github.events[1].append(LabelEvent(LABEL, "maintainer", "User", removed=True))
    model.enqueue(VALID_REPLY, VALID_REPLY)
    report = _run(tmp_path, db, github, _file(), payload=_payload("edited"), dry_run=True)
    assert "(not said: maintainer removed the possible-duplicate label)" in report.text
    assert _suggestion(tmp_path, db) is None  # the dismissal is not recorded either
    github.events[1].clear()
    report = _run(tmp_path, db, github, _file(), dry_run=True)
    assert "said: possibly the same as #7" in report.text
    assert f"+{LABEL}" in report.text
    assert "Possibly the same as #7" in report.text  # the comment as it would be posted
    assert github.writes == []
    assert _suggestion(tmp_path, db) is None


# --- the section's markdown -------------------------------------------------------------------
PIECES = [
    *"<>!@[]()`\\-*_~|#$:.&\n\r\t ", "img src=//evil/p.png", "</details>", "<!-- x -->",
    "@org/team", "```", "~~~", "::error::x", "#12", "GH-1", ":rocket:", "deadbeefcafe",
    AUTHOR_MARKER, "- ", "1. ", "> ", "# ", "|---|", "http://evil.example", "\u2028",
]  # fmt: skip
HOSTILE = st.lists(st.sampled_from(PIECES), max_size=20).map("".join)


@FUZZ
@given(st.integers(1, 10**7), HOSTILE)
def test_another_issues_title_renders_only_as_code(number: int, title: str) -> None:
    body = duplicate_comment(number, title)
    rendered = render(body)
    assert set(rendered.tags) <= {"h3", "h4", "p", "code"}, set(rendered.tags)
    assert not rendered.attributes
    assert not rendered.mentions
    assert rendered.github_links == [f"#{number}"]  # the one reference is the bot's
    assert rendered.comments == [AUTHOR_MARKER.removeprefix("<!--").removesuffix("-->")]
    assert rendered.tags["code"] == 1


# --- the live record --------------------------------------------------------------------------
def _settled(tmp_path: Path, db: str, outcomes: Sequence[tuple[float, str]]) -> None:
    store = make_store(_settings(tmp_path, db, _payload()))
    try:
        for n, (score, outcome) in enumerate(outcomes, start=100):
            record_ranking(store, REPO, n, n + 1000, score)
            settle_suggestion(store, REPO, n, outcome)
    finally:
        store.close()


def test_the_live_record_earns_the_statement_without_a_measurement_in_the_file(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, db: str
) -> None:
    _seed(tmp_path, db, EARLIER)
    _settled(tmp_path, db, [(0.5 + n / 100, "right") for n in range(40)])
    _open(github, 7)
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, db, github, _file(statement=None))
    assert "said: possibly the same as #7 (the live record (40 settled rankings)" in report.text
    (comment,) = github.bot_comments(1)
    assert "#7" in comment.body


def test_a_live_record_that_earns_nothing_overrides_the_files_measurement(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, db: str
) -> None:
    _seed(tmp_path, db, EARLIER)
    _settled(tmp_path, db, [(0.9, "wrong")] * 20 + [(0.9, "right")] * 15)
    _open(github, 7)
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, db, github, _file())
    assert "not said: the live record (35 settled rankings) earns no threshold" in report.text
    assert github.bot_comments(1) == []
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev")]


def test_under_thirty_settled_the_files_measurement_still_decides(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, db: str
) -> None:
    _seed(tmp_path, db, EARLIER)
    _settled(tmp_path, db, [(0.9, "wrong")] * 29)
    _open(github, 7)
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, db, github, _file())
    assert "said: possibly the same as #7 (the repository file's measurement" in report.text


def test_with_no_comment_and_no_label_it_is_not_said_asked_or_recorded(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, db: str
) -> None:
    _seed(tmp_path, db, EARLIER)
    _open(github, 7)
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, db, github, _file(label=None), author_comment=False)
    assert github.bot_comments(1) == []
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev")]
    assert github.requests.count("issue_states") == 1  # the listing's, nothing more
    why = "not said: author-comment is off and the repository file sets no duplicates.label"
    assert f"({why})" in report.text
    assert "said: possibly" not in render(report.summary).text
    assert _suggestion(tmp_path, db) is None


def test_with_the_comment_off_the_label_alone_says_it(
    tmp_path: Path, github: FakeGitHub, model: FakeChatModel, db: str
) -> None:
    _seed(tmp_path, db, EARLIER)
    _open(github, 7)
    model.enqueue(VALID_REPLY)
    report = _run(tmp_path, db, github, _file(), author_comment=False)
    assert github.bot_comments(1) == []
    assert _label_writes(github) == [("add_labels", "1", "ready-for-dev", LABEL)]
    assert "said: possibly the same as #7" in report.text
    found = _suggestion(tmp_path, db)
    assert found is not None
    assert found.candidates == (7,)
