"""``triage-bot doctor``: one ok/FAIL line per check, exit 1 on a failure; the
Ollama and GitHub parts on recorded shapes (cassettes), the store on both stores."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from bot import factory
from bot.chat import ChatModel, ModelRole
from bot.cli import main
from bot.config import Settings
from bot.doctor import check_model, check_python, check_store, check_token, run_checks
from bot.factory import Backend, make_store
from bot.history import migrate
from bot.history.protocol import TABLES
from tests.support import cassette, migrate_first

OLLAMA = "http://127.0.0.1:11434"


def test_python_version() -> None:
    assert check_python((3, 12, 1)).line() == "ok   python: 3.12.1"
    failed = check_python((3, 10, 4))
    assert not failed.ok
    assert failed.line() == "FAIL python: 3.10.4; triage-bot needs 3.11 or newer"


def test_ollama_reachable_with_the_models_pulled() -> None:
    with cassette("ollama_tags") as cass:
        check = check_model(Settings(ollama_host=OLLAMA, validator_model="qwen2.5-coder:1.5b"))
    assert cass.play_count == 1
    assert check.ok
    assert "pulled: qwen2.5-coder:1.5b" in check.detail


def test_a_model_not_pulled_fails_and_says_how_to_pull_it() -> None:
    settings = Settings(
        ollama_host=OLLAMA, validator_model="qwen2.5-coder:1.5b", audit_model="qwen2.5-coder"
    )
    with cassette("ollama_tags"):
        check = check_model(settings)
    assert not check.ok
    assert "lacks qwen2.5-coder (ollama pull qwen2.5-coder)" in check.detail  # ':latest'


def test_an_unreachable_ollama_is_a_fail_line() -> None:
    (_, model, _, _) = run_checks(Settings(ollama_host="http://127.0.0.1:9", validator_model="m"))
    assert not model.ok
    assert "unreachable" in model.detail


def test_an_openai_compatible_server_serving_both_models() -> None:
    """The recorded doctor exchange with llama-cpp-python's server: the model list, then a
    one-token call for the model both roles use."""
    settings = Settings(openai_base_url="http://127.0.0.1:8080/v1", validator_model="gemma3-270m",
                        ollama_host=OLLAMA)  # fmt: skip
    with cassette("openai_llama_cpp_doctor") as cass:
        check = check_model(settings)
    assert cass.all_played
    assert check.ok, check.detail
    assert check.detail.startswith(
        "OpenAI-compatible server http://127.0.0.1:8080/v1 answers; one-token call: gemma3-270m "
    )


def test_a_model_the_server_does_not_serve_fails_and_names_what_it_lists() -> None:
    settings = Settings(openai_base_url="http://127.0.0.1:8080/v1", validator_model="gemma3-270m",
                        audit_model="qwen2.5-coder-7b")  # fmt: skip
    with cassette("openai_llama_cpp_doctor") as cass:
        check = check_model(settings)
    assert cass.play_count == 1  # the list only: no call to a model it does not serve
    assert not check.ok
    assert "does not serve qwen2.5-coder-7b (it lists: gemma3-270m)" in check.detail


def test_an_unreachable_openai_compatible_server_is_a_fail_line() -> None:
    settings = Settings(openai_base_url="http://127.0.0.1:9/v1", validator_model="m")
    (_, model, _, _) = run_checks(settings)
    assert not model.ok
    assert "http://127.0.0.1:9/v1 is unreachable" in model.detail


def test_the_embedded_gguf(tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF" + bytes(2_000_000))
    cache = tmp_path / "cache"
    line = check_model(Settings(model_path=gguf, prompt_cache_dir=cache)).line()
    assert line == f"ok   model: embedded GGUF {gguf} (2 MB); prompt cache {cache} (private)"
    assert check_model(Settings(model_path=gguf, prompt_cache_mb=0)).line() == (
        f"ok   model: embedded GGUF {gguf} (2 MB)"  # no cache, no folder to check
    )
    (_, missing, _, _) = run_checks(Settings(models_dir=tmp_path))
    assert not missing.ok
    assert "not set up" in missing.detail


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_a_prompt_cache_folder_others_may_write_fails_the_model_check(
    tmp_path: Path, mode: int
) -> None:
    """A job would stop with exit 2 on this folder: the doctor says so first."""
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(mode)
    check = check_model(Settings(model_path=gguf, prompt_cache_dir=cache))
    assert not check.ok
    assert f"prompt cache folder {cache} is writable by its group or others" in check.detail


def test_a_classic_token_shows_its_scopes() -> None:
    with cassette("github_rate_limit_classic") as cass:
        check = check_token(Settings(github_token="test-token-not-real"))
    assert cass.play_count == 1
    assert check.line() == "ok   token: classic token with scopes repo, workflow"


def test_a_fine_grained_token_has_no_scopes_to_show() -> None:
    with cassette("github_rate_limit_fine_grained"):
        check = check_token(Settings(github_token="test-token-not-real"))
    assert check.ok
    assert "no X-OAuth-Scopes" in check.detail
    assert "issues: write" in check.detail


def test_no_token_fails() -> None:
    assert not check_token(Settings()).ok


def test_the_store_is_reachable_and_migrated(store_target: str) -> None:
    settings = Settings(db_path=store_target)
    if not store_target.startswith("postgresql://"):
        assert check_store(settings).ok  # no file yet: the first job creates it
    make_store(settings).close()
    check = check_store(settings)
    assert check.ok, check.detail
    assert "reachable and migrated" in check.detail


def _execute(target: str, sql: str) -> None:
    """One statement on a store's own database (SQLite file or PostgreSQL URL)."""
    if target.startswith("postgresql://"):
        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute(sql)
    else:
        with sqlite3.connect(target) as conn:
            conn.execute(sql)


# (what was done to a migrated store, SQLite statement, PostgreSQL statement, expected detail)
DAMAGE = [
    ("a migration unrecorded",
     "delete from _yoyo_migration where migration_id = '0002_github_memory'",
     "delete from _yoyo_migration where migration_id = '0002_github_memory'",
     "lacks migrations 0002_github_memory"),
    ("a newer version's migration",
     "insert into _yoyo_migration (migration_hash, migration_id, applied_at_utc) "
     "values ('f" + "0" * 63 + "', '0099_future', '2030-01-01')",
     "insert into _yoyo_migration (migration_hash, migration_id, applied_at_utc) "
     "values ('f' || repeat('0', 63), '0099_future', now())",
     "migrations 0099_future are unknown to this version"),
    ("a table dropped", "drop table repo_files", "drop table repo_files",
     "records every migration yet lacks tables repo_files"),
    ("two tables dropped", "drop table gate_weeks", "drop table gate_weeks; drop table audits",
     "lacks tables audits, gate_weeks"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("damage", "sqlite_sql", "pg_sql", "expected"), DAMAGE, ids=[d[0] for d in DAMAGE]
)
def test_a_store_unlike_what_this_version_ships_fails(
    store_target: str, damage: str, sqlite_sql: str, pg_sql: str, expected: str
) -> None:
    """Migrations are checked both ways on both stores (none missing, none unknown), and the
    tables too: a store that records every migration but lost a table fails."""
    settings = Settings(db_path=store_target)
    make_store(settings).close()
    postgresql = store_target.startswith("postgresql://")
    if damage == "two tables dropped" and not postgresql:
        sqlite_sql = "drop table audits"  # one statement per sqlite3 execute
        _execute(store_target, "drop table gate_weeks")
    _execute(store_target, pg_sql if postgresql else sqlite_sql)
    check = check_store(settings)
    assert not check.ok, check.detail
    assert expected in check.detail


def _shipped(target: str) -> tuple[str, ...]:
    del target  # both stores ship the same migrations
    return migrate.shipped()


NOT_MIGRATED = "is reachable and not migrated yet: the first job migrates it"


def test_a_fresh_store_is_a_warning(store_target: str) -> None:
    """A database nothing has migrated (an empty SQLite file, a new PostgreSQL database): the
    first job migrates it, so the doctor warns and does not fail."""
    if not store_target.startswith("postgresql://"):
        Path(store_target).touch()
    check = check_store(Settings(db_path=store_target))
    assert check.ok, check.detail
    assert check.warning
    shipped = _shipped(store_target)
    assert check.line().startswith("warn store: ")
    assert NOT_MIGRATED in check.detail
    assert f"(0 of {len(shipped)} migrations applied; {', '.join(shipped)} pending)" in check.detail


@pytest.mark.parametrize("done", [1, -1], ids=["the first", "all but the last"])
def test_a_store_an_older_release_migrated_is_a_warning(store_target: str, done: int) -> None:
    shipped = _shipped(store_target)
    done %= len(shipped)
    migrate_first(store_target, done)
    check = check_store(Settings(db_path=store_target))
    assert check.ok, check.detail
    assert check.warning
    assert NOT_MIGRATED in check.detail
    assert f"({done} of {len(shipped)} migrations applied; " in check.detail
    make_store(Settings(db_path=store_target)).close()  # what the first job does
    migrated = check_store(Settings(db_path=store_target))
    assert (migrated.ok, migrated.warning) == (True, False), migrated.detail


# (what else was done to a store an older release migrated, SQLite statement, PostgreSQL
# statement, expected detail)
OLDER_DAMAGE = [
    ("a newer version's migration too",
     "insert into _yoyo_migration (migration_hash, migration_id, applied_at_utc) "
     "values ('f" + "0" * 63 + "', '0099_future', '2030-01-01')",
     "insert into _yoyo_migration (migration_hash, migration_id, applied_at_utc) "
     "values ('f' || repeat('0', 63), '0099_future', now())",
     "migrations 0099_future are unknown to this version"),
    ("a table its migrations create dropped", "drop table gate_weeks", "drop table gate_weeks",
     "records its migrations yet lacks tables gate_weeks"),
    ("a table only a later migration creates", "create table repo_files (x text)",
     "create table repo_files (x text)",
     "holds tables repo_files that only migrations it does not record create"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("damage", "sqlite_sql", "pg_sql", "expected"), OLDER_DAMAGE, ids=[d[0] for d in OLDER_DAMAGE]
)
def test_an_older_store_unlike_an_older_release_fails(
    store_target: str, damage: str, sqlite_sql: str, pg_sql: str, expected: str
) -> None:
    """Only a first part of the shipped migrations, exactly as they leave the store, is an
    older release's store: more (a newer one's), a table gone, or a later table already there
    fails. The first migration creates ``gate_weeks``, and ``repo_files`` comes later."""
    migrate_first(store_target, 1)
    postgresql = store_target.startswith("postgresql://")
    _execute(store_target, pg_sql if postgresql else sqlite_sql)
    check = check_store(Settings(db_path=store_target))
    assert not check.ok, check.detail
    assert expected in check.detail


def test_a_fresh_store_holding_a_table_of_the_bots_fails(store_target: str) -> None:
    """No migration recorded, yet a table the first migration would create: that migration
    would fail on it."""
    _execute(store_target, "create table audits (x text)")
    check = check_store(Settings(db_path=store_target))
    assert not check.ok, check.detail
    assert "holds tables audits that only migrations it does not record create" in check.detail


def test_the_migrations_leave_every_table_the_bot_uses() -> None:
    """What the doctor expects of a store migrated to the end is what the bot uses."""
    shipped = migrate.shipped()
    assert set(TABLES) <= migrate.tables_after(shipped, len(shipped))
    assert not set(TABLES) & migrate.tables_after(shipped, 0)


def test_an_installation_without_its_migrations_fails(
    store_target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The package ships no migrations for the store (a wheel without its data files): the
    store cannot be "migrated", whatever it holds."""
    settings = Settings(db_path=store_target)
    make_store(settings).close()
    empty = tmp_path / "no-migrations"
    empty.mkdir()
    monkeypatch.setattr(migrate, "MIGRATIONS_DIR", empty)
    check = check_store(settings)
    assert not check.ok
    assert "ships no migrations" in check.detail


def test_an_unreachable_server_fails() -> None:
    check = run_checks(Settings(db_path="postgresql://u:pw@127.0.0.1:9/x?connect_timeout=2"))[2]
    assert not check.ok
    assert "pw" not in check.detail


def test_the_command_prints_one_line_per_check_and_exits_1_on_a_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setenv("TRIAGE_DB", str(tmp_path / "t.db"))
    result = CliRunner().invoke(main, ["doctor", "--model-path", str(gguf)])
    assert result.exit_code == 1  # no token
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "ok   python", "ok   model", "ok   store", "FAIL token",
    ]  # fmt: skip


def test_the_command_exits_0_with_only_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_target: str
) -> None:
    """A runner whose store is fresh is ready: the doctor says so with a ``warn`` line, and
    exits 0."""
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    if not store_target.startswith("postgresql://"):
        Path(store_target).touch()
    monkeypatch.setenv("TRIAGE_DB", store_target)
    monkeypatch.setenv("GITHUB_TOKEN", "test-token-not-real")
    with cassette("github_rate_limit_classic"):
        result = CliRunner().invoke(main, ["doctor", "--model-path", str(gguf)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "ok   python", "ok   model", "warn store", "ok   token",
    ]  # fmt: skip
    assert NOT_MIGRATED in lines[2]


@pytest.mark.parametrize(
    ("ok", "detail", "line"),
    [
        (True, "trial answers", "ok   model: trial answers"),
        (False, "trial lacks m (pull m)", "FAIL model: trial lacks m (pull m)"),
    ],
)
def test_the_model_check_is_the_selected_backends_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ok: bool, detail: str, line: str
) -> None:
    """A new backend is its module and one row of ``factory.BACKENDS``: the doctor asks the
    row the settings select, and settings that select another row still reach theirs."""

    def no_model(settings: Settings, role: ModelRole) -> ChatModel:
        raise AssertionError("the doctor builds no model")

    trial = Backend(
        "trial",
        selected=lambda s: s.validator_model == "trial-model",
        build=no_model,
        check=lambda s: (ok, detail),
    )
    monkeypatch.setattr(factory, "BACKENDS", (trial, *factory.BACKENDS))
    assert check_model(Settings(validator_model="trial-model")).line() == line
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    embedded = check_model(Settings(model_path=gguf, prompt_cache_mb=0))
    assert embedded.line() == f"ok   model: embedded GGUF {gguf} (0 MB)"
