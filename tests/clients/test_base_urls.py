"""A model server's base URL (``TRIAGE_OPENAI_BASE_URL``, ``OLLAMA_HOST``): shown as scheme,
host, port and path with every query value masked; its query sent with every request (a
gateway's ``?api-version=``) instead of glued into the paths; user information (``user:pass@``)
refused when the settings are read, with exit 2 and nothing of it shown."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from bot.chat import ChatMessage
from bot.cli import main
from bot.clients.model_http import server_address
from bot.clients.ollama_client import OllamaChatModel, ollama_models
from bot.clients.openai_client import OpenAIChatModel, openai_models
from bot.config import VALIDATOR_OPTIONS, Settings
from bot.errors import ConfigError, ModelError
from bot.retry import RetryPolicy
from bot.urls import read_url, shown_url
from tests.support.fake_openai import Answer, FakeOpenAI, Received, fake_openai_server
from tests.support.profiles import FUZZ, HTTP_FUZZ

MARK = "Qv7"
"""Every generated query value starts with this: nothing else of an output holds it."""

SETTINGS = ["TRIAGE_OPENAI_BASE_URL", "OLLAMA_HOST"]

NAMES = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz-_0123456789"), min_size=1, max_size=10)
VALUES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12).map(
    lambda tail: MARK + tail
)
QUERIES = st.dictionaries(NAMES, VALUES, min_size=1, max_size=4)
SEGMENTS = st.text(st.sampled_from("abcdefghij0123456789-._~"), min_size=1, max_size=8).filter(
    lambda part: part not in (".", "..")  # dot segments: every URL parser removes them (RFC 3986)
)
PATHS = st.lists(SEGMENTS, max_size=3).map(lambda parts: "".join(f"/{p}" for p in parts))


@FUZZ
@given(path=PATHS, query=QUERIES, port=st.sampled_from(["", ":8080", ":443"]))
def test_a_server_url_is_shown_with_every_query_value_masked(
    path: str, query: dict[str, str], port: str
) -> None:
    url = f"https://gw.example{port}{path}?{urlencode(query)}"
    shown = shown_url(url)
    assert MARK not in shown
    assert shown == f"https://gw.example{port}{path}?" + "&".join(
        f"{quote(name, safe='')}=***" for name in query
    )
    long_values = {value for value in query.values() if len(value) >= 8}
    assert long_values <= set(read_url(url).secrets)  # masked by the runner, redacted


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:9/v1?sig=Zk4sig&code=Zk4code", "http://127.0.0.1:9/v1?sig=***&code=***"),
        ("http://gw:8080/openai/deployments/d1/v1?api-version=2024-02-01",
         "http://gw:8080/openai/deployments/d1/v1?api-version=***"),
        ("http://h/v1?flag&x=", "http://h/v1?flag&x=***"),
        ("http://h:11434", "http://h:11434"),
    ],
)  # fmt: skip
def test_server_urls_as_shown(url: str, shown: str) -> None:
    assert shown_url(url) == shown


@pytest.mark.parametrize(
    ("url", "address", "query"),
    [
        ("http://h:8080/v1", "http://h:8080/v1", {}),
        ("http://h:8080/v1/?api-version=2024-02-01", "http://h:8080/v1/",
         {"api-version": "2024-02-01"}),
        ("https://gw/a/b?x=a%20b&y=&z=%26", "https://gw/a/b", {"x": "a b", "y": "", "z": "&"}),
        ("http://u:pw@h/v1?k=v#frag", "http://h/v1", {"k": "v"}),
    ],
)  # fmt: skip
def test_server_address(url: str, address: str, query: dict[str, str]) -> None:
    assert server_address(url) == (address, query)


@pytest.mark.parametrize("setting", SETTINGS)
def test_doctor_shows_the_model_url_with_every_query_value_masked(setting: str) -> None:
    base = "http://127.0.0.1:9/v1" if setting == "TRIAGE_OPENAI_BASE_URL" else "http://127.0.0.1:9"
    url = f"{base}?sig=Zk4sigvalue&code=Zk4c0de&region=Zk4eu"
    result = CliRunner().invoke(main, ["doctor"], env={setting: url, "TRIAGE_MODEL_TIMEOUT": "5"})
    fail = next(line for line in result.stdout.splitlines() if line.startswith("FAIL model"))
    assert f"{base}?sig=***&code=***&region=***" in fail
    assert "Zk4" not in result.output


# --- the query goes with every request -------------------------------------------------------

EVERY_SHAPE = {
    "choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
    "message": {"role": "assistant", "content": "ok"},
    "data": [{"id": "m"}],
    "models": [{"model": "m"}],
}


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    def answer(_request: Received) -> Answer:
        return Answer(200, EVERY_SHAPE)

    with fake_openai_server(answer) as running:
        yield running


ONCE = RetryPolicy(attempts=1)
OPENAI_CALLS: list[tuple[str, Any]] = [
    ("/chat/completions", lambda base: OpenAIChatModel(base_url=base, model="m", timeout_s=10,
                                                       retry=ONCE).chat(
        [ChatMessage("user", "x")], options=VALIDATOR_OPTIONS)),
    ("/models", lambda base: openai_models(base, None, timeout_s=10)),
]  # fmt: skip
OLLAMA_CALLS: list[tuple[str, Any]] = [
    ("/api/chat", lambda base: OllamaChatModel(host=base, model="m", timeout_s=10,
                                               retry=ONCE).chat(
        [ChatMessage("user", "x")], options=VALIDATOR_OPTIONS)),
    ("/api/tags", lambda base: ollama_models(base, timeout_s=10)),
]  # fmt: skip


def _origin(server: FakeOpenAI) -> str:
    return server.url.removesuffix("/v1")


@HTTP_FUZZ
@given(prefix=PATHS, query=QUERIES, data=st.data())
def test_the_query_goes_with_every_request_and_the_paths_stay_whole(
    server: FakeOpenAI, prefix: str, query: dict[str, str], data: st.DataObject
) -> None:
    backend = data.draw(st.sampled_from(["openai", "ollama"]))
    path, call = data.draw(st.sampled_from(OPENAI_CALLS if backend == "openai" else OLLAMA_CALLS))
    root = f"{prefix}/v1" if backend == "openai" else prefix
    server.received.clear()
    call(f"{_origin(server)}{root}?{urlencode(query)}")
    sent = urlsplit(server.received[0].path)
    assert sent.path == f"{root}{path}"
    assert parse_qs(sent.query, keep_blank_values=True) == {k: [v] for k, v in query.items()}


@pytest.mark.parametrize(("path", "call"), OLLAMA_CALLS, ids=[c[0] for c in OLLAMA_CALLS])
def test_ollama_gets_no_key_from_the_environment(
    server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, path: str, call: Any
) -> None:
    """The ``ollama`` package sends ``OLLAMA_API_KEY`` as a bearer token; the bot sends Ollama
    no credential (the settings do not read that variable, nor mask it)."""
    monkeypatch.setenv("OLLAMA_API_KEY", "Zk4key")
    server.received.clear()
    call(_origin(server))
    assert server.received[0].path == path
    assert "authorization" not in server.received[0].headers


@pytest.mark.parametrize(("path", "call"), OLLAMA_CALLS, ids=[c[0] for c in OLLAMA_CALLS])
@pytest.mark.parametrize("host", ["HTTP://127.0.0.1", "Http://LOCALHOST"])
def test_an_ollama_host_in_capitals_is_asked_at_its_own_origin(
    host: str, path: str, call: Any
) -> None:
    """The ``ollama`` package takes a scheme it does not know (``HTTP``) for port 11434; the
    bot asks the host's own origin (port 80 here, where nothing listens), none refused."""
    refused = ""
    try:
        call(host)
    except ModelError as exc:
        refused = str(exc)
    assert "another origin" not in refused


# --- user information is refused --------------------------------------------------------------

USERINFO = ["triage:Zk4pw@", "triage@", ":Zk4pw@", "Zk4%40u:Zk4%3Apw@", "@"]


@pytest.mark.parametrize("userinfo", USERINFO)
@pytest.mark.parametrize(
    "variable",
    ["TRIAGE_OPENAI_BASE_URL", "INPUT_OPENAI-BASE-URL", "OLLAMA_HOST", "INPUT_OLLAMA_HOST"],
)
def test_user_information_in_a_server_url_is_refused(variable: str, userinfo: str) -> None:
    url = f"http://{userinfo}127.0.0.1:8080/v1"
    with pytest.raises(ConfigError, match="no user name or password") as caught:
        Settings.resolve({}, {variable: url})
    assert caught.value.exit_code == 2
    assert "Zk4" not in str(caught.value)
    assert "triage" not in str(caught.value)


@pytest.mark.parametrize("flag", ["--openai-base-url", "--ollama-host"])
def test_the_cli_exits_2_without_showing_the_credentials(flag: str) -> None:
    result = CliRunner().invoke(main, ["doctor", flag, "http://bot:Zk4pw@127.0.0.1:8080/v1"])
    assert result.exit_code == 2
    assert "no user name or password" in result.stderr
    assert "Zk4" not in result.output


@pytest.mark.parametrize("setting", SETTINGS)
def test_a_query_name_given_twice_is_refused(setting: str) -> None:
    with pytest.raises(ConfigError, match="each query name once"):
        Settings.resolve({}, {setting: "http://h:8080/v1?a=1&a=2"})


@pytest.mark.parametrize("setting", SETTINGS)
def test_a_query_is_accepted(setting: str) -> None:
    settings = Settings.resolve({}, {setting: "http://h:8080/v1?api-version=2024-02-01"})
    assert "api-version=2024-02-01" in str(
        settings.openai_base_url if setting == SETTINGS[0] else settings.ollama_host
    )
