"""A model server that redirects to another origin (scheme, host, port) gets nothing sent there,
on either backend, for the chat call and for the listings ``triage-bot doctor`` reads: the call
fails as a rejected request that names the base URL and says it redirected to another origin,
never where to. A redirect within the origin is followed.

Two loopback servers (tests/support/fake_openai.py): ``home``, the configured one, redirects its
first
request of each path to the ``Location`` under test and answers everything under ``/moved``
with a body every reply shape takes; ``away`` is another origin, which must never be asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from bot.chat import ChatMessage
from bot.cli import main
from bot.clients.ollama_client import OllamaChatModel, ollama_models
from bot.clients.openai_client import OpenAIChatModel, openai_models
from bot.config import VALIDATOR_OPTIONS
from bot.errors import ModelRequestRejected
from bot.retry import RetryPolicy
from bot.urls import shown_url
from tests.support import ROOT
from tests.support.fake_openai import Answer, FakeOpenAI, Received, fake_openai_server
from tests.support.profiles import HTTP_FUZZ

ONCE = RetryPolicy(attempts=1)
SECRET = "Zq9SECRETpart"

EVERY_SHAPE = {
    "choices": [{"finish_reason": "stop", "message": {"role": "assistant", "content": "moved"}}],
    "message": {"role": "assistant", "content": "moved"},
    "data": [{"id": "m"}],
    "models": [{"model": "m"}],
}
"""A reply every shape reads: a chat completion, an Ollama chat reply, and both listings."""


@dataclass
class World:
    """The configured server, another origin, and where ``home`` redirects to."""

    home: FakeOpenAI
    away: FakeOpenAI
    status: int = 307
    location: str = "/moved"
    redirected: set[str] = field(default_factory=set)

    def answer(self, request: Received) -> Answer:
        if request.path.startswith("/moved"):
            return Answer(200, EVERY_SHAPE)
        return Answer(self.status, "", {"location": self.location, "content-type": "text/plain"})

    def port(self, server: FakeOpenAI) -> int:
        return int(server.url.rsplit(":", 1)[1].split("/")[0])

    def reset(self, status: int, location: str) -> None:
        self.status, self.location = status, location
        self.home.received.clear()
        self.away.received.clear()


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    holder: list[World] = []
    with (
        fake_openai_server(lambda r: holder[0].answer(r)) as home,
        fake_openai_server(lambda r: Answer(200, EVERY_SHAPE)) as away,
    ):
        holder.append(World(home, away))
        yield holder[0]


def _base(server: FakeOpenAI) -> str:
    return server.url.removesuffix("/v1")


Call = Callable[[str], Any]

CALLS: list[tuple[str, Call, str]] = [
    ("openai chat", lambda base: OpenAIChatModel(
        base_url=f"{base}/v1", model="m", timeout_s=10, retry=ONCE
    ).chat([ChatMessage("user", "x")], options=VALIDATOR_OPTIONS), "/v1"),
    ("openai models", lambda base: openai_models(f"{base}/v1", None, timeout_s=10), "/v1"),
    ("ollama chat", lambda base: OllamaChatModel(
        host=base, model="m", timeout_s=10, retry=ONCE
    ).chat([ChatMessage("user", "x")], options=VALIDATOR_OPTIONS), ""),
    ("ollama tags", lambda base: ollama_models(base, timeout_s=10), ""),
]  # fmt: skip
"""Each backend's calls against a base (scheme, host and port), and the path its URL adds."""


def _away_locations(world: World) -> list[tuple[str, str]]:
    home, away = world.port(world.home), world.port(world.away)
    return [
        ("another port", f"http://127.0.0.1:{away}/moved"),
        ("another port, scheme-relative", f"//127.0.0.1:{away}/moved"),
        ("another host, same port", f"http://localhost:{home}/moved"),
        ("another scheme", f"https://127.0.0.1:{home}/moved"),
        ("credentials and secrets", f"http://u:{SECRET}@127.0.0.1:{away}/moved?token={SECRET}"),
        ("no host", "http:/moved"),
    ]


AWAY = [
    "another port",
    "another port, scheme-relative",
    "another host, same port",
    "another scheme",
    "credentials and secrets",
    "no host",
]


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize("where", AWAY)
@pytest.mark.parametrize(("what", "call", "suffix"), CALLS, ids=[c[0] for c in CALLS])
def test_a_redirect_to_another_origin_is_refused_and_nothing_sent_there(
    world: World, what: str, call: Call, suffix: str, where: str, status: int
) -> None:
    location = dict(_away_locations(world))[where]
    world.reset(status, location)
    base = _base(world.home)
    with pytest.raises(ModelRequestRejected) as caught:
        call(base)
    message = str(caught.value)
    assert "redirected the request to another origin" in message
    assert shown_url(f"{base}{suffix}") in message
    assert SECRET not in message
    assert str(world.port(world.away)) not in message
    assert world.away.received == []
    assert len(world.home.received) == 1  # nothing followed, not even to "localhost"


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
@pytest.mark.parametrize(("what", "call", "suffix"), CALLS, ids=[c[0] for c in CALLS])
def test_a_redirect_within_the_origin_is_followed(
    world: World, what: str, call: Call, suffix: str, status: int
) -> None:
    port = world.port(world.home)
    for location in ("/moved/here", f"http://127.0.0.1:{port}/moved/there"):
        world.reset(status, location)
        assert call(_base(world.home))
        assert [r.path for r in world.home.received][1:] == [location.rsplit(str(port), 1)[-1]]
        assert world.away.received == []


HOSTS = ["127.0.0.1", "localhost", "127.0.0.2", "[::1]", "LOCALHOST", "127.1"]


@st.composite
def _locations(draw: st.DrawFn, world: World) -> tuple[str, bool]:
    """A ``Location`` from parts that may or may not make another origin, and whether it is
    ``home``'s own (scheme ``http``, host ``127.0.0.1``, ``home``'s port)."""
    home, away = world.port(world.home), world.port(world.away)
    scheme = draw(st.sampled_from(["http", "https", "HTTP", ""]))
    host = draw(st.sampled_from(HOSTS))
    port = draw(st.sampled_from([home, away, 80, None]))
    userinfo = draw(st.sampled_from(["", f"u:{SECRET}@"]))
    path = draw(st.sampled_from(["/moved", "/moved/x?token=" + SECRET, "/moved/%2e%2e/y"]))
    at = f"{userinfo}{host}" + (f":{port}" if port else "")
    location = f"{scheme}://{at}{path}" if scheme else f"//{at}{path}"
    own = (scheme.lower() in ("http", "")) and host == "127.0.0.1" and port == home
    return location, own


@HTTP_FUZZ
@given(data=st.data())
def test_any_location_is_followed_only_within_the_origin(world: World, data: st.DataObject) -> None:
    location, own = data.draw(_locations(world))
    world.reset(307, location)
    _what, call, _suffix = data.draw(st.sampled_from(CALLS))
    refused: ModelRequestRejected | None = None
    try:
        call(_base(world.home))
    except ModelRequestRejected as exc:
        refused = exc
    if own:
        assert refused is None, (location, refused)
        assert len(world.home.received) == 2
    else:
        assert refused is not None, location
        assert "another origin" in str(refused)
        assert SECRET not in str(refused)
        assert len(world.home.received) == 1
    assert world.away.received == []


@pytest.mark.parametrize(
    "setting", ["TRIAGE_OPENAI_BASE_URL", "OLLAMA_HOST"], ids=["openai", "ollama"]
)
def test_run_and_doctor_report_it_without_the_target(world: World, setting: str) -> None:
    world.reset(307, dict(_away_locations(world))["credentials and secrets"])
    base = _base(world.home)
    url = f"{base}/v1" if setting == "TRIAGE_OPENAI_BASE_URL" else base
    env = {setting: url, "TRIAGE_VALIDATOR_MODEL": "m", "TRIAGE_MODEL_TIMEOUT": "10"}
    run = CliRunner().invoke(
        main,
        ["run", "--dry-run", "--event-name", "issues",
         "--event-path", str(ROOT / "examples" / "issues.opened.json")],
        env=env,
    )  # fmt: skip
    doctor = CliRunner().invoke(main, ["doctor"], env=env)
    assert run.exit_code == 0, run.output
    assert "label:    validator-error" in run.stdout
    assert f"ERROR ({ModelRequestRejected.kind})" in run.stdout
    fail = next(line for line in doctor.stdout.splitlines() if line.startswith("FAIL model"))
    assert "redirected the request to another origin" in fail
    assert shown_url(url) in fail
    for output in (run.output, doctor.output):
        assert SECRET not in output
        assert str(world.port(world.away)) not in output
    assert world.away.received == []
