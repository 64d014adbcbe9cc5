"""The dataset's pages on the loopback GitHub (tests/support/dataset_server.py), every request
counted:
``--limit`` asks nothing beyond what it needs, a list or a timeline whose ``next`` never ends
stops at a bound, at a page already read or at an empty page, and a ``next`` link off the API's
scheme, host or port is refused as a GitHubError, never followed."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.clients import github_client
from bot.clients.github_client import MAX_LIST_PAGES, MAX_TIMELINE_PAGES, PER_PAGE, PyGithubClient
from bot.dataset import run_dataset
from bot.dataset.files import state_path
from bot.errors import GitHubError
from bot.evaluation.sets import EvalIssue, load_jsonl
from bot.gate.labels import file_gate_labels
from bot.repo_file import parse_repo_file
from tests.support.dataset_server import LoopbackGitHub
from tests.support.dataset_world import REPO, REPO_FILE, Scenario, world

FILE = parse_repo_file(REPO_FILE)
CONFIG = FILE.dataset
GATE = file_gate_labels(FILE)
EARLY = {"BOT", "MAINTAINER", "LOCKED"}
"""Scenarios left out before their timeline is read."""

SECOND = re.escape(f"{REPO}#2")
"""The newest issue of a world of two, the first whose timeline is read."""

SAFETY = 400
"""The loopback server's request budget: a client that keeps following fails past it."""


def _client(github: LoopbackGitHub) -> PyGithubClient:
    return PyGithubClient(
        token="test-token-not-real", base_url=github.base_url, retries=0, backoff_s=0.0,
        seconds_between_writes=0.0, sleep=lambda _s: None,
    )  # fmt: skip


def _server(scenarios: list[Scenario], **faults: Any) -> LoopbackGitHub:
    github = LoopbackGitHub(scenarios)
    github.max_requests = SAFETY
    for name, value in faults.items():
        setattr(github, name, value)
    return github


def _timelines_for(scenarios: list[Scenario], limit: int) -> int:
    """Timelines a run must read to reach ``limit`` rows, newest issue first."""
    rows = read = 0
    for s in sorted(scenarios, key=lambda s: s.number, reverse=True):
        if rows >= limit:
            break
        read += (s.skip not in EARLY) + (s.moved is not None)  # a transfer: a 301, then there
        rows += s.expected is not None
    return read


@pytest.mark.parametrize("list_next", [None, "empty", "repeat", "pulls"])
@pytest.mark.parametrize("limit", [1, 2, 5, 13])
def test_the_limit_asks_nothing_beyond_what_it_needs(
    tmp_path: Path, limit: int, list_next: str | None
) -> None:
    scenarios = world(60)  # one page: 60 issues and 15 pull requests
    out = tmp_path / "set.jsonl"
    with _server(scenarios, list_next=list_next) as github:
        report = run_dataset(_client(github), REPO, out, config=CONFIG, gate=GATE, limit=limit)
    assert report.progress.rows == limit
    assert github.requests == {
        "list": 1,
        "graphql": 1,
        "timeline": _timelines_for(scenarios, limit),
    }
    with _server(scenarios, list_next=list_next) as again:
        run_dataset(_client(again), REPO, out, config=CONFIG, gate=GATE, limit=limit)
    assert again.requests.total() == 0  # the file holds the limit already


def _rows(out: Path) -> int:
    return len(load_jsonl(out, EvalIssue))


def test_an_endless_list_of_empty_pages_ends_at_the_first(tmp_path: Path) -> None:
    scenarios = world(3)  # 3 rows, fewer than the limit asks
    out = tmp_path / "set.jsonl"
    with _server(scenarios, list_next="empty") as github:
        report = run_dataset(_client(github), REPO, out, config=CONFIG, gate=GATE, limit=5)
    assert report.progress.rows == 3
    assert github.requests["list"] == 2


def test_a_list_that_repeats_its_page_is_stopped_at_the_repeat(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    with (
        _server(world(3), list_next="repeat") as github,
        pytest.raises(GitHubError, match=r"page 2\): the page holds only what earlier pages held"),
    ):
        run_dataset(_client(github), REPO, out, config=CONFIG, gate=GATE, limit=5)
    assert github.requests["list"] == 2
    assert _rows(out) == 3  # what was done is kept
    assert json.loads(state_path(out).read_text("utf-8"))["repos"][REPO]["pages"]


@pytest.mark.parametrize("bound", [2, 5, 9])
def test_a_list_that_never_ends_stops_at_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: int
) -> None:
    """Pages of pull requests never listed before, each naming a next one: at most the bound
    of pages is asked (:data:`MAX_LIST_PAGES` in a run; smaller here to count)."""
    monkeypatch.setattr(github_client, "MAX_LIST_PAGES", bound)
    out = tmp_path / "set.jsonl"
    with (
        _server(world(3), list_next="pulls") as github,
        pytest.raises(GitHubError, match=f"goes on past {bound} pages"),
    ):
        run_dataset(_client(github), REPO, out, config=CONFIG, gate=GATE, limit=5)
    assert github.requests["list"] == bound
    assert _rows(out) == 3


def test_the_bounds_are_generous() -> None:
    assert MAX_LIST_PAGES * PER_PAGE == 100_000
    assert MAX_TIMELINE_PAGES * PER_PAGE == 10_000


def test_a_timeline_of_two_pages_is_read_whole(tmp_path: Path) -> None:
    scenarios = world(6)
    out = tmp_path / "set.jsonl"
    with _server(scenarios, timeline_next="once") as github:
        report = run_dataset(_client(github), REPO, out, config=CONFIG, gate=GATE)
    read = sum(s.skip not in EARLY for s in scenarios)
    assert github.requests["timeline"] == 2 * read
    assert report.progress.rows == sum(s.expected is not None for s in scenarios)


def test_a_timeline_whose_next_is_itself_is_read_once(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    with (
        _server(world(2), timeline_next="self") as github,
        pytest.raises(
            GitHubError, match=f"timeline of {SECOND}: GitHub's next page is one already"
        ),
    ):
        run_dataset(_client(github), REPO, out, config=CONFIG, gate=GATE)
    assert github.requests["timeline"] == 1


@pytest.mark.parametrize("bound", [1, 3, 7])
def test_a_timeline_that_never_ends_stops_at_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: int
) -> None:
    monkeypatch.setattr(github_client, "MAX_TIMELINE_PAGES", bound)
    with (
        _server(world(2), timeline_next="endless") as github,
        pytest.raises(GitHubError, match=f"goes on past {bound} pages"),
    ):
        run_dataset(_client(github), REPO, tmp_path / "set.jsonl", config=CONFIG, gate=GATE)
    assert github.requests["timeline"] == bound


def _elsewhere(base: str, variant: str) -> str:
    scheme, rest = base.split("://")
    host, port = rest.split(":")
    return {
        "another host": f"{scheme}://localhost:{port}",
        "another host, same address": f"{scheme}://127.0.0.1.nip.io:{port}",
        "another scheme": f"https://{host}:{port}",
        "another port": f"{scheme}://{host}:{int(port) + 1}",
        "no port (80)": f"{scheme}://{host}",
    }[variant]


ELSEWHERE = ["another host", "another host, same address", "another scheme", "another port",
             "no port (80)"]  # fmt: skip


@pytest.mark.parametrize("variant", ELSEWHERE)
@pytest.mark.parametrize("where", ["list", "timeline"])
def test_a_next_link_off_the_api_is_refused_not_followed(
    tmp_path: Path, where: str, variant: str
) -> None:
    scenarios = world(150 if where == "list" else 30)  # two pages of the list, or one
    out = tmp_path / "set.jsonl"
    with _server(scenarios, timeline_next="once" if where == "timeline" else None) as github:
        github.next_base = _elsewhere(github.base_url, variant)
        with pytest.raises(GitHubError, match="GitHub's next page is not on the API's host"):
            run_dataset(_client(github), REPO, out, config=CONFIG, gate=GATE)
    assert github.requests[where] == 1
    assert github.requests.total() <= 3  # the list, GraphQL, one timeline


def test_a_next_link_off_the_api_ends_the_command_with_exit_4(tmp_path: Path) -> None:
    out = tmp_path / "set.jsonl"
    with _server(world(30), timeline_next="once") as github:
        github.next_base = _elsewhere(github.base_url, "another host")
        env = {"GITHUB_TOKEN": "test-token-not-real", "GITHUB_API_URL": github.base_url}
        args = ["dataset", "--repo", REPO, "--out", str(out), "--repo-file", _repo_file(tmp_path)]
        result = CliRunner().invoke(main, args, env=env)
    assert result.exit_code == 4, result.output
    assert isinstance(result.exception, SystemExit)  # a message, no traceback
    assert "GitHub's next page is not on the API's host (http://localhost:" in result.stderr


def _repo_file(tmp_path: Path) -> str:
    path = tmp_path / "triage-bot.yml"
    path.write_text(REPO_FILE, "utf-8")
    return str(path)
