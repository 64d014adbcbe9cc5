"""The wheel the action installs, built for real and run against the real PostgreSQL server.

``scripts/action_venv.sh`` installs triage-bot with ``pip install --no-deps
--no-build-isolation ACTION_PATH``: pip builds a wheel from the action's files with the locked
setuptools and installs it. Here the same build runs once per session on a copy of those files
(pip builds in the source tree, and the checkout must stay clean), the wheel goes into a new venv
(its dependencies are the locked ones of this environment, reached through a ``.pth`` file:
offline, and no copy of the checkout's ``bot/``), and every command runs from a folder outside
the checkout, so ``bot`` can only come from the wheel. The PostgreSQL part uses the server of
``tests/support/pg.py`` (``.ci/run`` starts one and requires it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import ROOT
from tests.support.pg import fresh_database

# What scripts/action_venv.sh counts as installed (its installed_files), less the lock.
BUILD_FILES = ("pyproject.toml", "README.md", "bot")

WRITE_ROWS = """
import sys
from bot.config import Settings
from bot.factory import make_store
from bot.history.protocol import AuditRow, GateRow

store = make_store(Settings(db_path=sys.argv[1]))
store.record_gate(GateRow("o/r", 7, "issues.opened", "VALID", "ready-for-dev", "complete",
                          None, "qwen2.5-coder:1.5b", "v3", 300, 40, 900.0, content_sha="ab12"))
store.record_audits([AuditRow("o/r", 2, "c0ffee", "src/app.py", 1, 20, "GO", "High", False,
                              "json", "qwen2.5-coder:1.5b", "v3", 500, 90, 1500.0, "body")])
store.close()
"""


@dataclass(frozen=True)
class Installed:
    """The built wheel and the venv it is installed in (commands run in ``workdir``)."""

    wheel: Path
    venv: Path
    workdir: Path

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """A command of the venv's ``bin`` (``triage-bot``, ``python``), with only the
        variables given (and ``PATH``), from outside the checkout."""
        full_env = {"PATH": os.environ["PATH"], "HOME": str(self.workdir), **(env or {})}
        return subprocess.run(
            [str(self.venv / "bin" / args[0]), *args[1:]],
            cwd=self.workdir,
            env=full_env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    """Build the wheel once, install it with ``--no-deps`` into a new venv."""
    base = tmp_path_factory.mktemp("wheel")
    source = base / "source"
    source.mkdir()
    for name in BUILD_FILES:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.py[co]")
            )
        else:
            shutil.copy2(ROOT / name, source / name)
    wheels = base / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run(
        [*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir",
         str(wheels), str(source)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    (wheel,) = wheels.glob("triage_bot-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    ours = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    # after the venv's own site-packages: the wheel's bot/ wins over anything found there
    Path(site, "locked_dependencies.pth").write_text("\n".join(sorted(ours)) + "\n")
    subprocess.run(
        [*pip, "--python", str(python), "install", "--quiet", "--no-deps", "--no-index",
         str(wheel)],
        check=True, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    workdir = base / "work"
    workdir.mkdir()
    return Installed(wheel, venv, workdir)


@pytest.fixture
def pg_url() -> Iterator[str]:
    yield from fresh_database()


def _package_data() -> list[str]:
    """Every file of ``bot/`` in the checkout that is not Python source or bytecode."""
    return sorted(
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / "bot").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".py", ".pyc")
    )


def test_the_wheel_holds_every_file_of_the_package(installed: Installed) -> None:
    """Prompts, the gate rule, the migrations, py.typed: what the checkout has under
    ``bot/`` is what the wheel installs (a data file missing from package-data fails here)."""
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    data = _package_data()
    assert any(name.startswith("bot/history/migrations/") for name in names)
    assert [name for name in data if name not in names] == []
    sources = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "bot").rglob("*.py"))
    assert [name for name in sources if name not in names] == []


def test_the_installed_package_is_the_wheels(installed: Installed) -> None:
    """``bot`` comes from the venv (not the checkout), and ships its migration files."""
    probe = (
        "import json, bot; from bot.history.migrate import MIGRATIONS_DIR;"
        "print(json.dumps([bot.__file__, sorted(p.name for p in MIGRATIONS_DIR.glob('*.py'))]))"
    )
    result = installed.run("python", "-c", probe)
    assert result.returncode == 0, result.stderr
    where, migrations = json.loads(result.stdout)
    assert Path(where).is_relative_to(installed.venv)
    assert migrations == sorted(p.name for p in (ROOT / "bot/history/migrations").glob("*.py"))


def _store_line(result: subprocess.CompletedProcess[str]) -> str:
    (line,) = [line for line in result.stdout.splitlines() if " store: " in line]
    return line


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_the_installed_cli_runs_the_store(installed: Installed, kind: str, request: Any) -> None:
    """From the installed wheel, on a new store: ``doctor`` warns it is not migrated yet and
    names the pending migrations, the read commands migrate it, a gate decision and an audit
    are written and read back, and then ``doctor`` finds every migration the package ships."""
    if kind == "sqlite":
        target = str(installed.workdir / f"{request.node.name}.db")
    else:
        target = request.getfixturevalue("pg_url")
    env = {"TRIAGE_DB": target}
    if kind == "postgresql":
        before = installed.run("triage-bot", "doctor", env=env)
        assert before.returncode == 1  # no token (and no model): the store only warns
        assert _store_line(before).startswith("warn store: "), before.stdout
        assert "not migrated yet: the first job migrates it (0 of " in _store_line(before)
        assert "0001_schema, 0002_github_memory" in _store_line(before)
    for command in (["history"], ["stats"], ["stats", "--gate"]):
        read = installed.run("triage-bot", *command, "--repo", "o/r", env=env)
        assert read.returncode == 0, read.stderr
    wrote = installed.run("python", "-c", WRITE_ROWS, target)
    assert wrote.returncode == 0, wrote.stderr
    history = installed.run("triage-bot", "history", "--repo", "o/r", "--json", env=env)
    assert history.returncode == 0, history.stderr
    assert [row["path"] for row in json.loads(history.stdout)] == ["src/app.py"]
    gate = installed.run("triage-bot", "stats", "--gate", "--repo", "o/r", "--json", env=env)
    assert gate.returncode == 0, gate.stderr
    assert sum(week["decisions"] for week in json.loads(gate.stdout)) == 1
    after = installed.run("triage-bot", "doctor", env=env)
    assert _store_line(after).startswith("ok   store: "), after.stdout
    assert "reachable and migrated" in _store_line(after)
