"""The real OpenAI-compatible model server of the model-server tests.

``.ci/run`` starts llama-cpp-python's server on loopback (``scripts/test_model_server.sh``:
Gemma 3 270M served as :data:`MODEL`) and sets its base URL in ``TRIAGE_TEST_MODEL_SERVER_URL``
and ``TRIAGE_REQUIRE_MODEL_SERVER=1``; locally, without a URL, the tests that need it are
skipped with the reason below, unless ``TRIAGE_REQUIRE_MODEL_SERVER=1`` makes that a failure.
:func:`private_server` starts a second one that a test may stop.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import ROOT

__all__ = ["MODEL", "SCRIPT", "PrivateServer", "private_server", "server_url"]

URL_VAR = "TRIAGE_TEST_MODEL_SERVER_URL"
REQUIRE_VAR = "TRIAGE_REQUIRE_MODEL_SERVER"
MODEL = "gemma3-270m"
"""The model id the test server serves (scripts/test_model_server.sh's alias)."""
SCRIPT = ROOT / "scripts" / "test_model_server.sh"
SKIP_REASON = (
    f"no model server: set {URL_VAR}=http://127.0.0.1:PORT/v1 (start one with "
    "scripts/test_model_server.sh start DIR, see the README's Development section)"
)


def server_url() -> str:
    """The test server's base URL; skips the test when unset (fails under
    ``TRIAGE_REQUIRE_MODEL_SERVER=1``)."""
    url = os.environ.get(URL_VAR, "").strip()
    if not url:
        if os.environ.get(REQUIRE_VAR) == "1":
            pytest.fail(f"{REQUIRE_VAR}=1 but {SKIP_REASON}")
        pytest.skip(SKIP_REASON)
    return url


@dataclass(frozen=True)
class PrivateServer:
    """A server of one test's own: its base URL and its process id (to stop it hard)."""

    url: str
    pid: int


@contextmanager
def private_server(folder: Path) -> Iterator[PrivateServer]:
    """Start a second test server (its files in ``folder``) for a test that stops it; it is
    stopped on exit whatever the test did. Needs the first one (skips as :func:`server_url`)."""
    server_url()
    started = subprocess.run(
        [str(SCRIPT), "start", str(folder)], capture_output=True, text=True, check=False
    )
    assert started.returncode == 0, started.stderr
    try:
        yield PrivateServer(started.stdout.strip(), int((folder / "server.pid").read_text()))
    finally:
        subprocess.run([str(SCRIPT), "stop", str(folder)], check=False)
