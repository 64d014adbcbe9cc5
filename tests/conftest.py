"""Pytest's fixtures and hooks: a clean environment, a fake model, the fake GitHub and model
wired into the runner, the real-model timings.

Helpers shared by test modules live in tests/support/ (a conftest is not imported)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bot import factory, runner
from bot.audit import prompt as audit_prompt
from bot.config import ENV_VARS, Settings
from bot.factory import make_store
from bot.gate import issue_text, policy
from bot.history.protocol import HistoryStore
from tests.support import FIXED_NONCE, TIMINGS, FakeChatModel, guards_policy
from tests.support.fake_github import FakeGitHub
from tests.support.pg import fresh_database

_EXTRA_ENV = ("GITHUB_ACTIONS", "CI", "RUNNER_TEMP", "XDG_DATA_HOME")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMINGS:
        terminalreporter.section("real-model timings")
        for what, ms in TIMINGS:
            terminalreporter.write_line(f"{ms:9.0f} ms  {what}")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No variable the bot reads leaks in from the developer's shell or CI, and the default
    store lands in the test's own folder, never in the developer's home."""
    for variables in ENV_VARS.values():
        for var in variables:
            monkeypatch.delenv(var, raising=False)
    for var in _EXTRA_ENV:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))


@pytest.fixture(autouse=True)
def _fake_model_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fake model has a measured policy, as the embedded default has one shipped: the
    shipped guards (:data:`tests.support.GUARDS`) measured for ``fake-model`` with a
    needs-refinement precision of 90% (:func:`tests.support.guards_policy`), so a pipeline test
    sees what a measured deployment does, author comment included. Tests of how a policy is
    chosen or a comment withheld use a model of another name, or name a policy."""
    shipped = (*policy.shipped_policies(), guards_policy())
    monkeypatch.setattr(policy, "shipped_policies", lambda: shipped)


@pytest.fixture(autouse=True)
def _no_model_preload(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """``triage-bot run`` starts loading the embedded GGUF in a thread for gate and audit
    events (:func:`bot.factory.preload_chat_model`); tests with a fake model must not load the
    real one behind it. Real-model tests (``-m model``) keep it, so it runs for real there."""
    if request.node.get_closest_marker("model") is None:
        monkeypatch.setattr(factory, "preload_chat_model", lambda settings: None)


@pytest.fixture(autouse=True)
def _no_title_model(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs rank duplicates by words only unless a test is marked ``title_model``: a test's
    scores do not depend on whether this machine has fetched the title model."""
    if request.node.get_closest_marker("title_model") is None:
        monkeypatch.setattr(runner, "load_titles", None)


@pytest.fixture(autouse=True)
def _fixed_nonce(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Real-model tests (``-m model``) delimit untrusted text with one fixed tag id instead of a
    random one, so a test sends the same prompt on every run: a 270M model's reply is then the
    same each time on a machine, not a different draw per run (tests/clients/test_prompt_cache.py
    varies it on purpose). The random id itself is tested in tests/gate/test_issue_text.py."""
    if request.node.get_closest_marker("model") is not None:
        fixed = SimpleNamespace(token_hex=lambda nbytes: FIXED_NONCE[: 2 * nbytes])
        monkeypatch.setattr(issue_text, "secrets", fixed)
        monkeypatch.setattr(audit_prompt, "secrets", fixed)


@pytest.fixture
def fake_model() -> FakeChatModel:
    return FakeChatModel()


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> FakeGitHub:
    """A fake GitHub the runner builds in place of PyGithub (a module that needs issues, files
    or contents in it overrides this fixture, asking for it by the same name)."""
    fake = FakeGitHub()
    monkeypatch.setattr(
        runner, "make_github", lambda settings, **k: fake.built_for(settings.bot_login)
    )
    return fake


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch, fake_model: FakeChatModel) -> FakeChatModel:
    """The fake model the runner builds in place of a real backend."""
    monkeypatch.setattr(runner, "make_chat_model", lambda *a, **k: fake_model)
    return fake_model


@pytest.fixture
def both_stores(tmp_path: Path) -> Iterator[tuple[HistoryStore, HistoryStore]]:
    """A SQLite file store and a store on a fresh PostgreSQL database, open side by side."""
    databases = fresh_database()
    url = next(databases)
    sqlite = make_store(Settings(db_path=tmp_path / "triage.db"))
    pg = make_store(Settings(db_path=url))
    try:
        yield sqlite, pg
    finally:
        sqlite.close()
        pg.close()
        databases.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A store's ``TRIAGE_DB`` value, once per store: a SQLite file in the test's folder, and a
    fresh database on the test PostgreSQL server (``tests/support/pg.py``: skipped without one)."""
    if request.param == "sqlite":
        yield str(tmp_path / "triage.db")
    else:
        yield from fresh_database()
