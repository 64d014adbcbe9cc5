"""How the store is opened: read-only for dry runs and listings, private files, newer files
refused at open (a security review's finding on the store).

How these were checked against the code before the fix: the same tests ran against a scratch
copy of the previous commit's ``bot/``; there a dry run created and migrated the file, a
``history`` in a read-only folder failed with exit 5 ("attempt to write a readonly database"),
a newer file opened without a word, and new files were ``0644``.

Read-only folders: a test that needs one runs the reader in a child process. When the tests run
as root, ``chmod`` does not stop root from writing, so the child is started under
``unshare --user``: in a new user namespace root keeps no capability over the host's files and
the folder's mode applies to it like to anyone else. Each child first checks that it really
cannot write the folder, so the test cannot pass by accident.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from bot import runner
from bot.cli import main
from bot.clients.github_port import LabelEvent
from bot.config import Settings
from bot.errors import StoreError
from bot.history.store import GateRow, Store
from tests.support import ROOT, FakeChatModel, audit_row, load_webhook, migrate_first, write_payload
from tests.support.fake_github import FakeGitHub
from tests.support.replies import COMPLETE_BODY, VALID_REPLY

REPO = "Codertocat/Hello-World"
VALID = VALID_REPLY  # stands on COMPLETE_BODY (tests/support/replies.py)


def gate_row(label: str = "needs-refinement") -> GateRow:
    return GateRow(
        repo=REPO, issue=1, event="issues.opened", verdict="NEEDS_REFINEMENT", label=label,
        reason="r", error_kind=None, model="m", prompt_version="validator@0", prompt_tokens=1,
        output_tokens=1, duration_ms=1.0,
    )  # fmt: skip


def _filled(db: Path) -> Path:
    store = Store(db)
    store.record_gate(gate_row())
    store.record_audits([audit_row(repo=REPO)])
    store.close()
    return db


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch, fake_model: FakeChatModel) -> FakeChatModel:
    monkeypatch.setattr(runner, "make_github", lambda *a, **k: FakeGitHub())  # no repo file
    monkeypatch.setattr(runner, "make_chat_model", lambda *a, **k: fake_model)
    return fake_model


def _dry_run(tmp_path: Path, db: Path) -> Any:
    payload = load_webhook("issues.opened.18")
    payload["issue"]["body"] = COMPLETE_BODY
    settings = Settings(
        event_name="issues", event_path=write_payload(tmp_path, payload), db_path=db, dry_run=True
    )
    return runner.run_event(settings)


# --- dry runs write nothing ---------------------------------------------------------------


def test_a_dry_run_creates_no_store(tmp_path: Path, model: FakeChatModel) -> None:
    model.enqueue(VALID)
    db = tmp_path / "data" / "triage.db"
    report = _dry_run(tmp_path, db)
    assert "dry run:  nothing written to GitHub or the store" in report.text
    assert not db.parent.exists()


def test_a_dry_run_neither_migrates_nor_writes_an_older_store(
    tmp_path: Path, model: FakeChatModel, github: FakeGitHub
) -> None:
    db = tmp_path / "triage.db"
    migrate_first(str(db), 3)  # as an older version left it
    with sqlite3.connect(db) as old:
        old.execute("pragma journal_mode = wal")
        old.execute(
            "insert into gate_decisions (repo, issue, event, verdict, label, reason, model, "
            "prompt_version, created_at, prompt_tokens, output_tokens, duration_ms) values "
            "(?, 1, 'issues.opened', 'NEEDS_REFINEMENT', 'needs-refinement', 'r', 'm', 'v', "
            "'2026-01-01T00:00:00+00:00', 1, 1, 1.0)",
            [REPO],
        )
    before = _digest(db)
    model.enqueue(VALID)
    github.events[1].append(LabelEvent("needs-refinement", github.bot_login, github.bot_type))
    report = _dry_run(tmp_path, db)
    assert _digest(db) == before
    with sqlite3.connect(db) as conn:
        names = [r[0] for r in conn.execute("select migration_id from _yoyo_migration")]
    assert "0004_audit_weeks_by_value" not in names
    # the old rows were read (through a migrated copy): the store's last label is planned away
    assert "-needs-refinement" in report.text
    assert "+ready-for-dev" in report.text  # judged VALID, not a fault


def test_a_read_only_store_refuses_writes_and_reads_a_missing_file_as_empty(
    tmp_path: Path,
) -> None:
    missing = Store(tmp_path / "missing.db", read_only=True)
    assert missing.last_gate(REPO, 1) is None
    assert missing.audits(REPO) == []
    with pytest.raises(StoreError, match="opened read-only"):
        missing.record_gate(gate_row())
    missing.close()
    assert not (tmp_path / "missing.db").exists()
    db = _filled(tmp_path / "t.db")
    store = Store(db, read_only=True)
    with pytest.raises(StoreError, match="opened read-only"):
        store.record_audits([audit_row()])
    last = store.last_gate(REPO, 1)
    assert last is not None
    assert last["label"] == "needs-refinement"
    store.close()


@pytest.mark.parametrize("command", ["history", "stats"])
def test_listings_create_no_store(tmp_path: Path, command: str) -> None:
    db = tmp_path / "data" / "triage.db"
    result = CliRunner().invoke(main, [command, "--repo", REPO, "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == []
    assert not db.parent.exists()


# --- a folder the process cannot write ----------------------------------------------------

READER = r"""
import json, os, sys
from pathlib import Path
from click.testing import CliRunner

folder, name = Path(sys.argv[1]), sys.argv[2]
db = folder / name
out = {}
try:
    (folder / "probe").write_text("x")
    out["folder_writable"] = True
except OSError:
    out["folder_writable"] = False

from bot.cli import main
for command in ("history", "stats"):
    r = CliRunner().invoke(main, [command, "--repo", "Codertocat/Hello-World", "--db", str(db),
                                  "--json"])
    out[command] = [r.exit_code, r.stdout, r.stderr]

from bot import gate, runner
from bot.config import Settings
from bot.events import route_event
from tests.support import FakeChatModel, load_webhook
from tests.support.replies import COMPLETE_BODY, VALID_REPLY
from tests.support.fake_github import FakeGitHub
from bot.clients.github_port import LabelEvent
model = FakeChatModel().enqueue(VALID_REPLY)
runner.make_chat_model = lambda *a, **k: model
github = FakeGitHub()  # the bot's label, as the stored row says
github.events[1].append(LabelEvent("needs-refinement", "github-actions[bot]", "Bot"))
runner.make_github = lambda settings, **k: github
payload = load_webhook("issues.opened.18")
payload["issue"]["body"] = COMPLETE_BODY
event = route_event("issues", payload)
try:
    with runner.job_context(Settings(db_path=db, dry_run=True)) as job:
        report = gate.run(job, event)
    out["dry_run"] = report.text
except Exception as exc:
    out["dry_run"] = f"{type(exc).__name__}: {exc}"
out["files"] = sorted(os.listdir(folder))
print(json.dumps(out))
"""


def _unprivileged() -> list[str]:
    """The command prefix that makes a folder's mode bind this test's child process."""
    if os.geteuid() != 0:
        return []
    unshare = shutil.which("unshare")
    if unshare is None or subprocess.run([unshare, "--user", "true"]).returncode != 0:
        pytest.skip("running as root, and no user namespace to drop root's override")
    return [unshare, "--user"]


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "ro"
    folder.mkdir()
    yield folder
    folder.chmod(0o700)


def _read_in(folder: Path, name: str = "triage.db") -> dict[str, Any]:
    folder.chmod(0o500)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [*_unprivileged(), sys.executable, "-c", READER, str(folder), name],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    assert out["folder_writable"] is False  # else the test would prove nothing
    return out


def test_dry_runs_and_listings_work_in_a_read_only_folder(read_only_folder: Path) -> None:
    """A WAL store closed cleanly (no -wal, no -shm): SQLite's mode=ro cannot create the -shm
    it needs, so the store reads the file as immutable. Before the fix: exit 5."""
    _filled(read_only_folder / "triage.db")
    assert sorted(os.listdir(read_only_folder)) == ["triage.db"]
    out = _read_in(read_only_folder)
    code, stdout, stderr = out["history"]
    assert code == 0, stderr
    assert [r["path"] for r in json.loads(stdout)] == ["src/app.py"]
    code, stdout, stderr = out["stats"]
    assert code == 0, stderr
    assert sum(w["audits"] for w in json.loads(stdout)) == 1
    assert "-needs-refinement" in out["dry_run"]  # the stored row was read
    assert "+ready-for-dev" in out["dry_run"]  # judged VALID, not a fault
    assert out["files"] == ["triage.db"]


def _snapshot_with_wal(source: Path, target: Path, *, with_shm: bool) -> None:
    """Copy a store while a writer holds it open with changes only in its -wal (what a killed
    writer leaves behind)."""
    writer = Store(source / "triage.db")
    writer.db.execute("PRAGMA wal_autocheckpoint = 0")
    writer.record_gate(gate_row())
    writer.record_audits([audit_row(repo=REPO)])
    names = ["triage.db", "triage.db-wal"] + (["triage.db-shm"] if with_shm else [])
    for name in names:
        shutil.copy(source / name, target / name)
    writer.close()
    assert (target / "triage.db-wal").stat().st_size > 0


def test_changes_in_a_left_over_wal_are_read_in_a_read_only_folder(
    tmp_path: Path, read_only_folder: Path
) -> None:
    (tmp_path / "src").mkdir()
    _snapshot_with_wal(tmp_path / "src", read_only_folder, with_shm=True)
    out = _read_in(read_only_folder)
    assert [r["path"] for r in json.loads(out["history"][1])] == ["src/app.py"]
    assert "-needs-refinement" in out["dry_run"]
    assert "+ready-for-dev" in out["dry_run"]


def test_a_wal_that_cannot_be_read_is_a_clear_error(tmp_path: Path, read_only_folder: Path) -> None:
    """A -wal with changes but no -shm, in a folder where SQLite cannot create one: reading the
    file alone would silently miss those changes, so the open fails and says why."""
    (tmp_path / "src").mkdir()
    _snapshot_with_wal(tmp_path / "src", read_only_folder, with_shm=False)
    out = _read_in(read_only_folder)
    code, _, stderr = out["history"]
    assert code == 5
    assert "write-ahead log triage.db-wal holds changes" in stderr
    assert out["dry_run"].startswith("StoreError: cannot read the store")


# --- a store from a newer version ---------------------------------------------------------


def _newer(db: Path) -> Path:
    _filled(db)
    with sqlite3.connect(db) as conn:
        conn.execute(
            "insert into _yoyo_migration (migration_hash, migration_id, applied_at_utc) "
            "values ('f', '0099_from_the_future', '2030-01-01')"
        )
    return db


@pytest.mark.parametrize("read_only", [False, True])
def test_a_store_from_a_newer_version_is_refused_at_open(tmp_path: Path, read_only: bool) -> None:
    db = _newer(tmp_path / "t.db")
    before = _digest(db)
    with pytest.raises(StoreError, match="created by a newer triage-bot") as info:
        Store(db, read_only=True) if read_only else Store(db)
    assert "0099_from_the_future" in str(info.value)
    assert "upgrade triage-bot" in str(info.value)
    assert info.value.exit_code == 5
    assert _digest(db) == before


def test_the_cli_names_a_newer_store_with_exit_code_5(tmp_path: Path) -> None:
    db = _newer(tmp_path / "t.db")
    result = CliRunner().invoke(main, ["history", "--repo", REPO, "--db", str(db)])
    assert result.exit_code == 5
    assert "created by a newer triage-bot" in result.stderr


# --- private files ------------------------------------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)  # the usual default, under which SQLite alone makes files 0644
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("umask_022")
def test_a_new_store_and_its_wal_files_are_private(tmp_path: Path) -> None:
    db = tmp_path / "data" / "triage.db"
    store = Store(db)
    store.record_gate(gate_row())  # the -wal and -shm exist while the connection is open
    modes = {p.name: _mode(p) for p in db.parent.iterdir()}
    store.close()
    assert modes == {"triage.db": 0o600, "triage.db-wal": 0o600, "triage.db-shm": 0o600}
    assert _mode(db.parent) == 0o700


@pytest.mark.usefixtures("umask_022")
def test_an_existing_store_is_tightened_when_opened_for_writing(tmp_path: Path) -> None:
    db = _filled(tmp_path / "t.db")
    db.chmod(0o644)
    Store(db).close()
    assert _mode(db) == 0o600
