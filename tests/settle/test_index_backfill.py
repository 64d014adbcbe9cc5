"""``triage-bot index``: the duplicate index's backfill through the PyGithub adapter, on the
dataset's loopback GitHub (tests/support/duplicate_world.py) and on its recording
(cassettes/index_backfill.yaml), on both stores: every issue of every state indexed at one
request a page, a rerun that reads nothing twice, a transferred issue dropped, a spent budget
and a rate limit that stop a run the next one finishes, and the runs the command refuses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bot import runner
from bot.cli import main
from bot.config import Settings
from bot.duplicates.terms import issue_terms
from bot.duplicates.title_stage import VECTOR_MODEL
from bot.errors import ConfigError, StoreError
from bot.factory import make_github, make_store
from bot.history.protocol import HistoryStore, IndexedIssue
from bot.history.record import cursor
from bot.history.store import Store
from bot.runner import NO_INDEX, run_index
from bot.settle.backfill import INDEX, backfill_index
from bot.settle.budget import Budget
from tests.support import cassette
from tests.support.dataset_server import LoopbackGitHub
from tests.support.dataset_world import REPO
from tests.support.duplicate_world import many, world
from tests.support.title_encoder import WordHash
from tests.support.title_model_files import broken_title_model, short_vocabulary

TOKEN = "test-token-not-real"


@pytest.fixture
def store(store_target: str) -> Iterator[HistoryStore]:
    opened = make_store(Settings(db_path=store_target))
    yield opened
    opened.close()


def _client(github: LoopbackGitHub) -> object:
    return make_github(Settings(github_token=TOKEN, github_api_url=github.base_url))


def test_every_issue_is_indexed_at_one_request_a_page_and_a_rerun_reads_one(
    store: HistoryStore,
) -> None:
    scenarios = world()
    with LoopbackGitHub(scenarios) as github:
        first = backfill_index(_client(github), store, REPO, Budget(50))  # type: ignore[arg-type]
        assert dict(github.requests) == {"list": 1}
        again = backfill_index(_client(github), store, REPO, Budget(50))  # type: ignore[arg-type]
        assert dict(github.requests) == {"list": 2}
    assert (first.pages, first.indexed, first.dropped, first.requests) == (1, 10, 0, 1)
    assert first.stopped is None
    assert store.index_size(REPO) == 10  # 11 is another repository's now
    newest = max(s.item["updated_at"] for s in scenarios)  # 11's too: it is handled
    assert cursor(store, REPO, INDEX) == first.cursor == newest
    found = issue_terms("Export drops the last row", "tool export --format csv loses a row")
    assert store.indexed_issue(REPO, 1) == IndexedIssue(
        1,
        "Export drops the last row",
        "tool export --format csv loses a row",
        found.title,
        found.body,
        "2024-03-04T10:00:00Z",
    )
    # the rerun asks from the cursor: the last second's issues again, none written twice
    assert (again.pages, again.indexed, again.requests) == (1, 0, 1)
    assert again.cursor == newest
    assert "10 issue(s) indexed, 0 dropped (transferred); 1 request(s), 0.10 per issue" in (
        "\n".join(first.lines())
    )


def test_an_issue_now_in_another_repository_is_dropped_from_the_index(
    store: HistoryStore,
) -> None:
    scenarios = world()
    moved = next(s for s in scenarios if "Other-World" in s.item["repository_url"])
    row = IndexedIssue(moved.number, "Moved away", "", "moved away", "", "2024-03-04T20:00:00Z")
    store.index_issues(REPO, [row])
    assert store.indexed_issue(REPO, moved.number) is not None
    with LoopbackGitHub(scenarios) as github:
        report = backfill_index(_client(github), store, REPO, Budget(50))  # type: ignore[arg-type]
    assert (report.indexed, report.dropped) == (10, 1)
    assert store.indexed_issue(REPO, moved.number) is None
    assert store.index_size(REPO) == 10


def test_a_spent_budget_stops_at_a_written_page_and_the_next_run_finishes(
    store: HistoryStore,
) -> None:
    scenarios = many(250)
    with LoopbackGitHub(scenarios, pulls_every=5) as github:  # 300 listed: 3 pages
        stopped = backfill_index(_client(github), store, REPO, Budget(2))  # type: ignore[arg-type]
        assert store.index_size(REPO) == stopped.indexed
        held = cursor(store, REPO, INDEX)
        rest = backfill_index(_client(github), store, REPO, Budget(50))  # type: ignore[arg-type]
        listed = github.requests["list"]
    assert stopped.stopped is not None
    assert "the request budget is spent" in stopped.stopped
    assert stopped.requests == 2
    assert 150 <= stopped.indexed < 250
    assert held == stopped.cursor
    assert rest.stopped is None
    assert store.index_size(REPO) == 250
    # only the stopped run's last second is written again: its next page might have held more
    assert 250 <= stopped.indexed + rest.indexed <= 251
    assert listed == stopped.requests + rest.requests
    assert listed / 250 <= 1.2


def test_a_rate_limit_stops_the_run_with_what_it_wrote(store: HistoryStore) -> None:
    scenarios = many(150)
    faults = {"list": ["", *["primary"] * 10]}  # the first page, then the limit
    with LoopbackGitHub(scenarios, pulls_every=0, faults=faults) as github:
        report = backfill_index(_client(github), store, REPO, Budget(50))  # type: ignore[arg-type]
    assert report.stopped is not None
    assert "rate limit" in report.stopped
    assert report.indexed == 100
    assert store.index_size(REPO) == 100


def test_a_repository_name_in_another_case_is_refused_before_anything_is_written(
    store: HistoryStore,
) -> None:
    with LoopbackGitHub(world()) as github, pytest.raises(ConfigError) as refused:
        backfill_index(_client(github), store, REPO.lower(), Budget(50))  # type: ignore[arg-type]
    assert f"give --repo {REPO}" in str(refused.value)
    assert store.index_size(REPO.lower()) == store.index_size(REPO) == 0
    assert cursor(store, REPO.lower(), INDEX) is None


def test_a_dry_run_is_refused_and_nothing_is_asked(tmp_path: Path) -> None:
    env = {"GITHUB_TOKEN": TOKEN, "TRIAGE_DB": str(tmp_path / "t.db"), "TRIAGE_DRY_RUN": "1"}
    with cassette("github_no_requests"):
        result = CliRunner().invoke(main, ["index", "--repo", REPO], env=env)
    assert result.exit_code == 2, result.output
    assert "not on a dry run" in result.output


def test_a_store_that_does_not_outlive_the_job_is_not_written(tmp_path: Path) -> None:
    settings = Settings(github_token=TOKEN, runner_environment="github-hosted")
    with cassette("github_no_requests"):
        report = run_index(settings, REPO, budget=10)
    assert report.skipped == NO_INDEX
    assert "needs PostgreSQL or a SQLite file the runner keeps" in "\n".join(report.lines())


def test_the_recorded_runs_index_then_read_one_page(tmp_path: Path) -> None:
    env = {"GITHUB_TOKEN": TOKEN, "TRIAGE_DB": str(tmp_path / "kept.db")}
    with cassette("index_backfill") as cass:
        first = CliRunner().invoke(main, ["index", "--repo", REPO], env=env)
        again = CliRunner().invoke(main, ["index", "--repo", REPO], env=env)
    assert first.exit_code == 0, first.output
    assert again.exit_code == 0, again.output
    assert cass.all_played
    assert "1 page(s), 10 issue(s) indexed, 0 dropped (transferred); 1 request(s)" in first.output
    assert "1 page(s), 0 issue(s) indexed" in again.output
    assert "the index holds 10 issue(s)" in again.output


def _recorded_index(tmp_path: Path, **env: str) -> Result:
    """One ``triage-bot index`` on the recorded backfill, into ``tmp_path/kept.db``."""
    env = {"GITHUB_TOKEN": TOKEN, "TRIAGE_DB": str(tmp_path / "kept.db"), **env}
    with cassette("index_backfill"):
        result = CliRunner().invoke(main, ["index", "--repo", REPO], env=env)
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.title_model
def test_with_the_title_model_the_run_computes_the_missing_title_vectors(tmp_path: Path) -> None:
    env = {"GITHUB_TOKEN": TOKEN, "TRIAGE_DB": str(tmp_path / "kept.db")}
    with cassette("index_backfill"):
        first = CliRunner().invoke(main, ["index", "--repo", REPO], env=env)
        again = CliRunner().invoke(main, ["index", "--repo", REPO], env=env)
    assert first.exit_code == 0, first.output
    assert "title vectors: 10 computed for issues without one" in first.output
    assert "title vectors: 0 computed" in again.output
    store = make_store(Settings(db_path=tmp_path / "kept.db"))
    try:
        assert store.issues_without_vector(REPO, VECTOR_MODEL, 20) == []
        assert len(store.title_vectors(REPO, VECTOR_MODEL, range(1, 11))) == 10
    finally:
        store.close()


def test_without_the_title_model_the_run_says_duplicates_rank_by_words(tmp_path: Path) -> None:
    result = _recorded_index(tmp_path)
    assert "title vectors: none (duplicates ranked by words only" in result.output


@pytest.mark.title_model
def test_with_a_broken_title_model_the_run_indexes_and_names_the_file(tmp_path: Path) -> None:
    models = broken_title_model(tmp_path / "models", short_vocabulary)
    result = _recorded_index(tmp_path, TRIAGE_MODELS=str(models))
    assert "10 issue(s) indexed" in result.output
    assert "title vectors: none (duplicates ranked by words only: the title model cannot be" in (
        result.output
    )
    assert "model.safetensors" in result.output


@pytest.mark.title_model
def test_the_title_model_line_never_shows_a_secret_in_the_models_path(tmp_path: Path) -> None:
    models = tmp_path / f"models-{TOKEN}"
    result = _recorded_index(tmp_path, TRIAGE_MODELS=str(models))
    assert (
        "title vectors: none (duplicates ranked by words only: the title model is not set up"
        in (result.output)
    )
    assert TOKEN not in result.output
    assert "models-***" in result.output


def test_a_store_fault_while_keeping_title_vectors_leaves_the_indexing_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(self: object, repo: str, model: str, vectors: object) -> None:
        raise StoreError("cannot write to title_vectors: database or disk is full")

    monkeypatch.setattr(runner, "load_titles", lambda settings: WordHash())
    monkeypatch.setattr(Store, "keep_title_vectors", full)
    result = _recorded_index(tmp_path)
    assert "10 issue(s) indexed" in result.output
    assert "title vectors: stopped: cannot write to title_vectors: database or disk is full" in (
        result.output
    )


def test_a_title_model_failing_while_computing_vectors_leaves_the_indexing_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Failing:
        def encode(self, titles: object) -> object:
            raise MemoryError("cannot allocate 96 MiB")

    monkeypatch.setattr(runner, "load_titles", lambda settings: Failing())
    result = _recorded_index(tmp_path)
    assert "10 issue(s) indexed" in result.output
    assert "title vectors: stopped: the title model failed: MemoryError: cannot allocate" in (
        result.output
    )
