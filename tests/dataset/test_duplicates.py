"""``triage-bot dataset --duplicates``: GitHub's "Duplicate of #N" read as GitHub reads it, each
rule of a pair and each way one is left out, on the loopback GitHub of
tests/support/dataset_server.py (tests/support/duplicate_world.py) and on its recorded traffic
(cassettes/dataset_duplicates.yaml): the pool, the pairs, what a run costs, and a stopped run
resumed."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from bot.cli import main
from bot.clients.github_client import PyGithubClient
from bot.clients.github_port import DuplicateMark, TimelineItem
from bot.clients.issue_history import parse_duplicate_marks
from bot.dataset.duplicate_run import DuplicatesProgress, run_duplicates
from bot.dataset.duplicates import (
    PAIRS_FILE,
    POOL_FILE,
    FoundPair,
    NoPair,
    PairRow,
    PoolRow,
    canonical_of,
    duplicate_of,
)
from bot.dataset.files import row_id
from tests.support import cassette
from tests.support.dataset_server import LoopbackGitHub
from tests.support.dataset_world import REPO
from tests.support.duplicate_world import PAIRS, marked, unmarked, world

TOKEN = "test-token-not-real"


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ("Duplicate of #12", (None, 12)),
        ("duplicate of #12", (None, 12)),
        ("DUPLICATE OF   #12  \nthanks!", (None, 12)),
        ("\nDuplicate of #12", (None, 12)),
        ("Duplicate of octo/repo#7", ("octo/repo", 7)),
        ("Duplicate of https://github.com/octo/repo/issues/7", ("octo/repo", 7)),
        ("Duplicate of #12.", None),  # the whole first line, as GitHub reads it
        ("Likely a duplicate of #12", None),
        ("Duplicate of #12?", None),
        ("Thanks!\nDuplicate of #12", None),
        ("Duplicate of 12", None),
        ("", None),
        (None, None),
    ],
)
def test_a_comment_marks_a_duplicate_only_as_githubs_own_convention_reads(
    body: str | None, named: tuple[str | None, int] | None
) -> None:
    assert duplicate_of(body) == named


@given(st.text())
def test_reading_a_comment_never_raises_and_names_a_number_on_its_first_line(text: str) -> None:
    named = duplicate_of(text)
    if named is not None:
        assert str(named[1]) in text.lstrip("\r\n").split("\n", 1)[0]


def _comment(body: str, association: str = "MEMBER") -> TimelineItem:
    return TimelineItem(
        "commented", None, actor="someone", author_association=association, body=body
    )


def _mark(number: int | None, *, repo: str | None = REPO, undone: bool = False) -> DuplicateMark:
    return DuplicateMark(datetime(2024, 3, 4, tzinfo=UTC), number, repo, undone=undone)


def test_the_mark_s_canonical_comes_before_any_comment() -> None:
    got = canonical_of(REPO, 9, [_comment("Duplicate of #2")], [_mark(3)])
    assert got == FoundPair(dup_of=3, basis="marked_as_duplicate")


def test_without_a_mark_the_last_maintainers_comment_names_it() -> None:
    timeline = [_comment("Duplicate of #2", "OWNER"), _comment("Duplicate of #4", "COLLABORATOR")]
    assert canonical_of(REPO, 9, timeline, []) == FoundPair(dup_of=4, basis="comment")


@pytest.mark.parametrize("association", ["NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR", None])
def test_a_comment_by_someone_without_write_access_names_nothing(association: str | None) -> None:
    comment = TimelineItem(
        "commented", None, author_association=association, body="Duplicate of #2"
    )
    assert canonical_of(REPO, 9, [comment], []) is NoPair.NONE_NAMED


def test_a_mark_taken_back_gives_no_pair_whatever_the_comments_say() -> None:
    marks = [_mark(3), _mark(3, undone=True)]
    assert canonical_of(REPO, 9, [_comment("Duplicate of #3")], marks) is NoPair.UNMARKED


def test_a_mark_without_its_canonical_falls_back_to_the_comments() -> None:
    got = canonical_of(REPO, 9, [_comment("Duplicate of #2")], [_mark(None, repo=None)])
    assert got == FoundPair(dup_of=2, basis="comment")


def test_the_repository_s_own_name_in_any_case_is_this_repository_and_itself_is_no_pair() -> None:
    named = canonical_of(REPO, 9, [_comment(f"Duplicate of {REPO.upper()}#2")], [])
    assert named == FoundPair(dup_of=2, basis="comment")
    assert canonical_of(REPO, 9, [_comment("Duplicate of #9")], []) is NoPair.ITSELF


def test_graphql_marks_are_read_oldest_first_with_their_canonical_s_kind_and_repository() -> None:
    at = datetime(2024, 3, 4, 9, tzinfo=UTC)
    answer = {
        "data": {
            "nodes": [
                {
                    "id": "I_1",
                    "timelineItems": {
                        "nodes": [
                            marked(at, 7, "octo/other", kind="PullRequest"),
                            {"__typename": "ClosedEvent", "createdAt": "2024-03-04T09:00:00Z"},
                            None,
                            unmarked(at, 7),
                        ]
                    },
                },
                None,  # an issue GitHub lost
                {"id": "I_3", "timelineItems": {"nodes": [{**marked(at, 2), "canonical": None}]}},
            ]
        }
    }
    found = parse_duplicate_marks(answer, what="read")
    assert found == {
        "I_1": (
            DuplicateMark(at, 7, "octo/other", canonical_is_pull=True),
            DuplicateMark(at, 7, REPO, undone=True),
        ),
        "I_3": (DuplicateMark(at, None, None),),
    }
    pair = canonical_of(REPO, 9, [], found["I_1"][:1])
    assert pair == FoundPair(dup_of=7, repo="octo/other", basis="marked_as_duplicate", pull=True)


def _pool(out: Path) -> dict[int, PoolRow]:
    lines = (out / POOL_FILE).read_text("utf-8").splitlines()
    rows = [PoolRow.model_validate_json(line) for line in lines]
    return {int(r.id.rsplit("-", 1)[1]): r for r in rows}


def _pairs(out: Path) -> dict[int, tuple[int, str]]:
    rows = [PairRow.model_validate_json(x) for x in (out / PAIRS_FILE).read_text().splitlines()]
    return {
        int(r.id.rsplit("-", 1)[1]): (int(r.dup_of.rsplit("-", 1)[1]), r.direction_basis)
        for r in rows
    }


def _expected_pairs() -> dict[int, tuple[int, str]]:
    return {n: pair for n, pair in PAIRS.items() if isinstance(pair, tuple)}


def _left_out() -> dict[NoPair, int]:
    reasons = [NoPair[p] for p in PAIRS.values() if isinstance(p, str) and p in NoPair.__members__]
    return {reason: reasons.count(reason) for reason in set(reasons)}


def test_the_pool_holds_every_issue_and_the_pairs_each_rule_gives(tmp_path: Path) -> None:
    out = tmp_path / "set"
    with LoopbackGitHub(world()) as github:
        client = PyGithubClient(token=TOKEN, base_url=github.base_url, sleep=lambda _: None)
        report = run_duplicates(client, REPO, out)
    pool = _pool(out)
    assert sorted(pool) == list(range(1, 11))  # 11 was transferred; pull requests are no issues
    assert pool[1] == PoolRow(
        id=row_id(REPO, 1),
        title="Export drops the last row",
        body="tool export --format csv loses a row",
        created_at="2024-03-04T10:00:00Z",
    )
    assert _pairs(out) == _expected_pairs() == {4: (3, "marked_as_duplicate"), 5: (1, "comment")}
    assert dict(report.progress.no_pair + report.left_out) == _left_out()
    # one list page, one GraphQL query for the page's candidates, a timeline per candidate
    assert dict(github.requests) == {"list": 1, "marks": 1, "timeline": 7}
    assert sorted(github.per_issue) == list(range(4, 11))
    text = "\n".join(report.lines())
    assert "10 issue(s) in" in text
    assert "2 pair(s) in" in text
    assert "1  no pair: its canonical issue is in another repository" in text
    assert "Next: triage-bot eval --only duplicates --pool" in text


def test_a_run_stopped_midway_resumes_without_reading_a_timeline_twice(tmp_path: Path) -> None:
    out = tmp_path / "set"

    def interrupt(progress: Any) -> None:
        if progress.rows >= 6:
            raise KeyboardInterrupt

    with LoopbackGitHub(world()) as github:
        client = PyGithubClient(token=TOKEN, base_url=github.base_url, sleep=lambda _: None)
        with pytest.raises(KeyboardInterrupt):
            run_duplicates(client, REPO, out, on_progress=interrupt)
        first = dict(github.per_issue)
        assert sorted(_pool(out)) == [5, 6, 7, 8, 9, 10]  # newest first
        assert _pairs(out) == {}  # 5's canonical, #1, is not in the pool yet
        resumed = run_duplicates(client, REPO, out)
        again = run_duplicates(client, REPO, out)
    assert sorted(_pool(out)) == list(range(1, 11))
    assert len((out / POOL_FILE).read_text().splitlines()) == 10  # no row twice
    assert _pairs(out) == _expected_pairs()
    second = {n: c - first.get(n, 0) for n, c in github.per_issue.items() if c > first.get(n, 0)}
    assert sorted(second) == [4]  # only the candidate not read before
    assert (resumed.progress.earlier, resumed.progress.read) == (7, 4)  # 11: transferred
    assert (again.progress.unchanged_pages, again.progress.read, again.pairs) == (1, 0, 2)


def test_an_out_that_is_a_file_is_refused_before_any_request(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    out.write_text("")
    with cassette("github_no_requests"):
        result = CliRunner().invoke(
            main,
            ["dataset", "--duplicates", "--repo", REPO, "--out", str(out)],
            env={"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": "https://api.github.com"},
        )
    assert result.exit_code == 2, result.output
    assert "not a folder" in result.output


@pytest.mark.parametrize("extra", [["--since", "2024-01-01"], ["--types"]])
def test_duplicates_take_no_since_or_types(tmp_path: Path, extra: list[str]) -> None:
    result = CliRunner().invoke(
        main,
        ["dataset", "--duplicates", "--repo", REPO, "--out", str(tmp_path / "d"), *extra],
        env={"GITHUB_TOKEN": TOKEN},
    )
    assert result.exit_code == 2, result.output
    assert "--duplicates takes no --since or --types" in result.output


def test_the_recorded_run_gives_the_pool_and_pairs(tmp_path: Path) -> None:
    out = tmp_path / "set"
    captured: list[Any] = []
    with cassette("dataset_duplicates", captured) as cass:
        result = CliRunner().invoke(
            main,
            ["dataset", "--duplicates", "--repo", REPO, "--out", str(out)],
            env={"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": "https://api.github.com"},
        )
    assert result.exit_code == 0, result.output
    assert cass.all_played
    assert sorted(_pool(out)) == list(range(1, 11))
    assert _pairs(out) == _expected_pairs()
    assert "1  no pair: its canonical is a pull request" in result.output
    assert "1  transferred to another repository since it was listed" in result.output
    graphql = [json.loads(r.body) for r in captured if r.path == "/graphql"]
    assert len(graphql) == 1
    assert "MarkedAsDuplicateEvent" in graphql[0]["query"]
    timelines = sorted(int(r.path.split("/")[-2]) for r in captured if r.path.endswith("timeline"))
    assert timelines == list(range(4, 11))


def test_ctrl_c_says_what_the_pool_holds_and_exits_130(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def stopped(*_: Any, on_progress: Any, **__: Any) -> None:
        on_progress(DuplicatesProgress(rows=3))
        raise KeyboardInterrupt

    monkeypatch.setattr("bot.runner.run_duplicates_dataset", stopped)
    result = CliRunner().invoke(
        main,
        ["dataset", "--duplicates", "--repo", REPO, "--out", str(tmp_path / "d")],
        env={"GITHUB_TOKEN": TOKEN},
    )
    assert result.exit_code == 130
    assert "interrupted; 3 issue(s) are in the pool in" in result.output
    assert "the same command resumes" in result.output
