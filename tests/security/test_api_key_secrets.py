"""The model server's API key never leaves the process: not in stdout or stderr, the step
summary, the outputs, the log records or an error message, whether it is given as the variable
or the action input, under GitHub Actions or not, and even when the server echoes it back (in an
error, in the reply, as a model id the doctor lists). It does reach the server, in the
``Authorization`` header.

Keys are generated from every visible ASCII character (what an HTTP header carries: ``%``,
quotes, backslashes, markdown punctuation …); each starts with :data:`MARK`, which no other
text of an output holds, so a key found in any form, escaped or cut, is found by its mark.
"""

from __future__ import annotations

import base64
import logging
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.cli import main
from bot.clients.openai_client import OpenAIChatModel
from bot.config import Settings
from bot.errors import ConfigError
from bot.neutralise import command_data
from tests.support import ROOT
from tests.support.fake_github import FakeGitHub
from tests.support.fake_openai import Answer, Received, completion, fake_openai_server

MARK = "Ky9q"
KEYS = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=4, max_size=40).map(
    lambda tail: f"sk-{MARK}{tail}"
)
EXAMPLE = str(ROOT / "examples" / "issues.opened.json")
PER_KEY = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _forms(key: str) -> set[str]:
    """Forms an output could hold ``key`` in, built here independently of the bot."""
    encoded = {quote(key, safe=""), quote(key), quote_plus(key, safe="")}
    json_escaped = key.replace("\\", "\\\\").replace('"', '\\"')
    return {key, json_escaped, command_data(key), *encoded, *_base64(key)}


def _base64(key: str) -> tuple[str, str]:
    """``key`` base64-encoded: padded, and URL-safe without padding."""
    raw = key.encode()
    return base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _echo_key(request: Received) -> str:
    return request.headers.get("authorization", "").removeprefix("Bearer ")


def _refuse_echoing(request: Received) -> Answer:
    """A 401 whose message repeats the key it was sent (as some proxies do)."""
    key = _echo_key(request)
    padded, url_safe = _base64(key)
    message = f"Incorrect API key provided: {key} (as base64: {padded}, {url_safe})"
    return Answer(401, {"error": {"message": message, "type": "invalid_request_error"}})


def _reply_with_key(request: Received) -> Answer:
    """A 200 whose reply is the key (the model says it), and a model list that names it."""
    key = _echo_key(request)
    if request.path.endswith("/models"):
        return Answer(200, {"object": "list", "data": [{"id": key, "object": "model"}]})
    return completion(f"Your key is {key} and this is not JSON")


def _cli(
    args: list[str], env: dict[str, str], caplog: pytest.LogCaptureFixture
) -> tuple[int, dict[str, str]]:
    """Run the CLI; the exit code and every artefact by name (``::add-mask::`` lines apart:
    the runner reads them as commands and never shows them)."""
    caplog.clear()
    caplog.set_level(logging.DEBUG)
    folder = Path(tempfile.mkdtemp(prefix="key-secrets-"))
    full_env = {
        "GITHUB_STEP_SUMMARY": str(folder / "summary.md"),
        "GITHUB_OUTPUT": str(folder / "outputs.txt"),
        "TRIAGE_DB": str(folder / "triage.db"),
        **env,
    }
    result = CliRunner().invoke(main, args, env=full_env)
    lines = result.stdout.split("\n")
    artefacts = {
        "stdout": "\n".join(line for line in lines if not line.startswith("::add-mask::")),
        "masks": "\n".join(line for line in lines if line.startswith("::add-mask::")),
        "stderr": result.stderr,
        "log": "\n".join(
            f"{r.name} {r.getMessage()} {r.exc_text or ''} {r.args!r}" for r in caplog.records
        ),
    }
    if result.exc_info is not None and result.exc_info[0] is not SystemExit:
        artefacts["exception"] = "".join(traceback.format_exception(*result.exc_info))
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            artefacts[path.name] = path.read_bytes().decode(errors="replace")
    return result.exit_code, artefacts


def _leaks(key: str, artefacts: dict[str, str]) -> list[str]:
    shown = {name: text for name, text in artefacts.items() if name != "masks"}
    found = [name for name, text in shown.items() for form in _forms(key) if form in text]
    return found + [f"{name} (mark)" for name, text in shown.items() if MARK in text]


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> FakeGitHub:
    """No repository file and no GitHub request (the runner's client is a fake)."""
    from bot import runner

    fake = FakeGitHub()
    monkeypatch.setattr(runner, "make_github", lambda settings, **k: fake.built_for(None))
    return fake


@pytest.mark.parametrize(
    "answer", [_refuse_echoing, _reply_with_key], ids=["401 echoing it", "reply holding it"]
)
@PER_KEY
@given(key=KEYS, by_input=st.booleans(), in_actions=st.booleans())
def test_a_gate_run_never_shows_the_key(
    answer: Callable[[Received], Answer],
    key: str,
    by_input: bool,
    in_actions: bool,
    github: FakeGitHub,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``run --dry-run`` on the README's example: the server echoes the key; the gate fails
    closed (validator-error) and no output holds any form of the key."""
    with fake_openai_server(answer) as server:
        env = {
            "TRIAGE_OPENAI_BASE_URL": server.url,
            ("INPUT_OPENAI_API_KEY" if by_input else "TRIAGE_OPENAI_API_KEY"): key,
            **({"GITHUB_ACTIONS": "true"} if in_actions else {}),
        }
        code, artefacts = _cli(
            ["run", "--dry-run", "--event-name", "issues", "--event-path", EXAMPLE], env, caplog
        )
    assert code == 0, artefacts
    assert [r.headers["authorization"] for r in server.received] == [f"Bearer {key}"]
    assert "validator-error" in artefacts["stdout"]
    assert "label=validator-error" in artefacts["outputs.txt"]
    assert "validator-error" in artefacts["summary.md"]
    assert _leaks(key, artefacts) == []
    if in_actions:  # handed to the runner's masking before anything else is printed
        assert artefacts["masks"].split("\n")[0] == f"::add-mask::{command_data(key)}"


@PER_KEY
@given(key=KEYS, in_actions=st.booleans())
def test_doctor_never_shows_the_key(
    key: str, in_actions: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """``doctor`` on a server that lists the key as a model id and says it in a reply."""
    with fake_openai_server(_reply_with_key) as server:
        env = {
            "TRIAGE_OPENAI_BASE_URL": server.url,
            "TRIAGE_OPENAI_API_KEY": key,
            "TRIAGE_VALIDATOR_MODEL": "fake",
            **({"GITHUB_ACTIONS": "true"} if in_actions else {}),
        }
        code, artefacts = _cli(["doctor"], env, caplog)
    assert code == 1  # the model it wants is not listed, and there is no token
    assert "FAIL model: OpenAI-compatible server" in artefacts["stdout"], artefacts
    assert "(it lists: ***)" in artefacts["stdout"]
    assert _leaks(key, artefacts) == []


@pytest.mark.parametrize(
    "key",
    ["short", "sk-Ky9q with space", "sk-Ky9q\u00e9accent", "sk-Ky9q\ttab99", "sk-Ky9q\x7fdel99"],
)
def test_a_key_that_cannot_be_sent_is_refused_without_being_shown(
    key: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Fewer than 8 characters, or a character a header cannot carry: exit 2, naming the
    variable, never the value."""
    code, artefacts = _cli(["doctor"], {"TRIAGE_OPENAI_API_KEY": key}, caplog)
    assert code == 2
    assert artefacts["stderr"].startswith(
        "triage-bot: error: invalid value for TRIAGE_OPENAI_API_KEY: '***' (must be at least 8"
    )
    assert key not in "".join(artefacts.values())
    with pytest.raises(ConfigError) as caught:
        Settings.resolve({}, {"TRIAGE_OPENAI_API_KEY": key})
    assert key not in str(caught.value)


@given(key=KEYS)
@settings(max_examples=50, deadline=None)
def test_the_key_is_not_in_the_settings_repr_nor_in_the_clients_errors(key: str) -> None:
    """Library use too: ``repr(settings)`` leaves the key out, and the backend's own error for
    a server that repeats it holds no form of it."""
    settings_ = Settings.resolve({}, {"TRIAGE_OPENAI_API_KEY": key})
    assert settings_.openai_api_key == key
    assert MARK not in repr(settings_)
    with fake_openai_server(_refuse_echoing) as server:
        model = OpenAIChatModel(base_url=server.url, model="m", api_key=key, timeout_s=5)
        try:
            model.models()
        except Exception as exc:  # the translated error, whatever its class
            message = str(exc)
        else:
            message = ""
    assert "refused the API key (401)" in message
    assert MARK not in message


_DETAIL_PREFIX = 8
"""The shortest piece of a key that counts as a leak."""


@given(
    key=KEYS,
    before=st.integers(min_value=0, max_value=260),
    status=st.sampled_from([401, 403, 404, 422, 429, 500]),
    encoded=st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_a_key_anywhere_in_a_long_server_message_leaves_no_piece_in_the_error(
    key: str, before: int, status: int, encoded: bool
) -> None:
    """The server's text is shortened for the message; a key at any position (inside the kept
    part, straddling the cut, past it), as it is or percent-encoded, leaves no piece of
    :data:`_DETAIL_PREFIX` or more characters."""
    import httpx2
    import openai

    from bot.clients.openai_client import translate_openai_error

    echoed = quote(key, safe="") if encoded else key
    message = "." * before + echoed + " was refused" + "." * 300
    response = httpx2.Response(status, request=httpx2.Request("POST", "http://h/v1/chat"))
    exc = openai.APIStatusError(message, response=response, body=None)
    out = str(translate_openai_error(exc, model="m", base_url="http://h/v1", api_key=key))
    assert MARK not in out
    assert not any(form[:_DETAIL_PREFIX] in out for form in _forms(key))
