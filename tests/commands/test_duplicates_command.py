"""``/duplicates`` end to end over the fake GitHub and each store: the earlier issues listed,
what GitHub says is gone or locked left out, a dismissal recorded once, no model built."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.chat import ChatModel, ModelRole
from bot.clients.github_port import IssueState
from bot.commands.comment import run_comment
from bot.commands.duplicate_commands import EPHEMERAL_REPLY, duplicates_reply
from bot.config import Settings
from bot.context import JobContext, TitleEncoderLoader
from bot.duplicates.rank import Candidate
from bot.duplicates.suggestions import suggestion
from bot.duplicates.title_stage import VECTOR_MODEL
from bot.events import IssueCommentEvent, route_event
from bot.factory import make_store
from bot.gate.possible_duplicates import index_row
from bot.history.protocol import HistoryStore
from bot.run_report import RunReport
from tests.support import load_webhook
from tests.support.fake_github import FakeGitHub
from tests.support.markdown_oracle import render
from tests.support.profiles import FUZZ
from tests.support.title_encoder import WordHash

REPO = "Codertocat/Hello-World"
AUTHOR = "Codertocat"  # the commenter in issue_comment.created.0
CREATED = datetime(2019, 5, 15, 15, 20, 17, tzinfo=UTC)  # when that payload's issue was opened
TITLE = "Crash when saving a file with a unicode name"
BODY = "Saving a file named é.txt crashes the editor with a UnicodeEncodeError."
HOSTILE = "@octocat <img src=x onerror=alert(1)> [x](http://e.vil) #999 `a` **b** | crash saving"

EARLIER = {
    11: ("Crash when saving a file with a unicode name", BODY),
    12: ("Editor crashes saving unicode file names", "UnicodeEncodeError when saving é.txt"),
    13: ("Saving a unicode file crashes", "deleted since"),
    14: ("Unicode name crash when saving", "transferred since"),
    15: ("Crash saving a file named with unicode", "locked since"),
    16: ("Dark mode colours are off", "the sidebar is too bright"),
}
STATES = {
    11: IssueState(11, "OPEN", False, REPO),
    12: IssueState(12, "CLOSED", False, REPO, "COMPLETED"),
    14: IssueState(14, "OPEN", False, "Codertocat/Elsewhere"),  # answered from its new home
    15: IssueState(15, "OPEN", True, REPO),
    16: IssueState(16, "OPEN", False, REPO),
}  # 13 is deleted: GitHub no longer answers it


def _no_model(settings: Settings, role: ModelRole) -> ChatModel:
    raise AssertionError("/duplicates makes no model call")


def _event(body: str, *, login: str = AUTHOR, labels: tuple[str, ...] = ()) -> IssueCommentEvent:
    payload = load_webhook("issue_comment.created.0")
    payload["comment"]["body"] = body
    payload["comment"]["user"]["login"] = login
    payload["issue"]["title"], payload["issue"]["body"] = TITLE, BODY
    payload["issue"]["labels"] = [{"name": name} for name in labels]
    event = route_event("issue_comment", payload)
    assert isinstance(event, IssueCommentEvent)
    return event


def _settings(target: str, **kw: Any) -> Settings:
    base = Settings(github_token="t", bot_login="github-actions[bot]", db_path=target)
    return replace(base, **kw)


def _comment(
    github: FakeGitHub,
    settings: Settings,
    event: IssueCommentEvent,
    titles: TitleEncoderLoader | None = None,
) -> RunReport:
    with JobContext.build(
        settings,
        make_github=lambda s, **k: github,
        make_store=make_store,
        make_model=_no_model,
        model_concurrency=lambda s: 1,
        load_titles=titles,
    ) as job:
        return run_comment(event, job)


def _reply(github: FakeGitHub, number: int = 1) -> str:
    (comment,) = github.bot_comments(number)
    return comment.body


def _store(target: str) -> HistoryStore:
    return make_store(_settings(target))


def _seed(target: str, issues: dict[int, tuple[str, str]]) -> None:
    store = _store(target)
    try:
        rows = [
            index_row(n, title, body, CREATED - timedelta(days=100 - n))
            for n, (title, body) in issues.items()
        ]
        rows.append(index_row(40, TITLE, BODY, CREATED + timedelta(days=1)))  # a later one
        store.index_issues(REPO, rows)
    finally:
        store.close()


@pytest.fixture
def github() -> FakeGitHub:
    return FakeGitHub(permissions={AUTHOR: "admin", "octocat": "write"}, issue_states_now=STATES)


def test_the_earlier_issues_still_on_github_are_listed_best_first(
    github: FakeGitHub, store_target: str
) -> None:
    _seed(store_target, EARLIER)
    _comment(github, _settings(store_target), _event("/duplicates"))
    reply = _reply(github)
    listed = [line.split()[1] for line in reply.splitlines() if line.startswith("- ")]
    assert listed == ["#11", "#12"]  # #16 shares no word with this issue
    assert "(score 1.00)" in reply.splitlines()[2]  # #11 has the same title and body
    assert "3 more left out" in reply  # #13, #14, #15
    assert "#40" not in reply  # created after this issue
    # one state read for the candidates, the only GitHub request beyond the command's own
    assert github.requests == [
        "collaborator_permission",
        "add_reaction",
        "issue_states",
        "upsert_comment",
    ]
    store = _store(store_target)
    try:
        assert store.indexed_issue(REPO, 1) is not None  # the issue itself, from the payload
        assert store.indexed_issue(REPO, 13) is None  # deleted: dropped from the index
        assert store.indexed_issue(REPO, 14) is None  # transferred: dropped
        assert store.indexed_issue(REPO, 15) is not None  # locked: kept, only not named
    finally:
        store.close()


def test_with_the_title_model_the_titles_meaning_ranks_too_and_vectors_are_kept(
    github: FakeGitHub, store_target: str
) -> None:
    _seed(store_target, EARLIER)
    _comment(github, _settings(store_target), _event("/duplicates"))
    words = _reply(github)
    assert "the title model is not set up" in words
    github.comments.clear()
    _comment(github, _settings(store_target), _event("/duplicates"), lambda s: WordHash())
    staged = _reply(github)
    assert "with the titles' meaning" in staged
    listed = [line.split()[1] for line in staged.splitlines() if line.startswith("- ")]
    assert listed[:2] == ["#11", "#12"]  # the same title and body still ranks first
    assert staged != words  # the scores mix in the titles' cosine
    store = _store(store_target)
    try:
        assert 11 in store.title_vectors(REPO, VECTOR_MODEL, [11, 12])
    finally:
        store.close()


def test_a_deleted_transferred_or_locked_candidate_is_never_listed(
    github: FakeGitHub, store_target: str
) -> None:
    _seed(store_target, EARLIER)
    for _ in range(2):  # the second time the gone ones are no longer in the index at all
        github.comments.clear()
        _comment(github, _settings(store_target), _event("/duplicates"))
        reply = _reply(github)
        assert not {"#13", "#14", "#15"} & set(reply.replace("\u200b", "").split())


def test_a_hostile_candidate_title_is_shown_as_text(github: FakeGitHub, store_target: str) -> None:
    _seed(store_target, {11: (HOSTILE, BODY)})
    _comment(github, _settings(store_target), _event("/duplicates"))
    rendered = render(_reply(github))
    assert set(rendered.tags) <= {"p", "ul", "li", "code"}  # code: inert
    assert not rendered.attributes
    assert not rendered.mentions
    assert rendered.github_links == ["#11"]
    assert "@octocat <img src=x onerror=alert(1)>" in rendered.text.replace("\u200b", "")


def test_an_empty_index_says_how_to_fill_it(github: FakeGitHub, store_target: str) -> None:
    _comment(github, _settings(store_target), _event("/duplicates"))
    assert "`triage-bot index --repo OWNER/NAME`" in _reply(github)
    assert "issue_states" not in github.requests


def test_a_store_that_does_not_outlive_the_job_is_not_opened(
    github: FakeGitHub, tmp_path: Path
) -> None:
    def no_store(settings: Settings, *, read_only: bool) -> HistoryStore:
        raise AssertionError("an ephemeral store holds no index: it is not opened")

    settings = Settings(github_token="t", runner_environment="github-hosted")
    with JobContext.build(
        settings,
        make_github=lambda s, **k: github,
        make_store=no_store,
        make_model=_no_model,
        model_concurrency=lambda s: 1,
    ) as job:
        run_comment(_event("/duplicates"), job)
    assert _reply(github) == EPHEMERAL_REPLY
    assert "PostgreSQL" in EPHEMERAL_REPLY


def test_a_commenter_without_write_access_is_refused(store_target: str) -> None:
    github = FakeGitHub(permissions={AUTHOR: "read"}, issue_states_now=STATES)
    _seed(store_target, EARLIER)
    report = _comment(github, _settings(store_target), _event("/duplicates dismiss"))
    assert "refused" in report.text
    assert github.writes == []
    assert github.requests == ["collaborator_permission"]
    store = _store(store_target)
    try:
        assert suggestion(store, REPO, 1) is None
    finally:
        store.close()


def test_a_dismissal_is_recorded_once_and_listing_still_works(
    github: FakeGitHub, store_target: str
) -> None:
    _seed(store_target, EARLIER)
    _comment(github, _settings(store_target), _event("/duplicates dismiss"))
    assert "dismissed by @\u200bCodertocat" in _reply(github)
    github.comments.clear()
    _comment(github, _settings(store_target), _event("/duplicates dismiss", login="octocat"))
    assert "already dismissed by @\u200bCodertocat" in _reply(github)
    store = _store(store_target)
    try:
        mark = suggestion(store, REPO, 1)
        assert mark is not None
        assert (mark.dismissed, mark.dismissed_by) == (True, AUTHOR)
    finally:
        store.close()
    github.comments.clear()
    _comment(github, _settings(store_target), _event("/duplicates"))
    reply = _reply(github)
    assert reply.startswith("Possible duplicates:")
    assert reply.endswith("dismissed by @\u200bCodertocat: the bot does not suggest them.")
    assert not render(reply).mentions
    # each command replied once, and no label was touched (the issue carries none)
    assert [w[0] for w in github.writes].count("create_comment") == 3
    assert "remove_label" not in github.requests


def test_dismiss_removes_the_repository_files_duplicate_label_from_the_issue(
    github: FakeGitHub, store_target: str
) -> None:
    # a stand-in for the repository file's ``duplicates.label`` key
    file = SimpleNamespace(duplicates=SimpleNamespace(label="possible-duplicate"))
    settings = _settings(store_target, repo_file=file)
    event = _event("/duplicates dismiss", labels=("bug", "Possible-Duplicate"))
    _comment(github, settings, event)
    assert ("remove_label", "1", "Possible-Duplicate") in github.writes
    assert [w[0] for w in github.writes].count("create_comment") == 1
    assert "Label Possible-Duplicate removed." in _reply(github).replace("\\", "")


def test_an_unrecorded_dismissal_leaves_the_label_for_a_person_to_remove(
    github: FakeGitHub, tmp_path: Path
) -> None:
    file = SimpleNamespace(duplicates=SimpleNamespace(label="possible-duplicate"))
    settings = _settings(str(tmp_path / "triage.db"), repo_file=file)
    event = _event("/duplicates dismiss", labels=("possible-duplicate",))
    with JobContext.build(
        settings,
        make_github=lambda s, **k: github,
        make_store=lambda s, **k: make_store(s, read_only=True),  # every write fails
        make_model=_no_model,
        model_concurrency=lambda s: 1,
    ) as job:
        run_comment(event, job)
    assert "remove_label" not in github.requests
    reply = _reply(github).replace("\\", "")
    assert reply.startswith("Possible-duplicate suggestions on this issue are not dismissed")
    assert "a person removing it dismisses them too" in reply


def test_a_dry_run_dismissal_says_the_label_stays(github: FakeGitHub, store_target: str) -> None:
    file = SimpleNamespace(duplicates=SimpleNamespace(label="possible-duplicate"))
    settings = _settings(store_target, repo_file=file, dry_run=True)
    report = _comment(
        github, settings, _event("/duplicates dismiss", labels=("possible-duplicate",))
    )
    assert github.writes == []
    assert "Dry run: nothing recorded." in report.text
    assert "not removed (dry run)" in report.text
    assert " removed." not in report.text


def test_dismiss_leaves_labels_alone_when_the_file_names_none(
    github: FakeGitHub, store_target: str
) -> None:
    event = _event("/duplicates dismiss", labels=("possible-duplicate",))
    _comment(github, _settings(store_target), event)
    assert "remove_label" not in github.requests


_TITLES = st.text(st.characters(blacklist_categories=("Cs",)), max_size=200)


@FUZZ
@given(st.lists(st.tuples(st.integers(1, 10**6), _TITLES), max_size=5), st.text(max_size=40))
def test_the_reply_renders_only_its_own_list_whatever_the_titles(
    found: list[tuple[int, str]], login: str
) -> None:
    candidates = [Candidate(n, title, 0.5) for n, title in found]
    reply = duplicates_reply(candidates, indexed=100, left_out=1, dismissed_by=login)
    rendered = render(reply)
    assert set(rendered.tags) <= {"p", "ul", "li", "code"}  # code: inert
    assert not rendered.attributes
    assert not rendered.mentions
    assert rendered.tags["li"] == len(candidates)
    assert rendered.github_links == [f"#{n}" for n, _ in found]


def test_a_title_model_failing_on_the_issue_lists_by_words(
    github: FakeGitHub, store_target: str
) -> None:
    class Failing:
        def encode(self, titles: Any) -> Any:
            raise ValueError("shapes (1,384) and (12,) not aligned")

    _seed(store_target, EARLIER)
    _comment(github, _settings(store_target), _event("/duplicates"), lambda s: Failing())
    reply = _reply(github)
    assert "the title model is not set up, cannot be loaded or failed" in reply
    assert [line.split()[1] for line in reply.splitlines() if line.startswith("- ")] == [
        "#11",
        "#12",
    ]
