"""A password or token in a URL never reaches an output (the store URL, the Ollama host, the
GitHub API URL): one rule prints every URL, libpq's own parser (psycopg) reads the database URL,
a driver message that repeats the URL or its password is replaced, and under GitHub Actions each
secret is handed to the runner's masking before anything is printed.

Passwords are generated with the characters URLs and libpq treat specially (``% @ : / ? # &
=``, spaces, ``+``) and any other Unicode, written into the URL percent-encoded (as it should
be) and as typed (raw: libpq and the URL standard may then read it differently). A password is
looked for in every form an output could hold it: as it is, percent-encoded (either case of hex
digits, ``+`` for spaces) and escaped for workflow-command data.
"""

from __future__ import annotations

import logging
import os
import re
import traceback
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus, urlsplit

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bot.cli import main
from bot.config import Settings
from bot.errors import ConfigError, ModelUnavailable, StoreError
from bot.history.pg_store import PostgresStore
from bot.urls import read_url, redact
from tests.support import FakeChatModel, load_webhook, write_payload
from tests.support.pg import fresh_database
from tests.support.profiles import FUZZ

MARK = "Pw7q"
"""Every generated password starts with this: no other text of an output holds it."""

PASSWORDS = st.text(
    st.sampled_from(list("%@:/?#&=+ ;[]\\'\"")) | st.characters(exclude_categories=("Cs",)),
    min_size=1,
    max_size=16,
).map(lambda tail: MARK + tail.replace("\x00", ""))


def _forms(secret: str) -> set[str]:
    """The forms an output could hold ``secret`` in, built here independently of the bot."""
    encoded = {quote(secret, safe=""), quote(secret), quote_plus(secret, safe="")}
    lower = {re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), e) for e in encoded}
    workflow = secret.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return {secret, workflow, *encoded, *lower}


def _leaks(secret: str, texts: dict[str, str]) -> list[str]:
    return [name for name, text in texts.items() for form in _forms(secret) if form in text]


def _urls(password: str) -> dict[str, str]:
    """The URLs a maintainer may write a password into, by name."""
    enc = quote(password, safe="")
    return {
        "userinfo, encoded": f"postgresql://bot:{enc}@db.internal:5432/triage",
        "userinfo, as typed": f"postgresql://bot:{password}@db.internal:5432/triage",
        "query, encoded": f"postgresql://bot@db.internal/triage?sslmode=prefer&password={enc}",
        "query, as typed": f"postgresql://bot@db.internal/triage?password={password}",
        "sslpassword": f"postgres://bot@db.internal/triage?sslpassword={enc}",
        "ollama userinfo": f"http://triage:{enc}@127.0.0.1:11434",
        "ollama token": f"http://127.0.0.1:11434/?token={enc}&keep=1",
        "github api key": f"https://ghe.example/api/v3?api_key={enc}",
    }


@FUZZ
@given(PASSWORDS)
def test_a_shown_url_holds_no_form_of_its_password(password: str) -> None:
    """Whatever the password and wherever it is written, the shown URL holds none of it; a URL
    written as it should be (percent-encoded) is shown, and its password is among the secrets
    the runner is asked to mask."""
    for name, url in _urls(password).items():
        view = read_url(url)
        assert _leaks(password, {name: view.text}) == [], view
        assert MARK not in view.text
        if "encoded" in name or name in ("sslpassword", "ollama userinfo", "ollama token"):
            assert view.problem is None, (name, view)
            assert password in view.secrets, (name, view)
            assert urlsplit(view.text).hostname in ("db.internal", "127.0.0.1")


@FUZZ
@given(PASSWORDS)
@example("Pw7q@#")  # libpq reads "#@db.internal" as the host; the URL standard, a fragment
def test_a_database_url_libpq_reads_otherwise_is_refused_not_shown(password: str) -> None:
    """A password typed with an ``@ / ? #`` that libpq and the URL standard split differently:
    the setting is a configuration error (exit 2) that names the problem, never a piece."""
    url = f"postgresql://bot:{password}@db.internal:5432/triage"
    view = read_url(url)
    if set(password) & set("@/?#"):  # libpq ends the user information at another place
        assert view.problem is not None, view
    if view.problem is None:
        return  # both read the same password: the "userinfo, as typed" case above shows it
    with pytest.raises(ConfigError) as caught:
        Settings.resolve({}, {"TRIAGE_DB": url})
    text = "".join(traceback.format_exception(caught.value))
    assert _leaks(password, {"error": text}) == []
    assert MARK not in text
    assert view.problem in str(caught.value)


# (what, URL with PASSWORD where the password goes): libpq cannot read it, or it fails to connect
BROKEN = [
    ("bad percent-encoding", "postgresql://bot:{pw}%zz@127.0.0.1:{port}/x"),
    ("unresolvable host", "postgresql://bot:{enc}@no-such-host.invalid:5432/x"),
    ("host holding a piece of it", "postgresql://bot:{pw}@x@127.0.0.1:{port}/x"),
    ("refused port", "postgresql://bot:{enc}@127.0.0.1:1/x?connect_timeout=2"),
    ("unknown query option", "postgresql://bot@127.0.0.1:{port}/x?password={enc}&tokn=1"),
    ("password in the query, refused port",
     "postgresql://bot@127.0.0.1:1/x?connect_timeout=2&password={enc}"),
]  # fmt: skip


@pytest.mark.parametrize(("what", "template"), BROKEN, ids=[b[0] for b in BROKEN])
@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(password=PASSWORDS)
def test_a_driver_error_never_repeats_the_password(what: str, template: str, password: str) -> None:
    """libpq's parse errors quote the URI, its resolve errors the host: the store's error is
    built without them (and without chaining the driver's exception)."""
    url = template.format(pw=password, enc=quote(password, safe=""), port=9)
    with pytest.raises(StoreError) as caught:
        PostgresStore(url)
    text = "".join(traceback.format_exception(caught.value))
    assert _leaks(password, {"error": text}) == []
    assert MARK not in text


def test_redact_removes_every_form() -> None:
    """The last net before output: each form of the secret, longest first."""
    secret = "p@ss w%rd/é"
    text = " | ".join(sorted(_forms(secret)))
    assert redact(text, [secret]).replace("***", "").strip(" |") == ""


def _cli(
    tmp_path: Path,
    args: list[str],
    env: dict[str, str],
    caplog: pytest.LogCaptureFixture,
) -> tuple[int, dict[str, str]]:
    """Run the CLI in process and collect every artefact (as tests/security/test_secrets.py
    does)."""
    caplog.set_level(logging.DEBUG)
    full = {
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "outputs.txt"),
        "TRIAGE_MODELS": str(tmp_path / "models"),
        **env,
    }
    result = CliRunner().invoke(main, args, env=full)
    stdout = result.stdout
    masks = [line for line in stdout.split("\n") if line.startswith("::add-mask::")]
    artefacts = {
        "stdout": "\n".join(line for line in stdout.split("\n") if line not in masks),
        "stderr": result.stderr,
        "log": caplog.text + " ".join(r.getMessage() for r in caplog.records),
    }
    if result.exc_info is not None:
        artefacts["exception"] = "".join(traceback.format_exception(*result.exc_info))
    for path in sorted(tmp_path.rglob("*")):
        if path.is_file():
            artefacts[path.name] = path.read_bytes().decode(errors="replace")
    artefacts["masks"] = "\n".join(masks)
    caplog.clear()
    return result.exit_code, artefacts


@pytest.fixture(scope="module")
def migrated_database() -> Iterator[str]:
    """A database on the test server with every migration applied (module-wide: the property
    below runs ``doctor`` against it many times)."""
    for url in fresh_database():
        PostgresStore(url).close()
        yield url


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(password=PASSWORDS)
def test_doctor_on_the_real_server_prints_no_password(
    password: str,
    migrated_database: str,
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``doctor`` on the test server with the password in the URL and in ``?password=`` (the
    server trusts loopback, so it connects), and on an Ollama host with ``?token=``, under
    GitHub Actions: the runner masks each secret first, and no output holds any form of it."""
    tmp_path = tmp_path_factory.mktemp("doctor")
    server = urlsplit(migrated_database)
    enc = quote(password, safe="")
    url = f"postgresql://{server.username}:{enc}@{server.hostname}:{server.port}{server.path}"
    for db in (url, f"{url}?password={enc}"):
        env = {
            "TRIAGE_DB": db,
            "OLLAMA_HOST": f"http://127.0.0.1:9/?token={enc}",
            "GITHUB_ACTIONS": "true",
        }
        code, artefacts = _cli(tmp_path, ["doctor"], env, caplog)
        masks = artefacts.pop("masks")
        assert code == 1  # no model, no token
        assert "ok   store: PostgreSQL postgresql://" in artefacts["stdout"], artefacts
        assert "http://127.0.0.1:9/?token=***" in artefacts["stdout"]
        assert _leaks(password, artefacts) == []
        assert MARK not in "".join(artefacts.values())
        data = password.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        assert f"::add-mask::{data}" in masks.split("\n")


@pytest.mark.parametrize(("what", "template"), BROKEN, ids=[b[0] for b in BROKEN])
@pytest.mark.parametrize("command", [["history", "--repo", "o/r"], ["doctor"]])
def test_a_failing_command_prints_no_password(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    what: str,
    template: str,
    command: list[str],
) -> None:
    """A store URL that libpq cannot read or cannot connect with, under GitHub Actions: a URL
    that cannot be used is a configuration error (exit 2), a server that cannot be reached a
    store error (``history``: exit 5) or a FAIL line (``doctor``); no form of the password in
    any output or file, and its masks come first."""
    password = "Pw7q%z@x:/?#y é"
    port = urlsplit(os.environ.get("TRIAGE_TEST_PG_URL") or "postgresql://h:9").port
    url = template.format(pw=password, enc=quote(password, safe=""), port=port)
    env = {"TRIAGE_DB": url, "GITHUB_ACTIONS": "true"}
    code, artefacts = _cli(tmp_path, command, env, caplog)
    masks = artefacts.pop("masks")
    if read_url(url).problem:  # refused as configuration before anything runs
        assert code == 2, artefacts
        assert artefacts["stderr"].startswith("triage-bot: error: invalid value for TRIAGE_DB")
    elif command[0] == "history":
        assert code == 5, artefacts
        assert artefacts["stderr"].startswith("triage-bot: error: cannot open the store at ")
    else:
        assert code == 1
        assert "FAIL store: " in artefacts["stdout"], artefacts
    assert _leaks(password, artefacts) == []
    assert MARK not in "".join(artefacts.values())
    assert masks.startswith("::add-mask::")


NOT_A_STORE = [
    ("keyword string", "host=127.0.0.1 port=1 password={kw} dbname=x"),
    ("keyword string, spaced", "dbname = x  sslpassword = {kw}  host=db"),
    ("keyword string, password only", "password={kw}"),
    ("another scheme", "mysql://bot:{enc}@127.0.0.1/db"),
    ("sqlite scheme", "sqlite://bot:{enc}@localhost/triage.db"),
]
"""Store values that would otherwise name a SQLite file: a libpq keyword string (its password
printed as the file's name) and a URL of a scheme the bot has no store for."""


def _keyword_value(password: str) -> str:
    """``password`` as a libpq keyword string's single-quoted value."""
    return "'" + password.replace("\\", "\\\\").replace("'", "\\'") + "'"


@pytest.mark.parametrize(("what", "template"), NOT_A_STORE, ids=[n[0] for n in NOT_A_STORE])
@pytest.mark.parametrize("command", [["history", "--repo", "o/r"], ["doctor"]])
@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(password=PASSWORDS)
def test_a_value_that_is_not_a_store_is_refused_and_its_password_never_shown(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    what: str,
    template: str,
    command: list[str],
    password: str,
) -> None:
    """Exit 2 before anything runs, no form of the password anywhere, its mask first; and no
    SQLite file is created in its name."""
    value = template.format(kw=_keyword_value(password), enc=quote(password, safe=""))
    env = {"TRIAGE_DB": value, "GITHUB_ACTIONS": "true"}
    before = set(Path.cwd().iterdir())
    code, artefacts = _cli(tmp_path, command, env, caplog)
    masks = artefacts.pop("masks")
    assert code == 2, artefacts
    assert artefacts["stderr"].startswith("triage-bot: error: invalid value for TRIAGE_DB")
    assert _leaks(password, artefacts) == []
    assert MARK not in "".join(artefacts.values())
    assert masks.startswith("::add-mask::")
    assert set(Path.cwd().iterdir()) == before


@pytest.mark.parametrize("name", ["a=b.db", "x@y.db", "triage.db", "dir=1/state@2.sqlite"])
def test_a_file_path_with_equals_or_at_signs_is_still_a_sqlite_store(name: str) -> None:
    from bot.stores import store_target

    assert store_target(f"/tmp/{name}") == f"/tmp/{name}"


@pytest.mark.parametrize(
    ("url", "shown", "usable"),
    [
        ("postgresql://bot:p%40ss@db:5432/triage?sslmode=require",
         "postgresql://db:5432/triage?sslmode=require", True),
        ("postgres://bot:pw@/triage?host=/run/postgresql&password=x",
         "postgres:///triage?host=/run/postgresql&password=***", True),
        ("postgresql://h1:5432,h2:5433/triage", "postgresql://h1:5432,h2:5433/triage", True),
        ("postgresql://bot:p\ud800w@db/triage", "postgresql://…", False),  # a lone surrogate
        ("postgresql://bot@db/triage?token=1", "postgresql://…", False),  # unknown to libpq
        ("postgresql://bot:pw@db:port/triage", "postgresql://…", False),
        ("http://ollama:11434/?token=ollama", "http://…", True),  # the token is the host's name
        ("http://u:pw@127.0.0.1:11434/?api_key=k3y-value&x=1#frag",
         "http://127.0.0.1:11434/?api_key=***&x=***", True),  # every value of an HTTP URL
        ("https://gw.example/v1/deploy?sig=Zx9&code=abc&flag",
         "https://gw.example/v1/deploy?sig=***&code=***&flag", True),
        ("triage:pw@127.0.0.1:9", "…", False),
    ],
)  # fmt: skip
def test_urls_as_shown(url: str, shown: str, usable: bool) -> None:
    """A table of variants: what is shown, and whether the URL may be used at all."""
    view = read_url(url)
    assert view.text == shown
    assert (view.problem is None) == usable


def test_a_gate_run_on_the_shared_store_prints_no_password(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    migrated_database: str,
    github: object,
    model: FakeChatModel,
) -> None:
    """The action's command under GitHub Actions, with the password in the store URL (and in
    its query), a token in the Ollama host and in the GitHub API URL: the model fails, so a
    warning names the host; stdout, stderr, the step summary and the outputs hold no form of
    any of them, and every one is masked before the first other line."""
    model.enqueue(ModelUnavailable("Ollama at http://127.0.0.1:9/?token=*** is unreachable"))
    password = "Pw7q%z@x:/?#y é"
    enc = quote(password, safe="")
    server = urlsplit(migrated_database)
    where = f"{server.hostname}:{server.port}{server.path}"
    env = {
        "TRIAGE_DB": f"postgresql://{server.username}:{enc}@{where}?password={enc}",
        "OLLAMA_HOST": f"http://127.0.0.1:9/?token={enc}",
        "GITHUB_API_URL": f"http://127.0.0.1:9/?access_token={enc}",
        "GITHUB_ACTIONS": "true",
    }
    event = write_payload(tmp_path, load_webhook("issues.opened.18"))
    args = ["run", "--dry-run", "--event-name", "issues", "--event-path", str(event)]
    code, artefacts = _cli(tmp_path, args, env, caplog)
    masks = artefacts.pop("masks")
    assert code == 0, artefacts
    assert "::warning title=triage-bot::validator-error" in artefacts["stdout"]
    assert "validator-error" in artefacts["summary.md"]
    assert _leaks(password, artefacts) == []
    assert MARK not in "".join(artefacts.values())
    assert f"::add-mask::{password.replace('%', '%25')}" in masks.split("\n")
